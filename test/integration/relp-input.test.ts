// rsyslog's omrelp (librelp) as the sender into the relay's RELP input, plain and over TLS (mutual
// TLS too). rsyslog keeps in its window and action queue whatever the relay has not answered: with
// a memory queue the relay answers once a message is queued (respond_when: auto, as imrelp does) or
// delivered (respond_when: delivered); with a disk queue once fsynced, so a kill -9 between
// acceptance and delivery loses nothing (rsyslog resends what was not answered, the disk queue
// what it held).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay, TEST_KEY, TLS } from '../helpers/relay.ts';
import { freePort, sendTcp, startRsyslog, startTestIntake, type Peer, type TestIntake } from '../helpers/peers.ts';
import { relayYaml } from '../helpers/config.ts';
import { counts, exited, startRelayProcess } from '../helpers/process.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { syslogLines } from '../helpers/lines.ts';

const body = (tag: string) => (i: number): string => `${tag} ${String(i).padStart(6, '0')} ${'r'.repeat(60)} ünïcödé`;

/** The messages the intake got, as rsyslog forwarded them (its %msg% keeps the space after the tag's colon). */
function bodies(intake: TestIntake): Map<string, number> {
  const m = new Map<string, number>();
  for (const [text, n] of counts(intake)) m.set(text.trim(), n);
  return m;
}

/** The messages tagged `tag`, 0 … n-1, each there at least once. */
function expectAll(intake: TestIntake, tag: string, n: number): void {
  const got = bodies(intake);
  const missing = Array.from({ length: n }, (_, i) => body(tag)(i)).filter((m) => !got.has(m));
  expect(missing.slice(0, 5), `${missing.length} of ${n} missing`).toEqual([]);
}

interface Omrelp {
  readonly relpPort: number;
  /** `tls`: tls="on" with the test CA, checking the relay's name; `clientCert`: also presents client.crt. */
  readonly tls?: { readonly clientCert: boolean };
  /** omrelp's template (its default when not given). */
  readonly template?: string;
}

/**
 * rsyslog receiving on `inPort` (imtcp) and forwarding everything with omrelp, holding what is not
 * answered yet in its action queue, retrying for ever.
 */
function rsyslogRelp(inPort: number, o: Omrelp): (dir: string) => string {
  const tls = o.tls
    ? ` tls="on" tls.caCert="${TLS}ca.crt" tls.authMode="name" tls.permittedPeer=["localhost"]` +
      (o.tls.clientCert ? ` tls.myCert="${TLS}client.crt" tls.myPrivKey="${TLS}client.key"` : '')
    : '';
  return () => `module(load="imtcp")
module(load="omrelp"${o.tls ? ' tls.tlslib="openssl"' : ''})
input(type="imtcp" address="127.0.0.1" port="${inPort}" ruleset="fwd")
ruleset(name="fwd") {
  action(type="omrelp" target="127.0.0.1" port="${o.relpPort}"${tls}${o.template ? ` template="${o.template}"` : ''}
    queue.type="LinkedList" queue.size="200000" action.resumeRetryCount="-1" action.resumeInterval="1")
}`;
}

async function startSender(o: Omrelp): Promise<{ peer: Peer; feed(tag: string, from: number, to: number): Promise<void> }> {
  const inPort = await freePort();
  const peer = track(startRsyslog(rsyslogRelp(inPort, o)));
  await peer.listening(inPort);
  return {
    peer,
    feed: (tag, from, to) => sendTcp(inPort, syslogLines(from, to, body(tag), `<14>Nov 22 10:00:00 feeder ${tag}[42]: `)),
  };
}

const RELP_INPUT = '      - { type: relp, address: 127.0.0.1, port: 0, name: relp }';
const RELP_TLS_INPUT = (clientCa: boolean): string => `      - type: relp
        name: relp
        address: 127.0.0.1
        port: 0
        tls: { cert_file: ${TLS}server.crt, key_file: ${TLS}server.key${clientCa ? `, client_ca_file: ${TLS}ca.crt` : ''} }`;

describe('rsyslog omrelp -> relay RELP input', () => {
  it('at the defaults (memory queue, respond_when: auto) each message is answered once queued, as imrelp does: with the intake down, all of them are answered and queued; once it is back, every one arrives once', async () => {
    const intakePort = await freePort();
    const relay = track(await startRelay(relayYaml({ intakePort, inputs: RELP_INPUT })));
    // RFC 5424 as rsyslog writes it, a newline at the end of each message's data.
    const sender = await startSender({ relpPort: relay.port('t', 'relp'), template: 'RSYSLOG_SyslogProtocol23Format' });
    const n = 3_000;
    await sender.feed('def', 0, n);
    // Nothing delivered, and yet every message answered: rsyslog's window of 128 never holds it up.
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_relp_answers_total', { code: '200' })).toBe(n), { timeout: 30_000 });
    expect(await relay.metric('intake_relay_events_received_total')).toBe(n);
    expect(await relay.metric('intake_relay_events_sent_total')).toBe(0);
    expect(await relay.metric('intake_relay_queue_events')).toBe(n);
    expect(await relay.metric('intake_relay_relp_sessions_opened_total')).toBe(1);
    const intake = track(await startTestIntake(intakePort));
    await vi.waitFor(() => expectAll(intake, 'def', n), { timeout: 30_000, interval: 200 });
    expect(intake.received).toHaveLength(n);
    // rsyslog's template ends each message with a newline inside the RELP data: not part of the message.
    expect(intake.frames.filter((f) => f.at(-1) === 0x0a || f.at(-1) === 0x0d)).toHaveLength(0);
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: n, sent: n, dropped: 0, queued: 0, unacked: 0, balanced: true }), { timeout: 15_000 });
  });

  it('respond_when: delivered: while the intake is down, nothing is answered and rsyslog holds the messages; once it is back, every one arrives', async () => {
    const intakePort = await freePort();
    const relay = track(await startRelay(relayYaml({ intakePort, inputs: '      - { type: relp, address: 127.0.0.1, port: 0, name: relp, respond_when: delivered }' })));
    const sender = await startSender({ relpPort: relay.port('t', 'relp') });
    const n = 3_000;
    await sender.feed('mem', 0, n);
    // rsyslog's window (librelp's default: 128 unanswered transactions per session) fills up; the
    // relay answered none of them, as none was delivered: only the session's open was answered.
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_received_total')).toBeGreaterThanOrEqual(100), { timeout: 15_000 });
    expect(await relay.metric('intake_relay_relp_answers_total', { code: '200' })).toBe(0);
    expect(await relay.metric('intake_relay_events_received_total')).toBeLessThan(n);
    expect(await relay.metric('intake_relay_events_sent_total')).toBe(0);
    // Still so after the output failed to connect a few times.
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_output_errors_total')).toBeGreaterThanOrEqual(3), { timeout: 15_000 });
    expect(await relay.metric('intake_relay_relp_answers_total', { code: '200' })).toBe(0);
    const intake = track(await startTestIntake(intakePort));
    await vi.waitFor(() => expectAll(intake, 'mem', n), { timeout: 30_000, interval: 200 });
    expect(intake.received[0]).toMatchObject({ hostname: 'feeder', appName: 'mem', procId: '42', intakeKey: TEST_KEY, problems: [] });
    // Duplicates only where rsyslog resent, and counted as received.
    await vi.waitFor(async () => {
      const b = await books(relay, 't');
      expect(b).toMatchObject({ dropped: 0, queued: 0, unacked: 0, balanced: true });
      expect(b.sent).toBe(intake.received.length);
    }, { timeout: 15_000 });
    // Every message answered once delivered; never more than was received.
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_relp_answers_total', { code: '200' })).toBeGreaterThanOrEqual(n));
    expect(await relay.metric('intake_relay_relp_answers_total', { code: '200' })).toBeLessThanOrEqual(await relay.metric('intake_relay_events_received_total'));
    expect(await relay.metric('intake_relay_relp_answers_total', { code: '500' })).toBe(0);
    const duplicates = intake.received.length - n;
    expect(duplicates).toBe((await relay.metric('intake_relay_events_received_total')) - n);
  });

  it.each([
    ['TLS', false],
    ['mutual TLS (client certificate)', true],
  ])('over %s: every message once, fields intact', async (_what, clientCa) => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs: RELP_TLS_INPUT(clientCa) })));
    const sender = await startSender({ relpPort: relay.port('t', 'relp'), tls: { clientCert: clientCa } });
    const n = 2_000;
    await sender.feed('tls', 0, n);
    await vi.waitFor(() => expectAll(intake, 'tls', n), { timeout: 30_000, interval: 200 });
    expect(intake.received).toHaveLength(n);
    expect(intake.received[0]).toMatchObject({ hostname: 'feeder', appName: 'tls', intakeKey: TEST_KEY, problems: [] });
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: n, sent: n, dropped: 0, balanced: true }), { timeout: 15_000 });
    expect(await relay.metric('intake_relay_input_connections_rejected_total', { reason: 'tls_handshake' })).toBe(0);
  });
});

describe('rsyslog omrelp -> relay with a disk queue, kill -9', () => {
  it('kill -9 between acceptance and delivery, restart: rsyslog resends what was not answered, the disk queue what it held; none lost', async () => {
    const dir = tempDir('relp-input-');
    const intakePort = await freePort();
    const relpPort = await freePort();
    const metricsPort = await freePort();
    const config = join(dir, 'relay.yaml');
    writeFileSync(config, relayYaml({
      intakePort,
      inputs: `      - { type: relp, address: 127.0.0.1, port: ${relpPort}, name: relp }`,
      extra: `data_dir: ${dir}\nshutdown_timeout_ms: 2000`,
      queue: '    queue: { type: disk, fsync_interval_ms: 1000 }',
    }).replace('metrics: { enabled: false }', `metrics: { address: 127.0.0.1, port: ${metricsPort} }`).replace('log_level: debug', 'log_level: info'));
    const scrape = async (name: string): Promise<number> => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return text.split('\n').filter((l) => l.startsWith(name)).reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    };
    let relay = startRelayProcess(config);
    await vi.waitFor(() => expect(relay.output()).toContain('intake-relay started'), { timeout: 15_000 });
    const sender = await startSender({ relpPort });
    const n = 6_000;
    await sender.feed('disk', 0, n / 2);
    // Answered once fsynced, with the intake down: some were accepted and are only on disk.
    await vi.waitFor(async () => expect(await scrape('intake_relay_relp_answers_total{intake="t",input="relp",code="200"}')).toBeGreaterThan(100), { timeout: 15_000 });
    const feeding = sender.feed('disk', n / 2, n);
    relay.proc.kill('SIGKILL');
    await exited(relay.proc);
    await feeding;
    const intake = track(await startTestIntake(intakePort));
    relay = startRelayProcess(config);
    await vi.waitFor(() => expect(relay.output()).toContain('intake-relay started'), { timeout: 15_000 });
    const recovered = await scrape('intake_relay_disk_queue_recovered_events_total');
    expect(recovered).toBeGreaterThan(0);
    await vi.waitFor(() => expectAll(intake, 'disk', n), { timeout: 40_000, interval: 200 });
    // Nothing was delivered before the kill: a duplicate is a message on disk that rsyslog resent
    // as well (written, not answered yet: at most its window).
    expect(intake.received.length - n).toBeLessThanOrEqual(recovered);
    // The books of the second run: what it received and recovered = sent + dropped + queued + unacked.
    await vi.waitFor(async () => {
      const received = (await scrape('intake_relay_events_received_total')) + (await scrape('intake_relay_disk_queue_recovered_events_total'));
      const sent = await scrape('intake_relay_events_sent_total');
      const dropped = await scrape('intake_relay_events_dropped_total');
      const queued = await scrape('intake_relay_queue_events');
      const unacked = await scrape('intake_relay_output_unacked_events');
      expect({ dropped, queued, unacked }).toEqual({ dropped: 0, queued: 0, unacked: 0 });
      expect(received).toBe(sent + dropped + queued + unacked);
      expect(sent).toBe(intake.received.length);
    }, { timeout: 15_000 });
    relay.proc.kill('SIGTERM');
    await exited(relay.proc);
  });
});
