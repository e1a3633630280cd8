// Every registered component type goes through the same lifecycle checks: stop before start, stop
// twice, start / stop / start / stop. A type added to a registry without a case here fails.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { BoundedQueue } from '../../src/core/queue.ts';
import { INPUTS } from '../../src/inputs/registry.ts';
import { OUTPUTS, outputOf } from '../../src/outputs/registry.ts';
import { SenderTables } from '../../src/pipeline/senders.ts';
import { createSource } from '../../src/pipeline/sources.ts';
import { Taps } from '../../src/pipeline/tap.ts';
import { FilterSet } from '../../src/routing/filters.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';
import { TEST_KEY, TLS } from '../helpers/relay.ts';

const dir = mkdtempSync(join(tmpdir(), 'lifecycle-'));
writeFileSync(join(dir, 'app.log'), 'a line\n');

/** One configuration per input type, as an intake input or, for listener-only types, as a listener. */
const INPUT_CASES: Record<keyof typeof INPUTS, string> = {
  udp: '{ type: udp, address: 127.0.0.1, port: 0 }',
  tcp: `{ type: tcp, address: 127.0.0.1, port: 0, tls: { cert_file: ${TLS}server.crt, key_file: ${TLS}server.key } }`,
  file: `{ type: file, paths: [${join(dir, '*.log')}] }`,
  http: '{ type: http, address: 127.0.0.1, port: 0 }',
  relp: `{ type: relp, address: 127.0.0.1, port: 0, tls: { cert_file: ${TLS}server.crt, key_file: ${TLS}server.key } }`,
};
const OUTPUT_CASES: Record<keyof typeof OUTPUTS, string> = {
  syslog: '{ type: syslog, host: 127.0.0.1, port: 9 }',
  http: '{ type: http, url: "https://127.0.0.1:9" }',
  relp: '{ type: relp, host: 127.0.0.1, port: 9 }',
};

function config(input: string, output = '{ type: syslog, host: 127.0.0.1, port: 9 }') {
  const listener = input.includes('type: http');
  return parseConfig(
    `data_dir: ${dir}\nintakes:\n  - name: i\n    intake_key: ${TEST_KEY}\n    inputs: [${listener ? '' : input}]\n    output: ${output}\n${listener ? `listeners: [${input}]\n` : ''}`,
    join(dir, 'relay.yaml'),
    {},
  );
}

describe('every input type', () => {
  it.each(Object.entries(INPUT_CASES))('%s: stop before start, start, stop twice, start again, stop', async (type, yaml) => {
    const cfg = config(yaml);
    const c = cfg.listeners[0] ?? cfg.intakes[0]!.inputs[0]!;
    expect(c.type).toBe(type);
    const metrics = new Metrics(false);
    const queue = new BoundedQueue({ maxEvents: 100, maxBytes: 1 << 20, whenFull: 'block' });
    const target = { intake: 'i', intakeKey: TEST_KEY, queue, filters: new FilterSet([]) };
    const log = pino({ level: 'silent' });
    const source = createSource(c, { targets: [target] }, cfg.listeners.length > 0 ? '' : 'i', cfg.listeners[0]?.senders ?? cfg.intakes[0]!.senders, { metrics, log, dataDir: dir, senders: new SenderTables(metrics, log), taps: new Taps(metrics, () => []) });
    await source.stop();
    await source.finish?.();
    await source.start();
    if (INPUTS[type as keyof typeof INPUTS].listening(c as never)) expect(source.port).toBeGreaterThan(0);
    await source.stop();
    await source.stop();
    await source.finish?.();
    await source.start();
    await source.stop();
    await source.finish?.();
    source.dispose?.();
  });

  it('has a case for each registered type', () => {
    expect(Object.keys(INPUT_CASES).sort()).toEqual(Object.keys(INPUTS).sort());
  });
});

describe('every output type', () => {
  it.each(Object.entries(OUTPUT_CASES))('%s: stop before start, stop twice, nothing left unconfirmed', async (type, yaml) => {
    const cfg = config(INPUT_CASES.udp, yaml);
    const o = cfg.intakes[0]!.output;
    expect(o.type).toBe(type);
    const create = () => outputOf(o).create(o, { intake: 'i', intakeKey: TEST_KEY, tools: { metrics: new Metrics(false), intake: 'i' } });
    const events = { acknowledged: () => {}, connectionLost: () => {}, connected: () => {}, wrote: () => {}, cut: () => {}, refused: () => {} };
    expect(await create().stop(AbortSignal.timeout(1_000))).toBe(0);
    const sink = create();
    await sink.start(events);
    expect(await sink.stop(AbortSignal.timeout(1_000))).toBe(0);
    expect(await sink.stop(AbortSignal.timeout(1_000))).toBe(0);
    expect(sink.unacknowledged).toBe(0);
  });

  it('has a case for each registered type', () => {
    expect(Object.keys(OUTPUT_CASES).sort()).toEqual(Object.keys(OUTPUTS).sort());
  });
});
