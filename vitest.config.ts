import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // Integration tests run real peers on loopback with their own ports; files may run in parallel.
    pool: 'forks',
    // Everything under one temporary directory, removed at the end of the run.
    globalSetup: ['test/global-setup.ts'],
    // vi.waitFor gives a condition 10 s by default (test/setup.ts).
    setupFiles: ['test/setup.ts'],
    reporters: ['default'],
  },
});
