// `intake-relay tap` against a running relay: the events of the intake or input asked for, as
// they leave the parser, no key shown, the view ending at its limit; a bad query, a tap turned
// off; and a viewer that does not read never slows the pipeline (what it misses is counted and
// told). The books balance.
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import dgram from 'node:dgram';
import { describe, expect, it, vi } from 'vitest';
import { tap, type TapOptions } from '../../src/cli/tap.ts';
import { isLocal } from '../../src/telemetry/ops-server.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { freePort, sendTcp, startTestIntake } from '../helpers/peers.ts';
import { startCli } from '../helpers/process.ts';
import { books, metricValue, startRelay, TEST_KEY, TLS } from '../helpers/relay.ts';
import { parseConfig } from '../../src/config/load.ts';

const DB_KEY = 'DbKey000000000000000000000000001';

async function relayWithTap(tapSetting = 'local') {
  const intake = track(await startTestIntake());
  const ops = await freePort();
  const out = (port: number) => `{ type: syslog, host: 127.0.0.1, port: ${port}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 100 }`;
  // The key from the environment: the tap command reads only metrics: and runs without it.
  const yaml = `log_level: warn
metrics: { address: 127.0.0.1, port: ${ops}, tap: ${tapSetting} }
intakes:
  - name: fw
    intake_key: \${FW_KEY}
    output: ${out(intake.port)}
    inputs: [{ type: tcp, name: fw-tcp, address: 127.0.0.1, port: 0 }]
  - name: db
    intake_key: ${DB_KEY}
    output: ${out(intake.port)}
    inputs: [{ type: udp, name: db-udp, address: 127.0.0.1, port: 0 }]
`;
  const dir = tempDir('tap-test-');
  const file = join(dir, 'relay.yaml');
  writeFileSync(file, yaml);
  const relay = track(await startRelay(yaml, { FW_KEY: TEST_KEY }));
  return { intake, relay, file, base: `http://127.0.0.1:${ops}` };
}

function collect() {
  const out = new PassThrough();
  const err = new PassThrough();
  let o = '';
  let e = '';
  out.on('data', (d: Buffer) => (o += d.toString()));
  err.on('data', (d: Buffer) => (e += d.toString()));
  return { out, err, stdout: () => o, stderr: () => e };
}

const opts = (o: Partial<TapOptions>): TapOptions => ({ intake: undefined, input: undefined, limit: 0, rate: 100, format: 'json', ...o });

describe('tap', () => {
  it('the CLI prints an intake\'s events as parsed, the key masked, and stops at --limit', async () => {
    const { relay, file } = await relayWithTap();
    const cli = startCli(['tap', '-c', file, '--intake', 'FW', '--limit', '3']);
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_tap_viewers')).toBe(1), { timeout: 15_000 });
    const port = relay.port('fw', 'fw-tcp');
    await sendTcp(port, [
      `<134>1 2026-11-23T10:00:00.000Z fw-01 filterlog 42 - [origin ip="10.0.0.1"] key ${TEST_KEY} leaked`,
      ...[1, 2, 3, 4].map((i) => `<38>Nov 23 10:00:0${i} fw-01 sshd[7]: accepted ${i}`),
    ].join('\n') + '\n');
    expect(await cli.exited).toBe(0);
    const lines = cli.out.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({
      intake: 'fw', input: 'fw-tcp', sender: '127.0.0.1', facility: 'local0', severity: 'info', header: 'rfc5424',
      timestamp: '2026-11-23T10:00:00.000Z', hostname: 'fw-01', app_name: 'filterlog', procid: '42', msgid: '',
      structured_data: '[origin ip="10.0.0.1"]', message: 'key <intake key> leaked',
    });
    expect(lines[1]).toMatchObject({ facility: 'auth', severity: 'info', header: 'rfc3164', app_name: 'sshd', procid: '7' });
    expect(cli.out.stdout + cli.out.stderr).not.toContain(TEST_KEY);
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_tap_viewers')).toBe(0));
    await vi.waitFor(async () => expect(await books(relay, 'fw')).toMatchObject({ received: 5, sent: 5, balanced: true }));
  }, 30_000);

  it('--input shows one input\'s events only; --format text', async () => {
    const { relay, base } = await relayWithTap();
    const c = collect();
    const done = tap(base, opts({ input: 'db-udp', limit: 2, format: 'text' }), c.out, c.err, new AbortController().signal);
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_tap_viewers')).toBe(1));
    await sendTcp(relay.port('fw', 'fw-tcp'), '<134>1 - fw-01 app - - - not this one\n');
    const s = dgram.createSocket('udp4');
    for (const m of ['<11>1 - db-01 postgres 9 - - first', '<11>1 - db-01 postgres 9 - - second']) {
      await new Promise<void>((r) => s.send(m, relay.port('db', 'db-udp'), '127.0.0.1', () => r()));
    }
    s.close();
    expect(await done).toBe(0);
    expect(c.stdout().trim().split('\n')).toEqual([
      expect.stringMatching(/^\S+Z db db-udp 127\.0\.0\.1 user\.err db-01 postgres\[9\]: first$/),
      expect.stringMatching(/ second$/),
    ]);
  });

  it('at most 8 viewers; GET only', async () => {
    const { relay, base } = await relayWithTap();
    const viewers = await Promise.all(Array.from({ length: 8 }, () => new Promise<http.IncomingMessage>((resolve) => http.get(`${base}/tap`, resolve))));
    expect(viewers.map((r) => r.statusCode)).toEqual(Array(8).fill(200));
    const c = collect();
    expect(await tap(base, opts({}), c.out, c.err, new AbortController().signal)).toBe(1);
    expect(c.stderr()).toContain('429: 8 viewers already watch');
    expect((await fetch(`${base}/tap`, { method: 'HEAD' })).status).toBe(405);
    expect((await fetch(`${base}/tap`, { method: 'POST' })).status).toBe(405);
    for (const v of viewers) v.destroy();
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_tap_viewers')).toBe(0));
  });

  it('an unknown intake is a usage error naming the intakes; a tap turned off answers 403', async () => {
    const { base } = await relayWithTap();
    const c = collect();
    expect(await tap(base, opts({ intake: 'nope' }), c.out, c.err, new AbortController().signal)).toBe(64);
    expect(c.stderr()).toContain('No intake named "nope": the intakes are "fw", "db".');
    const off = await relayWithTap('off');
    const d = collect();
    expect(await tap(off.base, opts({}), d.out, d.err, new AbortController().signal)).toBe(1);
    expect(d.stderr()).toContain('403: The tap is off (metrics.tap: off).');
    const e = collect();
    expect(await tap('http://127.0.0.1:1', opts({}), e.out, e.err, new AbortController().signal)).toBe(1);
    expect(e.stderr()).toContain('is the relay running');
    expect(isLocal('127.0.0.2') && isLocal('::ffff:127.0.0.1') && isLocal('::1')).toBe(true);
    expect(isLocal('10.0.0.1') || isLocal('::ffff:10.0.0.1') || isLocal('fe80::1') || isLocal(undefined)).toBe(false);
  });

  it('a viewer that does not read never slows the pipeline: what it misses is counted and told', async () => {
    const { relay, intake, base } = await relayWithTap();
    let body = '';
    const res = await new Promise<http.IncomingMessage>((resolve) => http.get(`${base}/tap?intake=fw&rate=1000`, resolve));
    expect(res.statusCode).toBe(200);
    res.pause();
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_tap_viewers')).toBe(1));
    // Large events: what the viewer is shown (up to 1000 a second) fills the socket's buffers at once.
    const n = 2_000;
    const lines = Array.from({ length: n }, (_, i) => `<134>1 - fw-01 app - - - event ${i} ${'x'.repeat(20_000)}`);
    await sendTcp(relay.port('fw', 'fw-tcp'), `${lines.join('\n')}\n`);
    await vi.waitFor(() => expect(intake.received.length).toBe(n), { timeout: 30_000 });
    await vi.waitFor(async () => expect(await books(relay, 'fw')).toMatchObject({ received: n, sent: n, dropped: 0, balanced: true }));
    const dropped = await relay.metric('intake_relay_tap_dropped_total');
    expect(dropped).toBeGreaterThan(0);
    // Reading again: the view goes on, and says what it missed.
    res.setEncoding('utf8');
    res.on('data', (d: string) => (body += d));
    res.resume();
    await vi.waitFor(() => expect(body).toContain('"notice"'), { timeout: 10_000 });
    // Told in full (over one notice or more, as the 5 s notices fell).
    const told = () => body.split('\n').filter((l) => l.includes('"notice"')).reduce((n, l) => n + (JSON.parse(l) as { dropped: number }).dropped, 0);
    await vi.waitFor(() => expect(told()).toBe(dropped), { timeout: 10_000 });
    res.destroy();
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_tap_viewers')).toBe(0));
  }, 60_000);

  it('at most --rate events a second, spread over what arrives; the rest skipped and told', async () => {
    const { relay, base } = await relayWithTap();
    const c = collect();
    const stop = new AbortController();
    const done = tap(base, opts({ intake: 'fw', rate: 5 }), c.out, c.err, stop.signal);
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_tap_viewers')).toBe(1));
    const started = Date.now();
    await sendTcp(relay.port('fw', 'fw-tcp'), Array.from({ length: 1000 }, (_, i) => `<134>1 - h app - - - event ${i}\n`).join(''));
    await vi.waitFor(() => expect(c.stderr()).toContain('skipped (more than 5/s)'), { timeout: 10_000 });
    const shown = c.stdout().trim().split('\n').length;
    const seconds = (Date.now() - started) / 1000;
    expect(shown).toBeGreaterThan(0);
    expect(shown).toBeLessThanOrEqual(5 * (seconds + 1));
    stop.abort();
    expect(await done).toBe(0);
  }, 20_000);

  it('with workers, no thread shows a key: neither that of an intake run by the main thread only (disk queue), nor one a reload rotated out', async () => {
    const intake = track(await startTestIntake());
    const ops = await freePort();
    const dir = tempDir('tap-workers-');
    const out = `{ type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 100 }`;
    const yaml = (fwKey: string): string => `log_level: warn
workers: 2
data_dir: ${dir}
metrics: { address: 127.0.0.1, port: ${ops} }
intakes:
  - name: fw
    intake_key: ${fwKey}
    output: ${out}
    inputs: [{ type: tcp, name: fw-tcp, address: 127.0.0.1, port: 0 }]
  - name: db
    intake_key: ${DB_KEY}
    output: ${out}
    queue: { type: disk }
    inputs: [{ type: udp, name: db-udp, address: 127.0.0.1, port: 0 }]
`;
    const relay = track(await startRelay(yaml(TEST_KEY)));
    const view = async (tag: string, quoted: readonly string[]): Promise<string> => {
      const c = collect();
      const per = 20;
      const connections = 16;
      const n = per * connections;
      const before = await metricValue(relay.daemon.metrics, 'intake_relay_events_received_total', { intake: 'fw' });
      const done = tap(`http://127.0.0.1:${ops}`, opts({ intake: 'fw', limit: n, rate: 1000 }), c.out, c.err, new AbortController().signal);
      await vi.waitFor(async () => expect(await relay.metric('intake_relay_tap_viewers'), c.stderr()).toBe(1), { timeout: 15_000 });
      // Many connections: the kernel spreads them over both threads.
      await Promise.all(Array.from({ length: connections }, (_, k) => sendTcp(relay.port('fw', 'fw-tcp'),
        Array.from({ length: per }, (_, i) => `<134>1 - fw-01 app - - - ${tag} ${k}-${i} quotes ${quoted[i % quoted.length]}\n`).join(''))));
      expect(await done).toBe(0);
      // The worker handled some of them: its viewer masked them.
      const own = (await metricValue(relay.daemon.metrics, 'intake_relay_events_received_total', { intake: 'fw' })) - before;
      expect(own).toBeLessThan(n);
      const lines = c.stdout().trim().split('\n');
      expect(lines).toHaveLength(n);
      return c.stdout();
    };
    const first = await view('a', [DB_KEY, TEST_KEY]);
    expect(first).not.toContain(DB_KEY);
    expect(first).not.toContain(TEST_KEY);
    expect(first.split('<intake key>').length - 1).toBe(16 * 20);
    // The fw key rotated: events still quoting the old one (queued, or from a sender's window) stay masked.
    const NEW_KEY = 'NewKey0000000000000000000000000042';
    const report = await relay.daemon.reload(parseConfig(yaml(NEW_KEY), join(dir, 'v2.yaml'), {}));
    expect(report.failed).toEqual([]);
    const second = await view('b', [TEST_KEY, NEW_KEY, DB_KEY]);
    for (const k of [TEST_KEY, NEW_KEY, DB_KEY]) expect(second).not.toContain(k);
    // Nor in any log line, whatever thread wrote it.
    for (const k of [TEST_KEY, NEW_KEY, DB_KEY]) expect(relay.logText()).not.toContain(k);
  }, 60_000);
});
