// The release: .github/workflows/release.yml is a valid workflow (action-validator, the schemas
// GitHub uses) and calls `npm run release` with options scripts/release.ts takes; `npm run release`
// (here for this machine's architecture, without the image, which container.test.ts builds) writes
// the executable, the Debian package, the CycloneDX SBOM and SHA256SUMS that match them.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { tempDir } from '../helpers/cleanup.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const WORKFLOW = join(ROOT, '.github', 'workflows', 'release.yml');
const validate = (file: string) => spawnSync(join(ROOT, 'node_modules', '.bin', 'action-validator'), [file], { encoding: 'utf8' });

describe('the release', () => {
  it('its workflow validates, and a broken one does not', () => {
    const r = validate(WORKFLOW);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const broken = join(tempDir('workflow-'), 'release.yml');
    writeFileSync(broken, readFileSync(WORKFLOW, 'utf8').replace('runs-on: ${{ matrix.runner }}', 'runs_on: ${{ matrix.runner }}'));
    expect(validate(broken).status).not.toBe(0);
  });

  it('the workflow builds each architecture on its own runner with options the release script takes, and publishes the image for both', () => {
    const wf = parse(readFileSync(WORKFLOW, 'utf8')) as { jobs: Record<string, { strategy?: { matrix: { include: { arch: string }[] } }; steps: { run?: string; with?: Record<string, string> }[] }> };
    expect(wf.jobs.build!.strategy!.matrix.include.map((m) => m.arch).sort()).toEqual(['arm64', 'x64']);
    const release = wf.jobs.build!.steps.find((s) => s.run?.startsWith('npm run release'))!.run!;
    const script = readFileSync(join(ROOT, 'scripts', 'release.ts'), 'utf8');
    const options = script.slice(script.indexOf('parseArgs({'), script.indexOf('});', script.indexOf('parseArgs({')));
    for (const flag of release.match(/--[a-z-]+/g) ?? []) expect(options, flag).toMatch(new RegExp(`['"]?${flag.slice(2)}['"]?: \\{ type`));
    expect(wf.jobs.image!.steps.find((s) => s.with?.platforms)?.with?.platforms).toBe('linux/amd64,linux/arm64');
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.release).toBe('node scripts/release.ts');
  });

  it('npm run release writes the executable, the .deb, the SBOM and checksums that match them', () => {
    const out = tempDir('release-');
    const arch = process.arch;
    const r = spawnSync('npm', ['run', '--silent', 'release', '--', '--arch', arch, '--no-image', '--out', out], { cwd: ROOT, encoding: 'utf8', timeout: 600_000 });
    expect(r.status, (r.stdout + r.stderr).slice(-3000)).toBe(0);
    const files = readdirSync(out).sort();
    const deb = { x64: 'amd64', arm64: 'arm64' }[arch as 'x64' | 'arm64'];
    expect(files).toEqual(expect.arrayContaining([`intake-relay-linux-${arch}`, `intake-relay_0.1.0_${deb}.deb`, 'intake-relay.cdx.json', 'intake-relay-THIRD-PARTY-LICENSES.txt', 'SHA256SUMS']));
    const sbom = JSON.parse(readFileSync(join(out, 'intake-relay.cdx.json'), 'utf8')) as { bomFormat: string; components: { name: string }[] };
    expect(sbom.bomFormat).toBe('CycloneDX');
    const names = sbom.components.map((c) => c.name);
    for (const dep of ['pino', 'prom-client', 'undici', 'yaml', 'zod']) expect(names).toContain(dep);
    // Production dependencies only: the test tools are not in what the executable contains.
    expect(names).not.toContain('vitest');
    const sums = readFileSync(join(out, 'SHA256SUMS'), 'utf8').trim().split('\n').map((l) => l.split(/\s+/) as [string, string]);
    expect(sums.map(([, f]) => f).sort()).toEqual(files.filter((f) => f !== 'SHA256SUMS'));
    for (const [sum, f] of sums) expect(createHash('sha256').update(readFileSync(join(out, f))).digest('hex'), f).toBe(sum);
  }, 600_000);
});
