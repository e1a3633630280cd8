// The reload plan on its own: what is kept, restarted, added, removed, changed in place, and what
// only a restart applies, from two configurations.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { changed, planReload, queueInForce } from '../../src/pipeline/reload-plan.ts';

const K1 = 'AbCdEfGh0123456789IjKlMnOpQrStUv';
const K2 = 'ZyXwVuTs9876543210RqPoNmLkJiHgFe';
const cfg = (yaml: string) => parseConfig(yaml, 'relay.yaml', {});

const base = `data_dir: /tmp/relay-plan
intakes:
  - name: a
    intake_key: ${K1}
    inputs:
      - { type: tcp, port: 2001, name: keep }
      - { type: tcp, port: 2002, name: change }
      - { type: udp, port: 2003, name: gone }
    filters: []
  - name: b
    intake_key: ${K2}
    inputs: [{ type: udp, port: 2004 }]
  - name: c
    intake_key: ${K2}
    queue: { type: disk, path: /tmp/relay-plan-q, max_bytes: 1048576 }
listeners:
  - { type: tcp, name: shared, port: 2010, routes: [{ match: { app_name: x }, intake: a }] }
  - { type: udp, name: old, port: 2011, routes: [{ match: {}, intake: b }] }
`;

describe('reload plan', () => {
  it('nothing changed: everything kept, nothing to do', () => {
    const p = planReload(cfg(base), cfg(base));
    expect(p).toMatchObject({ removed: [], added: [], stats: false, notApplied: [] });
    expect(p.kept.map((k) => [k.name, changed(k), k.inputs.restart.length + k.inputs.add.length + k.inputs.remove.length])).toEqual([['a', false, 0], ['b', false, 0], ['c', false, 0]]);
    expect(p.listeners).toEqual({ keep: ['shared', 'old'], restart: [], add: [], remove: [] });
  });

  it('new senders settings (an intake\'s, a listener\'s) restart nothing: the daemon applies them in place', () => {
    const next = base
      .replace('    filters: []\n', '    filters: []\n    senders: { silent_after_ms: 60000 }\n')
      .replace('name: shared, port: 2010,', 'name: shared, port: 2010, senders: { max_tracked: 5 },');
    const p = planReload(cfg(base), cfg(next));
    expect(p.kept.map((k) => changed(k) || k.inputs.restart.length > 0)).toEqual([false, false, false]);
    expect(p.listeners).toEqual({ keep: ['shared', 'old'], restart: [], add: [], remove: [] });
  });

  it('sorts intakes, inputs and listeners into kept, restarted, added and removed; filters, queue limits and outputs changed in place', () => {
    const next = base
      .replace('port: 2002, name: change', 'port: 2005, name: change')
      .replace("      - { type: udp, port: 2003, name: gone }\n", "      - { type: udp, port: 2006, name: new }\n")
      .replace('    filters: []', '    filters: [{ description: drop debug, filters: [{ field: severity, operator: "==", value: 7 }] }]')
      .replace(`  - name: b\n    intake_key: ${K2}\n    inputs: [{ type: udp, port: 2004 }]\n`, `  - name: d\n    intake_key: ${K2}\n`)
      .replace('    queue: { type: disk, path: /tmp/relay-plan-q, max_bytes: 1048576 }', '    queue: { type: disk, path: /tmp/relay-plan-q, max_bytes: 2097152 }\n    output: { type: http }')
      .replace("  - { type: udp, name: old, port: 2011, routes: [{ match: {}, intake: b }] }\n", "  - { type: udp, name: added, port: 2012, routes: [{ match: {}, intake: d }] }\n")
      .replace('routes: [{ match: { app_name: x }, intake: a }]', 'routes: [{ match: { app_name: y }, intake: a }]');
    const p = planReload(cfg(base), cfg(next));
    expect(p.removed).toEqual(['b']);
    expect(p.added.map((i) => i.name)).toEqual(['d']);
    const [a, c] = p.kept;
    expect(a).toMatchObject({ name: 'a', filters: true, queue: 'same', output: false, inputs: { keep: ['keep'], restart: ['change'], add: ['new'], remove: ['gone'] } });
    expect(c).toMatchObject({ name: 'c', filters: false, queue: 'limits', output: true });
    // New routes are applied in place: the listener keeps its connections.
    expect(p.listeners).toEqual({ keep: ['shared'], restart: [], add: ['added'], remove: ['old'] });
    expect(p.notApplied).toEqual([]);
    // A listener's own settings (its port, limits) still open it again.
    const moved = planReload(cfg(base), cfg(base.replace('name: shared, port: 2010', 'name: shared, port: 2013')));
    expect(moved.listeners).toEqual({ keep: ['old'], restart: ['shared'], add: [], remove: [] });
  });

  it('reports what only a restart applies: metrics, emulator, data_dir, a queue\'s type or path, a disk queue\'s memory stage', () => {
    const next = base
      .replace('data_dir: /tmp/relay-plan', 'data_dir: /tmp/relay-plan-2\nmetrics: { port: 9999 }\nemulator: { when: no_intake_key }')
      .replace('    queue: { type: disk, path: /tmp/relay-plan-q, max_bytes: 1048576 }', '    queue: { type: disk, path: /tmp/relay-plan-q, max_bytes: 1048576, memory_events: 5 }');
    const withQueue = base.replace(`  - name: b\n    intake_key: ${K2}\n`, `  - name: b\n    intake_key: ${K2}\n    queue: { type: disk }\n`);
    expect(planReload(cfg(base), cfg(next)).notApplied).toEqual(['metrics', 'emulator', 'data_dir', 'intakes.c.queue (memory stage, segments, fsync)']);
    const p = planReload(cfg(base), cfg(withQueue));
    expect(p.notApplied).toEqual(['intakes.b.queue (type or path)']);
    expect(p.kept[1]).toMatchObject({ name: 'b', queue: 'restart' });
  });

  it('a new key or batching means a new output; stats set up again when they change', () => {
    const next = base.replace(`  - name: c\n    intake_key: ${K2}`, `  - name: c\n    intake_key: ${K1}\n    batch: { max_events: 10 }`) + 'stats: { intake: a }\n';
    const p = planReload(cfg(base), cfg(next));
    expect(p.kept.find((k) => k.name === 'c')).toMatchObject({ output: true, queue: 'same' });
    expect(p.stats).toBe(true);
  });

  it('the queue in force after a reload: a new type or path stays as it was, a disk queue keeps its memory stage but takes new limits', () => {
    const mem = { type: 'memory', max_events: 10, max_bytes: 1000, when_full: 'block' } as const;
    const disk = { type: 'disk', path: '/q', max_bytes: 1000, when_full: 'block', memory_events: 5, memory_bytes: 500, segment_bytes: 100, fsync_interval_ms: 10 } as const;
    expect(queueInForce(mem, disk)).toBe(mem);
    expect(queueInForce(disk, mem)).toBe(disk);
    expect(queueInForce(disk, { ...disk, path: '/other' })).toBe(disk);
    expect(queueInForce(mem, { ...mem, max_events: 20 })).toEqual({ ...mem, max_events: 20 });
    expect(queueInForce(disk, { ...disk, max_bytes: 2000, memory_events: 50, fsync_interval_ms: 99 })).toEqual({ ...disk, max_bytes: 2000 });
  });
});
