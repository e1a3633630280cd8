// The metrics an operator alerts on, from the start: build_info, the queue limits (for fill
// ratios), every drop reason at 0 per intake, the reload outcome and its time (a good reload, one
// refused for an invalid file, one that left a listener that could not start).
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { DROP_STAGES } from '../../src/core/contracts.ts';
import { VERSION } from '../../src/version.ts';
import { track, trackServer } from '../helpers/cleanup.ts';
import { startTestIntake } from '../helpers/peers.ts';
import { startRelay, TEST_KEY, TLS } from '../helpers/relay.ts';

describe('operations metrics', () => {
  it('build_info, queue limits, drop reasons at 0, and the outcome of each reload', async () => {
    const intake = track(await startTestIntake());
    const yaml = (extra = '') => `log_level: fatal
metrics: { enabled: false }
intakes:
  - name: mem
    intake_key: ${TEST_KEY}
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: ${TLS}ca.crt }
    queue: { type: memory, max_events: 1234, max_bytes: 5678901 }
${extra}`;
    const relay = track(await startRelay(yaml()));
    const m = relay.daemon.metrics;
    const info = (await m.buildInfo.get()).values;
    expect(info).toHaveLength(1);
    expect(info[0]).toMatchObject({ value: 1, labels: { version: VERSION, node: process.version } });
    expect(String(info[0]!.labels.commit)).toMatch(/^([0-9a-f]{7,40}|unknown)$/);
    expect(await relay.metric('intake_relay_queue_max_events', { intake: 'mem' })).toBe(1234);
    expect(await relay.metric('intake_relay_queue_max_bytes', { intake: 'mem' })).toBe(5678901);
    const dropped = (await m.eventsDropped.get()).values.filter((v) => v.labels.intake === 'mem');
    const want = Object.entries(DROP_STAGES).flatMap(([stage, reasons]) => reasons.map((reason) => `${stage}/${reason}`));
    expect(dropped.map((v) => `${v.labels.stage}/${v.labels.reason}`).sort()).toEqual(want.sort());
    expect(dropped.every((v) => v.value === 0)).toBe(true);
    expect(await relay.metric('intake_relay_config_last_reload_successful')).toBe(1);
    const started = await relay.metric('intake_relay_config_last_reload_success_timestamp_seconds');
    expect(started).toBeGreaterThan(Date.now() / 1000 - 60);

    // A reload that applies whole: new limits, a new timestamp.
    await new Promise((r) => setTimeout(r, 10));
    const report = await relay.daemon.reload(parseConfig(yaml().replace('max_events: 1234', 'max_events: 999'), 'v2.yaml', {}));
    expect(report.failed).toEqual([]);
    expect(await relay.metric('intake_relay_queue_max_events', { intake: 'mem' })).toBe(999);
    expect(await relay.metric('intake_relay_config_last_reload_successful')).toBe(1);
    const reloaded = await relay.metric('intake_relay_config_last_reload_success_timestamp_seconds');
    expect(reloaded).toBeGreaterThan(started);

    // An invalid file: refused, the running configuration stays (main.ts calls reloadRefused).
    relay.daemon.reloadRefused();
    expect(await relay.metric('intake_relay_config_last_reload_successful')).toBe(0);
    expect(await relay.metric('intake_relay_config_last_reload_success_timestamp_seconds')).toBe(reloaded);

    // A reload whose new listener cannot start (its port is taken): not whole.
    const busy = trackServer(net.createServer());
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as net.AddressInfo).port;
    const partial = await relay.daemon.reload(parseConfig(yaml(`listeners:
  - { type: tcp, name: taken, address: 127.0.0.1, port: ${port}, routes: [{ match: {}, intake: mem }] }
`), 'v3.yaml', {}));
    expect(partial.failed).toEqual(['taken']);
    expect(await relay.metric('intake_relay_config_last_reload_successful')).toBe(0);
    expect(relay.daemon.view.ready()).toBe(false);

    // Fixed: whole again.
    const fixed = await relay.daemon.reload(parseConfig(yaml(), 'v4.yaml', {}));
    expect(fixed.failed).toEqual([]);
    expect(await relay.metric('intake_relay_config_last_reload_successful')).toBe(1);
    expect(relay.daemon.view.ready()).toBe(true);
  });
});
