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
      const { readFileSync, realpathSync } = require('node:fs');
      const exe = realpathSync('/proc/self/exe');
      const smaps = () => readFileSync('/proc/self/smaps', 'latin1');
      const mappings = (text) => {
        const out = [];
        for (const line of text.split('\\n')) {
          const head = /^([0-9a-f]+)-[0-9a-f]+ (\\S+) \\S+ \\S+ \\d+\\s*(.*)$/.exec(line);
          if (head) out.push({ start: parseInt(head[1], 16), perms: head[2], ours: head[3] === exe, rss: 0, anonymous: 0 });
          else if (out.length > 0 && /^(Rss|Anonymous):/.test(line)) out[out.length - 1][line.startsWith('Rss') ? 'rss' : 'anonymous'] = Number(line.split(/\\s+/)[1]);
        }
        return out.filter((m) => m.ours);
      };
      const mib = (ms) => ms.reduce((t, m) => t + m.rss, 0) / 1024;
      const m = { exports: {} };
      process.dlopen(m, ${JSON.stringify(ADDON)});
      const before = mappings(smaps());
      const released = m.exports.releasePages() / 1048576;
      // Read at once, parsed later: parsing runs code, which maps pages again.
      const after = mappings(smaps());
      const crypto = require('node:crypto'), zlib = require('node:zlib');
      const digest = crypto.createHash('sha256').update('x'.repeat(1e6)).digest('hex');
      const round = zlib.gunzipSync(zlib.gzipSync(Buffer.from(JSON.stringify({ a: [1, 2, 3] })))).toString();
      const matched = /(\\d+)-(\\d+)/.exec('10-20')[2];
      const image = before[0].start;
      const kept = (pick) => before.filter(pick).map((b) => [b.rss, after.find((a) => a.start === b.start)?.rss]);
      console.log(JSON.stringify({
        before: mib(before), released, after: mib(after), again: mib(mappings(smaps())), digest, round, matched,
        private: kept((b) => b.anonymous > 0 && !b.perms.includes('w')),
        outside: kept((b) => b.start - image > 2 ** 32 && b.perms === 'r-xp'),
      }));
    `;
    // V8 maps its built-in code a second time only with a heap limit of 2 GiB or more (a quarter
    // of the machine's memory by default): set, so that the copy is there on any machine.
    const r = spawnSync(process.execPath, ['--max-old-space-size=4096', '-e', script], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { before: number; released: number; after: number; again: number; digest: string; round: string; matched: string; private: [number, number][]; outside: [number, number][] };
    // Node's start maps tens of MiB of its executable; most of it is let go.
    expect(out.before).toBeGreaterThan(15);
    expect(out.released).toBeGreaterThan(out.before / 2);
    expect(out.after).toBeLessThan(out.before / 2);
    // Used again: mapped again, and it works.
    expect(out.again).toBeGreaterThan(out.after);
    expect(out.digest).toBe(createHash('sha256').update('x'.repeat(1e6)).digest('hex'));
    expect(out.round).toBe('{"a":[1,2,3]}');
    expect(out.matched).toBe('20');
    // The relocated, read-only data (Node's binary has one such mapping) kept every page.
    expect(out.private.length).toBeGreaterThan(0);
    for (const [was, is] of out.private) expect(is).toBe(was);
    // V8's copy of its built-in code, mapped from the executable far from its image: not touched.
    expect(out.outside.length).toBeGreaterThan(0);
    for (const [was, is] of out.outside) expect(is).toBeGreaterThanOrEqual(was);
  });
});

/** MiB of the executable's pages that process `pid` maps (/proc/PID/smaps). */
function executableRss(pid: number): number {
  const exe = readlinkSync(`/proc/${pid}/exe`);
  let ours = false;
  let kb = 0;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'latin1').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) ours = head[1] === exe;
    else if (ours && line.startsWith('Rss:')) kb += Number(line.split(/\s+/)[1]);
  }
  return kb / 1024;
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
