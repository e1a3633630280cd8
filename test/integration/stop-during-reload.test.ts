// A stop (SIGTERM) that comes while a reload is under way: inputs the reload starts after the stop
// listed its sources are stopped too, so no port stays open and takes events nobody will deliver.
import { connect } from 'node:net';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { Relay } from '../../src/runtime/relay.ts';
import { tempDir } from '../helpers/cleanup.ts';
import { freePort } from '../helpers/peers.ts';

const KEY = 'AAAAaaaa00001111222233334444aaaa';

const yaml = (dir: string, inputs: string): string => `log_level: warn
metrics: { enabled: false }
shutdown_timeout_ms: 500
data_dir: ${dir}
intakes:
  - name: a
    intake_key: ${KEY}
    inputs: [${inputs}]
    output: { type: http, url: "http://127.0.0.1:1", proxy: none }
`;

const connects = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.on('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });

describe('a stop during a reload', () => {
  it('stops the inputs the reload started after the stop began: their ports are closed once stop() returns', async () => {
    const dir = tempDir('stop-reload-');
    const [p1, p2] = [await freePort(), await freePort()];
    const one = `{ type: tcp, name: in1, address: 127.0.0.1, port: ${p1} }`;
    const two = `${one}, { type: tcp, name: in2, address: 127.0.0.1, port: ${p2} }`;
    const d = new Relay(parseConfig(yaml(dir, one), 'v1.yaml', {}), pino({ level: 'silent' }));
    await d.start();
    // The stop begins in the middle of the reload (before the topology opens the new inputs).
    let stopping: Promise<unknown> | undefined;
    const reload = d.topology.reload.bind(d.topology);
    d.topology.reload = async (cfg) => {
      stopping = d.stop();
      await new Promise((r) => setImmediate(r));
      return reload(cfg);
    };
    await d.reload(parseConfig(yaml(dir, two), 'v2.yaml', {}));
    await stopping;
    expect(d.phase).toBe('stopped');
    expect(await connects(p1)).toBe(false);
    expect(await connects(p2)).toBe(false);
  });
});
