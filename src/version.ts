// The package version, the commit it was built from, and the Node.js floor. main.ts imports this
// module first, so an older Node exits here with one line before a dependency's import crashes on it.
// The single executable's bundle replaces VERSION and the commit with constants (scripts/package.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/**
 * The oldest Node.js of each supported line on which the whole test suite passes (22.19.0 is also
 * undici's own floor); package.json `engines` and bin/intake-relay.js say the same.
 */
export const NODE_FLOOR = { 22: '22.19.0', 24: '24.0.0' } as const;

/** One line saying which Node.js is needed, or undefined when `version` (e.g. "22.19.0") is enough. */
export function nodeFloorProblem(version: string): string | undefined {
  const [major = 0, minor = 0, patch = 0] = version.split('.').map(Number);
  const floor = major === 22 ? NODE_FLOOR[22] : major >= 24 ? NODE_FLOOR[24] : undefined;
  if (floor) {
    const [fMajor = 0, fMinor = 0, fPatch = 0] = floor.split('.').map(Number);
    if (major > fMajor || minor > fMinor || (minor === fMinor && patch >= fPatch)) return undefined;
  }
  return `intake-relay needs Node.js ${NODE_FLOOR[22]} or later 22.x, or ${NODE_FLOOR[24]} or later (this is ${version}): install Node.js 24 LTS from https://nodejs.org/en/download or your distribution, or use the intake-relay binary, which needs no Node.js.`;
}

const problem = nodeFloorProblem(process.versions.node);
if (problem) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}

/** Set by the single executable's bundler (scripts/package.ts), which has no package.json or .git to read. */
declare const INTAKE_RELAY_BUILD: { readonly version: string; readonly commit: string } | undefined;
const BUNDLED = typeof INTAKE_RELAY_BUILD === 'undefined' ? undefined : INTAKE_RELAY_BUILD;

export const VERSION = BUNDLED?.version ?? (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * The git commit: the bundler's, else dist/build-info.json (written by `npm run build`), else git in
 * a checkout, else "unknown". Read on demand: only --version needs it.
 */
export function buildCommit(): string {
  if (BUNDLED) return BUNDLED.commit;
  try {
    return (JSON.parse(readFileSync(new URL('build-info.json', import.meta.url), 'utf8')) as { commit: string }).commit;
  } catch {
    // not a build: src/ of a checkout, or a dist/ built without it
  }
  // Only the package's own checkout: an npm install inside another repository must not report that one's commit.
  const root = new URL('..', import.meta.url);
  if (!existsSync(new URL('.git', root))) return 'unknown';
  try {
    return execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || 'unknown';
  } catch {
    return 'unknown';
  }
}
