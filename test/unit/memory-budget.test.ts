// memory_bytes: the defaults of the bounds that hold events in memory derive from it; a bound set by
// hand wins; the shares shrink with more intakes and with worker threads.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { MiB } from '../../src/core/config-values.ts';
import { defaultMemoryBytes, memoryShares, udpBacklogOf } from '../../src/core/memory-budget.ts';
import { emulatorOutput } from '../../src/outputs/syslog/definition.ts';

const KEY = 'abcdef0123456789abcdef0123456789';
const intake = (name: string, more = ''): string => `  - name: ${name}\n    intake_key: ${KEY}\n    inputs: [{ type: tcp, port: 0 }]\n${more}`;

describe('memory_bytes', () => {
  it('at the default (128 MiB), one intake: a 24 MiB memory queue and an 8 MiB resend window (its most)', () => {
    const c = parseConfig(`intakes:\n${intake('a')}`, 'x.yaml', {}, 0);
    expect(c.memory_bytes).toBe(128 * MiB);
    expect(c.intakes[0]!.queue).toMatchObject({ type: 'memory', max_bytes: 24 * MiB });
    expect(c.intakes[0]!.output).toMatchObject({ type: 'syslog', resend_window_bytes: 8 * MiB, windowBytes: 8 * MiB });
    // A larger budget does not make a larger derived window; auto or a number does.
    const big = parseConfig(`memory_bytes: ${1024 * MiB}\nintakes:\n${intake('a')}`, 'x.yaml', {}, 0);
    expect(big.intakes[0]!.queue).toMatchObject({ max_bytes: (1024 - 32) * MiB / 4 });
    expect(big.intakes[0]!.output).toMatchObject({ resend_window_bytes: 8 * MiB });
    const auto = parseConfig(`intakes:\n${intake('a', '    output: { type: syslog, resend_window_bytes: auto }\n')}`, 'x.yaml', {}, 0);
    const out = auto.intakes[0]!.output as { windowBytes: number; proofBytes: number };
    expect(out.windowBytes).toBe(out.proofBytes + 8 * MiB);
  });

  it('a sidecar\'s 64 MiB, shared by two intakes: each gets (64 - 32) / 2 = 16 MiB', () => {
    const c = parseConfig(`memory_bytes: ${64 * MiB}\nintakes:\n${intake('a')}${intake('b', '    queue: { type: disk }\n    output: { type: http, url: "https://127.0.0.1:1" }\n')}`, 'x.yaml', {});
    expect(c.intakes[0]!.queue).toMatchObject({ type: 'memory', max_bytes: Math.floor((16 * MiB) / 4) });
    expect(c.intakes[0]!.output).toMatchObject({ resend_window_bytes: Math.floor((16 * MiB) / 6) });
    // A disk queue's memory part takes a sixth; the HTTP output two requests at least.
    expect(c.intakes[1]!.queue).toMatchObject({ type: 'disk', memory_bytes: Math.floor((16 * MiB) / 6) });
    expect(c.intakes[1]!.output).toMatchObject({ type: 'http', max_concurrency: 2 });
  });

  it('a UDP input\'s read backlog: a sixth of the share in one thread, 1 to 16 MiB, for an intake\'s input and a shared listener alike', () => {
    const udp = (memory: number, more = ''): number[] => {
      const c = parseConfig(`memory_bytes: ${memory}\n${more}listeners: [{ type: udp, port: 0, routes: [{ intake: a }] }]\nintakes:\n  - name: a\n    intake_key: ${KEY}\n    inputs: [{ type: udp, port: 0 }]\n`, 'x.yaml', {}, 0);
      return [c.intakes[0]!.inputs[0], c.listeners[0]].map((i) => (i as { backlogBytes: number }).backlogBytes);
    };
    expect(udp(128 * MiB)).toEqual([16 * MiB, 16 * MiB]);
    expect(udp(48 * MiB)).toEqual([Math.floor((16 * MiB) / 6), Math.floor((16 * MiB) / 6)]);
    // 4 threads at 128 MiB: (128 - 32 - 48) / 4 = 12 MiB per thread, a sixth of it 2 MiB.
    expect(udp(128 * MiB, 'workers: 4\n')).toEqual([2 * MiB, 2 * MiB]);
    expect(udpBacklogOf(4 * MiB)).toBe(MiB);
    expect(udpBacklogOf(1024 * MiB)).toBe(16 * MiB);
  });

  it('a bound set by hand wins over its derived default', () => {
    const more = `    queue: { max_bytes: 1000000 }\n    output: { type: syslog, resend_window_bytes: 2000000 }\n`;
    const c = parseConfig(`memory_bytes: ${64 * MiB}\nintakes:\n${intake('a', more)}`, 'x.yaml', {});
    expect(c.intakes[0]!.queue).toMatchObject({ max_bytes: 1_000_000 });
    expect(c.intakes[0]!.output).toMatchObject({ resend_window_bytes: 2_000_000, windowBytes: 2_000_000 });
  });

  it('with many intakes, each keeps a floor; with workers, each thread its own window', () => {
    expect(memoryShares(128 * MiB, 100, 1)).toEqual({ intakeBytes: 4 * MiB, perThreadBytes: 4 * MiB });
    // 4 threads: 3 more runtimes of 16 MiB; the window is per thread, the queue split later by threads.
    expect(memoryShares(256 * MiB, 1, 4)).toEqual({ intakeBytes: 176 * MiB, perThreadBytes: 44 * MiB });
    const c = parseConfig(`memory_bytes: ${256 * MiB}\nworkers: 4\nintakes:\n${intake('a')}`, 'x.yaml', {});
    expect(c.intakes[0]!.output).toMatchObject({ resend_window_bytes: Math.floor((44 * MiB) / 6) });
  });

  it('below the least a relay runs in: a configuration error naming the key', () => {
    expect(() => parseConfig(`memory_bytes: ${16 * MiB}\nintakes:\n${intake('a')}`, 'x.yaml', {})).toThrow(/memory_bytes/);
  });
});

describe('a queue bound set above the intake\'s share', () => {
  it('is said at load (validate and the start log show warnings), naming the key and both sizes', () => {
    const c = parseConfig(`memory_bytes: ${64 * MiB}\nintakes:\n${intake('a', '    queue: { max_bytes: 67108864 }\n')}`, 'x.yaml', {});
    expect(c.warnings).toEqual([
      'intakes[0].queue.max_bytes (64 MiB) is more than this intake\'s share of memory_bytes (32 MiB): when the queue fills, the relay uses more memory than memory_bytes says. Raise memory_bytes or leave max_bytes out to have it derived.',
    ]);
    const disk = parseConfig(`memory_bytes: ${64 * MiB}\nintakes:\n${intake('a', '    queue: { type: disk, memory_bytes: 50000000 }\n')}`, 'x.yaml', {});
    expect(disk.warnings).toHaveLength(1);
    expect(disk.warnings[0]).toMatch(/^intakes\[0\]\.queue\.memory_bytes \(47\.7 MiB\) is more than/);
    // Within the share: nothing to say.
    expect(parseConfig(`intakes:\n${intake('a', '    queue: { max_bytes: 67108864 }\n')}`, 'x.yaml', {}).warnings).toEqual([]);
  });
});

describe('the local emulator\'s output', () => {
  it('takes its resend window from the intake\'s share, as a syslog output of its own would', () => {
    const c = parseConfig(`memory_bytes: ${64 * MiB}\nemulator: { when: no_intake_key }\nintakes:\n  - name: a\n    intake_key: ""\n    inputs: [{ type: tcp, port: 0 }]\n`, 'x.yaml', {});
    expect(c.intakes[0]!.toEmulator).toBe(true);
    expect(emulatorOutput(1, 'ca', c.intakes[0]!.memory.perThreadBytes)).toMatchObject({ resend_window_bytes: Math.floor((32 * MiB) / 6), windowBytes: Math.floor((32 * MiB) / 6) });
  });

  it('not set, under a memory limit (a container\'s, a unit\'s MemoryMax): two thirds of the limit, in whole MiB, 48 MiB at least, 128 MiB at most', () => {
    const machine = 16 * 1024 * MiB;
    // No limit: Node says 0, or more than the machine has (cgroup v1 writes 2^63 rounded to pages).
    for (const none of [0, machine, 2 ** 64, Number.NaN]) expect(defaultMemoryBytes(none, machine)).toEqual({ bytes: 128 * MiB });
    expect(defaultMemoryBytes(512 * MiB, machine)).toEqual({ bytes: 128 * MiB });
    expect(defaultMemoryBytes(192 * MiB, machine)).toEqual({ bytes: 128 * MiB });
    expect(defaultMemoryBytes(96 * MiB, machine)).toEqual({ bytes: 64 * MiB, limitBytes: 96 * MiB });
    expect(defaultMemoryBytes(100 * MiB, machine)).toEqual({ bytes: 66 * MiB, limitBytes: 100 * MiB });
    expect(defaultMemoryBytes(64 * MiB, machine)).toEqual({ bytes: 48 * MiB, limitBytes: 64 * MiB });
  });

  it('the file\'s value wins over the limit; the one taken from a limit is said, with what to do when the limit is too small', () => {
    const from96 = parseConfig(`intakes:\n${intake('a')}`, 'x.yaml', {}, 96 * MiB);
    expect(from96.memory_bytes).toBe(64 * MiB);
    expect(from96.intakes[0]!.queue).toMatchObject({ max_bytes: 8 * MiB });
    expect(from96.warnings).toEqual(['memory_bytes: not set; 64 MiB, two thirds of this process\'s memory limit (96 MiB): under a flood the relay\'s peaks pass its budget, and the limit leaves them room. Set memory_bytes to choose another.']);
    const set = parseConfig(`memory_bytes: ${80 * MiB}\nintakes:\n${intake('a')}`, 'x.yaml', {}, 96 * MiB);
    expect(set.memory_bytes).toBe(80 * MiB);
    expect(set.warnings).toEqual([]);
    const small = parseConfig(`intakes:\n${intake('a')}`, 'x.yaml', {}, 64 * MiB);
    expect(small.memory_bytes).toBe(48 * MiB);
    expect(small.warnings[0]).toMatch(/^memory_bytes: not set; 48 MiB, the least, although this process's memory limit \(64 MiB\) .* Give it 72 MiB or more\.$/);
    expect(parseConfig(`intakes:\n${intake('a')}`, 'x.yaml', {}, 0).warnings).toEqual([]);
  });
});
