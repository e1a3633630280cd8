// The Node.js floor: one answer in src/version.ts, bin/intake-relay.js and package.json `engines`, and
// an older Node gets one readable line and exit 1 from the launcher instead of a stack trace.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE_FLOOR, nodeFloorProblem } from '../../src/version.ts';

const ROOT = new URL('../../', import.meta.url);
const BIN = new URL('bin/intake-relay.js', ROOT).pathname;

/** A Node.js on this machine older than the floor (the distribution's own), if there is one. */
function oldNode(): { path: string; version: string } | undefined {
  for (const path of ['/usr/bin/node', '/usr/local/bin/node', '/usr/bin/nodejs']) {
    if (!existsSync(path)) continue;
    const version = spawnSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    if (version && nodeFloorProblem(version)) return { path, version };
  }
  return undefined;
}

describe('Node.js floor', () => {
  it('accepts the floor of each line and later, refuses what is older, 23 and below 22', () => {
    for (const v of ['22.19.0', '22.19.1', '22.20.0', '22.22.3', '24.0.0', '24.21.0', '25.2.1', '26.0.0']) expect(nodeFloorProblem(v), v).toBeUndefined();
    for (const v of ['22.18.9', '22.12.0', '22.0.0', '23.11.0', '20.20.2', '18.19.0', '21.7.3']) {
      expect(nodeFloorProblem(v), v).toMatch(new RegExp(`^intake-relay needs Node\\.js 22\\.19\\.0 or later 22\\.x, or 24\\.0\\.0 or later \\(this is ${v.replaceAll('.', '\\.')}\\): install [^\\n]+$`));
    }
  });

  it('is the same in package.json engines and in the launcher', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`^${NODE_FLOOR[22]} || >=${NODE_FLOOR[24]}`);
    const launcher = /const FLOOR = \{ 22: \[(\d+), (\d+), (\d+)\], 24: \[(\d+), (\d+), (\d+)\] \};/.exec(readFileSync(BIN, 'utf8'));
    expect(launcher?.slice(1, 4).join('.')).toBe(NODE_FLOOR[22]);
    expect(launcher?.slice(4, 7).join('.')).toBe(NODE_FLOOR[24]);
  });

  const old = oldNode();
  it.skipIf(!old)(`the launcher on an older Node (${old?.path} ${old?.version}) prints one line and exits 1`, () => {
    const r = spawnSync(old!.path, [BIN, '--version'], { encoding: 'utf8' });
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(`${nodeFloorProblem(old!.version)}\n`);
    expect(r.status).toBe(1);
  });
});
