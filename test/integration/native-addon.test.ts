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
import { nativeAddon, readOnlyMappings, releaseFreeMemory } from '../../src/core/native-addon.ts';

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
    const script = `
      const { readFileSync, realpathSync } = require('node:fs');
      const exe = realpathSync('/proc/self/exe');
      const exeRss = () => {
        let ours = false, kb = 0;
        for (const line of readFileSync('/proc/self/smaps', 'latin1').split('\\n')) {
          const head = /^[0-9a-f]+-[0-9a-f]+ \\S+ \\S+ \\S+ \\d+\\s*(.*)$/.exec(line);
          if (head) ours = head[1] === exe;
          else if (ours && line.startsWith('Rss:')) kb += Number(line.split(/\\s+/)[1]);
        }
        return kb / 1024;
      };
      import(${JSON.stringify(new URL('../../src/core/native-addon.ts', import.meta.url).href)}).then(({ releaseExecutablePages }) => {
        const before = exeRss();
        const released = releaseExecutablePages() / 1048576;
        const after = exeRss();
        const crypto = require('node:crypto'), zlib = require('node:zlib');
        const digest = crypto.createHash('sha256').update('x'.repeat(1e6)).digest('hex');
        const round = zlib.gunzipSync(zlib.gzipSync(Buffer.from(JSON.stringify({ a: [1, 2, 3] })))).toString();
        const matched = /(\\d+)-(\\d+)/.exec('10-20')[2];
        console.log(JSON.stringify({ before, released, after, again: exeRss(), digest, round, matched }));
      });
    `;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { before: number; released: number; after: number; again: number; digest: string; round: string; matched: string };
    // Node's start maps tens of MiB of its executable; most of it is let go.
    expect(out.before).toBeGreaterThan(15);
    expect(out.released).toBeGreaterThan(out.before / 2);
    expect(out.after).toBeLessThan(out.before / 2);
    // Used again: mapped again, and it works.
    expect(out.again).toBeGreaterThan(out.after);
    expect(out.digest).toBe(createHash('sha256').update('x'.repeat(1e6)).digest('hex'));
    expect(out.round).toBe('{"a":[1,2,3]}');
    expect(out.matched).toBe('20');
  });

  it('refuses what is not a page-aligned range, and a call without one', () => {
    const release = nativeAddon().exports?.releasePages as (start: unknown, length?: unknown) => boolean;
    expect(release(4097, 4096)).toBe(false);
    expect(release(4096.5, 4096)).toBe(false);
    expect(release(4096, 4095)).toBe(false);
    expect(release(-4096, 4096)).toBe(false);
    expect(release(4096, 0)).toBe(false);
    expect(() => release('x')).toThrow(TypeError);
  });

  it('refuses any range outside the program\'s own image (memory there may be anything by now)', () => {
    // In a process of its own: its C heap and its stack, page-aligned ranges the process maps.
    // Let go, they would come back as zeros (and the process would most likely crash).
    const script = `
      const m = { exports: {} };
      process.dlopen(m, ${JSON.stringify(ADDON)});
      const ranges = require('node:fs').readFileSync('/proc/self/maps', 'latin1').split('\\n')
        .filter((l) => / \\[(heap|stack)\\]$/.test(l))
        .map((l) => l.split(' ')[0].split('-').map((x) => parseInt(x, 16)));
      const kept = Buffer.from('still here');
      const refused = ranges.map(([a, b]) => m.exports.releasePages(a, b - a));
      console.log(JSON.stringify({ ranges: ranges.length, refused, kept: kept.toString() }));
    `;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { ranges: number; refused: boolean[]; kept: string };
    expect(out.ranges).toBe(2);
    expect(out.refused).toEqual([false, false]);
    expect(out.kept).toBe('still here');
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
  it('maps a fraction of them at rest after its start, and forwards as before', async () => {
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
    const { proc, output } = startRelayProcess(file);
    await vi.waitFor(() => expect(output()).toContain('intake-relay started'), { timeout: 20_000 });
    // A Node process maps 35-45 MiB of its executable by the end of its start (a bare \`node -e\`
    // after one import: 41); once they are let go, what runs at rest maps back a few.
    await vi.waitFor(() => expect(executableRss(proc.pid as number)).toBeLessThan(25), { timeout: 10_000 });
    await sendTcp(port, '<14>Nov 27 10:00:00 host app: after the pages were let go\n');
    await vi.waitFor(() => expect(intake.received.map((m) => m.message)).toContain('after the pages were let go'), { timeout: 10_000 });
  }, 40_000);
});

describe('readOnlyMappings', () => {
  const EXE = '/opt/intake-relay/intake-relay';
  const vma = (range: string, perms: string, path: string, rss: number, anonymous: number, swap = 0): string =>
    `${range} ${perms} 00000000 fe:01 1234                       ${path}\nSize:               8 kB\nRss:              ${rss} kB\nPss:              ${rss} kB\nAnonymous:        ${anonymous} kB\nSwap:             ${swap} kB\nVmFlags: rd mr mw me\n`;

  it("takes the file's read-only mappings with pages and no private copy, nothing else", () => {
    const smaps = [
      vma('00400000-00600000', 'r--p', EXE, 2048, 0), // read-only data: taken
      vma('00600000-00a00000', 'r-xp', EXE, 1024, 0), // code: taken
      vma('00a00000-00a02000', 'r--p', EXE, 8, 8), // relocated, then made read-only: a private copy, kept
      vma('00a06000-00a08000', 'r--p', EXE, 4, 0, 4), // its private copy swapped out: kept
      vma('00a02000-00a04000', 'rw-p', EXE, 8, 4), // writable data: kept
      vma('00a04000-00a06000', 'r--p', EXE, 0, 0), // nothing resident
      vma('7f0000000000-7f0000200000', 'r-xp', '/usr/lib/x86_64-linux-gnu/libc.so.6', 512, 0), // another file
      vma('7f0000200000-7f0000400000', 'r-xp', `${EXE} (deleted)`, 512, 0), // replaced on disk
      vma('7f0000400000-7f0000600000', 'r--s', EXE, 512, 0), // shared
    ].join('');
    expect(readOnlyMappings(smaps, EXE)).toEqual([
      { start: 0x400000, end: 0x600000, rss: 2048 * 1024 },
      { start: 0x600000, end: 0xa00000, rss: 1024 * 1024 },
    ]);
  });

  it('takes nothing where a mapping does not say how much of it is private, resident or swapped out', () => {
    const smaps = `00400000-00600000 r--p 00000000 fe:01 1234 ${EXE}\nRss:              2048 kB\nSwap:                0 kB\n`;
    expect(readOnlyMappings(smaps, EXE)).toEqual([]);
    const noSwap = `00400000-00600000 r--p 00000000 fe:01 1234 ${EXE}\nRss:              2048 kB\nAnonymous:           0 kB\n`;
    expect(readOnlyMappings(noSwap, EXE)).toEqual([]);
  });
});
