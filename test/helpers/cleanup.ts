// One teardown for every test: what a test starts (an in-process relay, an intake, a peer, a server,
// a child process, a directory) is registered as it starts and stopped when the test ends, passed
// or failed, newest first (vitest runs onTestFinished callbacks as a stack, each even if one before
// it failed): a relay stops, and drains, before the intake that was started ahead of it.
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

export interface Stoppable {
  stop(): unknown;
}

/**
 * Stops `thing` when the current test ends; returns it. Its stop() must be safe to call twice: a
 * test that stops it itself (to restart it, or to read its report) leaves it registered.
 */
export function track<T extends Stoppable>(thing: T): T {
  onTestFinished(async () => {
    await thing.stop();
  });
  return thing;
}

/** Closes `server` when the current test ends, and waits until it has. */
export function trackServer<T extends Server>(server: T): T {
  track({ stop: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  return server;
}

/** A new directory under the system's temporary directory, removed when the current test ends. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  track({
    stop: () => {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // A test that failed while part of it was unwritable (on purpose) leaves it to the OS.
      }
    },
  });
  return dir;
}
