// The git commit a build comes from, for `intake-relay --version`. Run by `npm run build` (and so by
// `prepack`): writes dist/build-info.json, which an installed npm package reads as it has no .git.
// scripts/package.ts injects the same commit into the single executable.
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = new URL('..', import.meta.url);

/**
 * The checkout's commit (12 hex digits); outside git, what INTAKE_RELAY_COMMIT says (the container
 * build passes its REVISION argument: a build context has no .git), else "unknown".
 */
export function gitCommit(): string {
  const given = process.env.INTAKE_RELAY_COMMIT?.trim();
  if (given && given !== 'unknown') return given.slice(0, 12);
  // Only this checkout's own .git: sources unpacked inside another repository are not that commit.
  if (!existsSync(new URL('.git', ROOT))) return 'unknown';
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || 'unknown';
  } catch {
    return 'unknown';
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(new URL('dist/build-info.json', ROOT), `${JSON.stringify({ commit: gitCommit() })}\n`);
}
