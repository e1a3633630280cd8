// The native addon's memory calls (native/udp-recvmmsg.c, src/core/native-addon.ts): trimMemory
// gives back what a burst freed inside the C library's heaps, and releasePages lets go of the
// executable's mapped pages, as the relay asks after its start and once a lull begins. Measured in
// a process of their own.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { tempDir, track } from '../helpers/cleanup.ts';
import { freePort, sendTcp, startTestIntake } from '../helpers/peers.ts';
import { startRelayProcess } from '../helpers/process.ts';
import { TEST_KEY, TLS } from '../helpers/relay.ts';
import { nativeAddon, releaseFreeMemory } from '../../src/core/native-addon.ts';

const ADDON = fileURLToPath(new URL('../../native/build/udp-recvmmsg.node', import.meta.url));

describe('native addon: trimMemory', () => {
  it('is there (glibc), and gives back memory freed below the top of the heap', () => {
    expect(nativeAddon().reason).toBe('loaded');
    expect(releaseFreeMemory()).toBe(true);
    // 2,000 buffers of 64 KiB (malloc'd from the heap, under the mmap threshold), nine in ten of
    // them freed at once (detached) while every tenth stays: holes free() never gives back.
    const script = `
      const m = { exports: {} };
      process.dlopen(m, ${JSON.stringify(ADDON)});
      const rss = () => Number(/VmRSS:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'latin1'))[1]) / 1024;
      const bufs = Array.from({ length: 2000 }, () => Buffer.allocUnsafeSlow(65536).fill(7));
      const kept = bufs.filter((_, i) => i % 10 === 9);
      bufs.forEach((b, i) => { if (i % 10 !== 9) b.buffer.transfer(0); });
      const before = rss();
      const trimmed = m.exports.trimMemory();
      console.log(JSON.stringify({ before, after: rss(), trimmed, kept: kept.every((b) => b[65535] === 7) }));
    `;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const { before, after, trimmed, kept } = JSON.parse(r.stdout) as { before: number; after: number; trimmed: boolean; kept: boolean };
    expect(trimmed).toBe(true);
    expect(kept).toBe(true);
    // 1,800 × 64 KiB = 112.5 MiB freed; at least 80 of it given back.
    expect(before - after).toBeGreaterThan(80);
  });
});

describe('native addon: releasePages', () => {
  it('lets go of the executable pages the process mapped; those used again come back, and the process runs on', () => {
    // In a process of its own: the executable's resident pages, then after the release, then after
    // running code again (hashing, compression, JSON, regular expressions: much of the binary).
    // Kept: the mappings holding private copies (relocated data: its resident anonymous pages stay),
    // and V8's own copy of its built-in code (the executable's file, mapped outside its image).
    const script = `
      const { readFileSync, readlinkSync } = require('node:fs');
      const smaps = () => readFileSync('/proc/self/smaps', 'latin1');
      const m = { exports: {} };
      process.dlopen(m, ${JSON.stringify(ADDON)});
      const before = smaps();
      const released = m.exports.releasePages() / 1048576;
      const after = smaps();
      const crypto = require('node:crypto'), zlib = require('node:zlib');
      const digest = crypto.createHash('sha256').update('x'.repeat(1e6)).digest('hex');
      const round = zlib.gunzipSync(zlib.gzipSync(Buffer.from(JSON.stringify({ a: [1, 2, 3] })))).toString();
      const matched = /(\\d+)-(\\d+)/.exec('10-20')[2];
      console.log(JSON.stringify({ exe: readlinkSync('/proc/self/exe'), before, released, after, again: smaps(), digest, round, matched }));
    `;
    // V8 maps its built-in code a second time only with a heap limit of 2 GiB or more (a quarter
    // of the machine's memory by default): set, so that the copy is there on any machine.
    const r = spawnSync(process.execPath, ['--max-old-space-size=4096', '-e', script], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' }, maxBuffer: 16 * 1024 * 1024 });
    expect(r.stderr).toBe('');
    // The child reads its mappings (the reads run little code, which maps few pages again); they are parsed here.
    const out = JSON.parse(r.stdout) as { exe: string; before: string; released: number; after: string; again: string; digest: string; round: string; matched: string };
    const before = executableMappings(out.before, out.exe);
    const after = executableMappings(out.after, out.exe);
    const again = executableMappings(out.again, out.exe);
    // Node's start maps tens of MiB of its executable; most of it is let go.
    expect(mib(before)).toBeGreaterThan(15);
    expect(out.released).toBeGreaterThan(mib(before) / 2);
    expect(mib(after)).toBeLessThan(mib(before) / 2);
    // Used again: mapped again, and it works.
    expect(mib(again)).toBeGreaterThan(mib(after));
    expect(out.digest).toBe(createHash('sha256').update('x'.repeat(1e6)).digest('hex'));
    expect(out.round).toBe('{"a":[1,2,3]}');
    expect(out.matched).toBe('20');
    const kept = (pick: (m: Mapping) => boolean): [number, number | undefined][] => before.filter(pick).map((b) => [b.rss, after.find((a) => a.start === b.start)?.rss]);
    // The relocated, read-only data (Node's binary has one such mapping) kept every page.
    const relocated = kept((b) => b.anonymous > 0 && !b.perms.includes('w'));
    expect(relocated.length).toBeGreaterThan(0);
    for (const [was, is] of relocated) expect(is).toBe(was);
    // V8's copy of its built-in code, mapped from the executable far from its image: not touched.
    const image = (before[0] as Mapping).start;
    const outside = kept((b) => b.start - image > 2 ** 32 && b.perms === 'r-xp');
    expect(outside.length).toBeGreaterThan(0);
    for (const [was, is] of outside) expect(is).toBeGreaterThanOrEqual(was);
  });
});

interface Mapping {
  readonly start: number;
  readonly perms: string;
  /** KiB resident, and of it private (anonymous). */
  rss: number;
  anonymous: number;
}

/** The mappings of file `exe` in /proc/PID/smaps text. */
function executableMappings(smaps: string, exe: string): Mapping[] {
  const out: (Mapping & { ours: boolean })[] = [];
  for (const line of smaps.split('\n')) {
    const head = /^([0-9a-f]+)-[0-9a-f]+ (\S+) \S+ \S+ \d+\s*(.*)$/.exec(line);
    const last = out[out.length - 1];
    if (head) out.push({ start: parseInt(head[1] as string, 16), perms: head[2] as string, ours: head[3] === exe, rss: 0, anonymous: 0 });
    else if (last && line.startsWith('Rss:')) last.rss = Number(line.split(/\s+/)[1]);
    else if (last && line.startsWith('Anonymous:')) last.anonymous = Number(line.split(/\s+/)[1]);
  }
  return out.filter((m) => m.ours);
}

/** MiB resident of `mappings`. */
function mib(mappings: readonly Mapping[]): number {
  return mappings.reduce((t, m) => t + m.rss, 0) / 1024;
}

/** MiB of the executable's pages that process `pid` maps. */
function executableRss(pid: number): number {
  return mib(executableMappings(readFileSync(`/proc/${pid}/smaps`, 'latin1'), readlinkSync(`/proc/${pid}/exe`)));
}

describe('the daemon lets go of the executable pages its start used', () => {
  async function started(env: Record<string, string>): Promise<{ pid: number; port: number; intake: Awaited<ReturnType<typeof startTestIntake>> }> {
    const intake = track(await startTestIntake());
    const port = await freePort();
    const file = join(tempDir('release-pages-'), 'relay.yaml');
    writeFileSync(file, `intakes:
  - name: pages
    intake_key: "${TEST_KEY}"
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, ca_file: ${TLS}ca.crt }
    inputs: [{ type: tcp, address: 127.0.0.1, port: ${port} }]
metrics: { enabled: false }
`);
    const { proc, output } = startRelayProcess(file, { env });
    await vi.waitFor(() => expect(output()).toContain('intake-relay started'), { timeout: 20_000 });
    return { pid: proc.pid as number, port, intake };
  }

  it('maps a fraction of them at rest after its start, and forwards as before', async () => {
    const { pid, port, intake } = await started({ INTAKE_RELAY_RELEASE_PAGES: '1' });
    // A Node process maps 35-45 MiB of its executable by the end of its start (a bare \`node -e\`
    // after one import: 41); once they are let go, what runs at rest maps back a few.
    await vi.waitFor(() => expect(executableRss(pid)).toBeLessThan(25), { timeout: 10_000 });
    await sendTcp(port, '<14>Nov 27 10:00:00 host app: after the pages were let go\n');
    await vi.waitFor(() => expect(intake.received.map((m) => m.message)).toContain('after the pages were let go'), { timeout: 10_000 });
  }, 40_000);

  it('keeps them with INTAKE_RELAY_RELEASE_PAGES=0', async () => {
    const { pid, port, intake } = await started({ INTAKE_RELAY_RELEASE_PAGES: '0' });
    await sendTcp(port, '<14>Nov 27 10:00:00 host app: pages kept\n');
    await vi.waitFor(() => expect(intake.received.map((m) => m.message)).toContain('pages kept'), { timeout: 10_000 });
    expect(executableRss(pid)).toBeGreaterThan(30);
  }, 40_000);
});
