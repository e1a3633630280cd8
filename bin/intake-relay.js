#!/usr/bin/env -S node --max-semi-space-size=4
// The `intake-relay` command. Runs the compiled dist/main.js (`npm run build`); in a source checkout
// without a build it falls back to src/main.ts through Node's type stripping.
// --max-semi-space-size=4: a 4 MiB young generation measured faster and ~40% smaller in RSS than
// V8's default under load (README, "Performance").
import { existsSync } from 'node:fs';

const dist = new URL('../dist/main.js', import.meta.url);
await import(existsSync(dist) ? dist.href : new URL('../src/main.ts', import.meta.url).href);
