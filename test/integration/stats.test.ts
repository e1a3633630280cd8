// Forwarder statistics: records in the official forwarder's shapes (rsyslog impstats JSON), sent
// to the statistics intake through its real output.
import { expect, it, vi } from 'vitest';
import { books, startRelay, TLS } from '../helpers/relay.ts';
import { sendTcp, startTestIntake } from '../helpers/peers.ts';
import { track } from '../helpers/cleanup.ts';
import { syslogLines } from '../helpers/lines.ts';

const KEY_APP = 'AppKey0123456789abcdefABCDEF0123';
const KEY_STATS = 'StatsKey0123456789abcdefABCDEF01';

it('reports per output, queue and input as impstats does, to the statistics intake, counts reset at each report', async () => {
  const intake = track(await startTestIntake());
  const output = `{ type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 100 }`;
  const relay = track(await startRelay(`log_level: info
metrics: { enabled: false }
shutdown_timeout_ms: 2000
stats: { intake: monitoring, interval_ms: 1000 }
intakes:
  - name: App
    intake_key: ${KEY_APP}
    inputs: [{ type: tcp, name: in, address: 127.0.0.1, port: 0 }]
    output: ${output}
  - name: monitoring
    intake_key: ${KEY_STATS}
    output: ${output}
`));
  const port = relay.port('App', 'in');
  await sendTcp(port, syslogLines(0, 100, (i) => `e${i}`));
  const stats = () => intake.received.filter((m) => m.intakeKey === KEY_STATS);
  const records = () => stats().map((m) => JSON.parse(m.message) as Record<string, unknown>);
  // Two reports at least: counts are per report, and add up.
  await vi.waitFor(() => expect(records().filter((r) => r.name === 'resource-usage').length).toBeGreaterThanOrEqual(2), { timeout: 5_000 });
  expect(stats()[0]).toMatchObject({ appName: 'rsyslogd-pstats', pri: 46, problems: [] });
  const sum = (name: string, field: string): number => records().filter((r) => r.name === name).reduce((n, r) => n + Number(r[field]), 0);
  expect(sum('output-app', 'processed')).toBe(100);
  expect(sum(`input-app(${port})`, 'submitted')).toBe(100);
  expect(sum('ruleset-app', 'enqueued')).toBe(100);
  expect(records().find((r) => r.name === 'output-app')).toEqual({ name: 'output-app', origin: 'core.action', processed: expect.any(Number), failed: 0, suspended: 0, 'suspended.duration': 0, resumed: 0 });
  expect(records().find((r) => r.name === `TCP-127.0.0.1-${intake.port}`)).toMatchObject({ origin: 'omfwd', 'bytes.sent': expect.any(Number) });
  // The statistics intake's queue is "stats", as the forwarder names it; the main queue is unused.
  expect(records().find((r) => r.name === 'stats')).toMatchObject({ origin: 'core.queue', size: expect.any(Number), enqueued: expect.any(Number) });
  expect(records().find((r) => r.name === 'main Q')).toEqual({ name: 'main Q', origin: 'core.queue', size: 0, enqueued: 0, full: 0, 'discarded.full': 0, 'discarded.nf': 0, maxqsize: 0 });
  expect(records().find((r) => r.name === 'resource-usage')).toMatchObject({ origin: 'impstats', utime: expect.any(Number), maxrss: expect.any(Number) });
  expect(stats().every((m) => !m.message.includes(KEY_APP))).toBe(true);
  await vi.waitFor(async () => expect(await books(relay, 'monitoring')).toMatchObject({ queued: 0, balanced: true }));
});
