#!/usr/bin/env node
// Runs src/main.ts by Node's type stripping (on by default from Node 22.18 and 23.6; earlier
// 22.x need the flag, so re-run with it).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
if (process.features.typescript) {
  await import(main);
} else {
  const child = spawn(process.execPath, ['--experimental-strip-types', '--no-warnings', main, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
