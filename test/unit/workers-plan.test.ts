// What runs in the workers (workers: N), and with which bounds: a pure plan from the configuration.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { summarize } from '../../src/cli/summary.ts';
import { heldPorts, runsInWorkers, shareBounds, workerConfig, workerCount, workerForwards } from '../../src/pipeline/worker-plan.ts';

const KEY = 'AbCdEfGh0123456789IjKlMnOpQrStUv';
const intake = (name: string, inputs: string, queue = '') => `  - name: ${name}
    intake_key: ${KEY}
    inputs: [${inputs}]
${queue ? `    queue: ${queue}\n` : ''}`;
const cfg = (intakes: string, extra = '') => parseConfig(`workers: 4\nintakes:\n${intakes}${extra}`, 'w.yaml', {});

describe('workers plan', () => {
  it('network inputs of memory-queued intakes run in the workers, on the main thread\'s ports; file inputs and disk queues do not', () => {
    const c = cfg(
      intake('net', '{ type: tcp, address: 127.0.0.1, port: 0 }, { type: udp, address: 127.0.0.1, port: 0 }, { type: file, paths: [/tmp/x.log] }') +
        intake('disk', '{ type: tcp, address: 127.0.0.1, port: 6515 }', '{ type: disk }'),
    );
    const w = workerConfig(c, (i, l) => (i === 'net' && l === 'tcp/0' ? 41000 : 42000), () => undefined);
    expect(w.intakes.map((i) => [i.name, i.inputs.map((x) => `${x.type}:${(x as { port: number }).port}`)])).toEqual([['net', ['tcp:41000', 'udp:42000']]]);
    expect(w.metrics.enabled).toBe(false);
    expect(w.stats).toBeUndefined();
    expect(heldPorts(w)).toEqual(['tcp 41000', 'udp 42000']);
    expect(runsInWorkers(c)).toBe(true);
  });

  it('shared listeners run in every thread whatever their routes lead to: a disk-queued intake is reached through the main thread', () => {
    const listener = `listeners:
  - { type: tcp, name: shared, address: 127.0.0.1, port: 6514, routes: [{ match: { app_name: a }, intake: a }, { match: { app_name: b }, intake: b }], default: drop }
  - { type: http, name: api, address: 127.0.0.1, port: 8080, max_inflight_bytes: 1000000 }
`;
    const mem = cfg(intake('a', '') + intake('b', ''), listener);
    expect(workerConfig(mem, () => undefined, (l) => (l === 'shared' ? 7000 : 7001)).listeners.map((l) => (l as { port: number }).port)).toEqual([7000, 7001]);
    expect(workerConfig(mem, () => undefined, () => undefined).intakes.map((i) => i.name)).toEqual(['a', 'b']);
    expect(workerForwards(mem)).toEqual([]);
    // The HTTP listener's memory budget is shared among the threads like the queues.
    const shared = shareBounds(mem, 4);
    expect(shared.listeners.map((l) => (l as { max_inflight_bytes?: number }).max_inflight_bytes)).toEqual([undefined, 250000]);
    // A disk queue on b: the listeners stay in every thread (a reload adding it moves nothing); b is
    // the main thread's, reached from the workers through it.
    const withDisk = cfg(intake('a', '') + intake('b', '', '{ type: disk, when_full: drop_newest }'), listener);
    const plan = workerConfig(withDisk, () => undefined, () => undefined);
    expect(plan.listeners.map((l) => l.label)).toEqual(['shared', 'api']);
    expect(plan.intakes.map((i) => i.name)).toEqual(['a']);
    expect(workerForwards(withDisk)).toEqual([{ name: 'b', intakeKey: KEY, filters: [], whenFull: 'drop_newest' }]);
    expect(runsInWorkers(withDisk)).toBe(true);
    expect(shareBounds(withDisk, 4).listeners.map((l) => (l as { max_inflight_bytes?: number }).max_inflight_bytes)).toEqual([undefined, 250000]);
    expect(summarize(withDisk)).toContain('workers: 4 threads run the shared listeners (what they route to "b", whose disk queues the main thread runs, goes there); the rest runs in the main thread');
  });

  it('bounds are shared (rounded down: never more than configured); nothing changes for one thread', () => {
    const c = cfg(intake('net', '{ type: tcp, address: 127.0.0.1, port: 0 }', '{ type: memory, max_events: 1000, max_bytes: 1000001 }') + intake('disk', '{ type: tcp, address: 127.0.0.1, port: 6515 }', '{ type: disk }'));
    const s = shareBounds(c, 3);
    expect(s.intakes[0]?.queue).toMatchObject({ max_events: 333, max_bytes: 333333 });
    // The disk-queued intake runs in the main thread alone: its bounds stay.
    expect(s.intakes[1]?.queue).toEqual(c.intakes[1]?.queue);
    expect(shareBounds(c, 1)).toBe(c);
  });

  it('validate says what runs in the workers, or that nothing can', () => {
    const net = cfg(intake('net', '{ type: tcp, address: 127.0.0.1, port: 0 }') + intake('disk', '{ type: tcp, address: 127.0.0.1, port: 6515 }', '{ type: disk }'));
    expect(summarize(net)).toContain('workers: 4 threads run the network inputs of "net"; the rest runs in the main thread');
    const disk = cfg(intake('disk', '{ type: tcp, address: 127.0.0.1, port: 6515 }', '{ type: disk }'));
    expect(summarize(disk)).toContain('workers: 4 asked, but no network input can run in a worker');
  });

  it('workers: auto is the cores the process may use, at most 8', () => {
    expect(workerCount(3)).toBe(3);
    expect(workerCount('auto')).toBeGreaterThanOrEqual(1);
    expect(workerCount('auto')).toBeLessThanOrEqual(8);
  });
});
