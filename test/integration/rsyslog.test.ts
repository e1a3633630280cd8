// rsyslog as the sender: omfwd with octet-counted framing over plain TCP, and over TLS (gtls) with a
// client certificate to the relay's TLS input that requires one (mutual TLS). And rsyslog as the
// intake: imtcp over TLS with the OpenSSL driver, which offers sessions the relay resumes.
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay, TEST_KEY, TLS, type RunningRelay } from '../helpers/relay.ts';
import { join } from 'node:path';
import { fileLines, freePort, sendTcp, startRsyslog, startTestIntake, type TestIntake } from '../helpers/peers.ts';
import { relayYaml } from '../helpers/config.ts';
import { track } from '../helpers/cleanup.ts';
import { syslogLines } from '../helpers/lines.ts';

/** rsyslog receiving on `inPort` (imtcp) and forwarding everything with `action`. */
function rsyslogForwarder(inPort: number, action: string, global = ''): (dir: string) => string {
  return () => `${global}
module(load="imtcp")
input(type="imtcp" address="127.0.0.1" port="${inPort}" ruleset="fwd")
ruleset(name="fwd" queue.type="LinkedList" queue.size="100000") {
  action(type="omfwd" target="127.0.0.1" ${action} action.resumeRetryCount="-1" action.resumeInterval="1")
}`;
}

const TLS_INPUT_REQUIRING_CLIENT_CERT = `      - type: tcp
        name: tls-in
        address: 127.0.0.1
        port: 0
        tls: { cert_file: ${TLS}server.crt, key_file: ${TLS}server.key, client_ca_file: ${TLS}ca.crt }`;

/** The intake emulator, and a relay with `inputs` forwarding to it. */
async function relayWithInput(inputs: string): Promise<{ intake: TestIntake; relay: RunningRelay }> {
  const intake = track(await startTestIntake());
  const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs })));
  return { intake, relay };
}

async function feed(port: number, n: number, tag: string): Promise<void> {
  await sendTcp(port, syslogLines(0, n, (i) => `${tag} event ${i} ünïcödé`, `<14>Nov 22 10:00:00 feeder ${tag}[42]: `));
}

describe('rsyslog -> relay', () => {
  it('omfwd octet-counted over TCP: every event once, fields intact', async () => {
    const { intake, relay } = await relayWithInput('      - { type: tcp, address: 127.0.0.1, port: 0 }');
    const inPort = await freePort();
    const peer = track(startRsyslog(rsyslogForwarder(inPort, `port="${relay.port('t', 'tcp/0')}" protocol="tcp" TCP_Framing="octet-counted" template="RSYSLOG_SyslogProtocol23Format"`)));
    await peer.listening(inPort);
    const n = 5_000;
    await feed(inPort, n, 'octet');
    await vi.waitFor(() => expect(intake.received.length).toBeGreaterThanOrEqual(n), { timeout: 20_000 });
    const bodies = new Set(intake.received.map((m) => m.message));
    expect(bodies.size).toBe(n);
    expect(intake.received).toHaveLength(n);
    // rsyslog's %msg% keeps the space after the BSD tag's colon; the relay forwards MSG as sent.
    const first = intake.received.find((m) => m.message === ' octet event 0 ünïcödé')!;
    expect(first).toMatchObject({ pri: 14, hostname: 'feeder', appName: 'octet', procId: '42', intakeKey: TEST_KEY, problems: [] });
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: n, sent: n, dropped: 0, balanced: true }), { timeout: 5_000 });
  });

  it('omfwd over TLS with a client certificate, to a TLS input that requires one', async () => {
    const { intake, relay } = await relayWithInput(TLS_INPUT_REQUIRING_CLIENT_CERT);
    const inPort = await freePort();
    const peer = track(
      startRsyslog(
        rsyslogForwarder(
          inPort,
          `port="${relay.port('t', 'tls-in')}" protocol="tcp" TCP_Framing="octet-counted" StreamDriver="gtls" StreamDriverMode="1" StreamDriverAuthMode="x509/name" StreamDriverPermittedPeers="localhost"`,
          `global(DefaultNetstreamDriverCAFile="${TLS}ca.crt" DefaultNetstreamDriverCertFile="${TLS}client.crt" DefaultNetstreamDriverKeyFile="${TLS}client.key")`,
        ),
      ),
    );
    await peer.listening(inPort);
    const n = 2_000;
    await feed(inPort, n, 'tls');
    await vi.waitFor(() => expect(intake.received.length).toBeGreaterThanOrEqual(n), { timeout: 20_000 });
    expect(new Set(intake.received.map((m) => m.message)).size).toBe(n);
    expect(intake.received[0]).toMatchObject({ appName: 'tls', hostname: 'feeder', problems: [] });
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: n, sent: n, dropped: 0, balanced: true }), { timeout: 5_000 });
  });

  it('a sender without a client certificate is refused and counted', async () => {
    const { relay } = await relayWithInput(TLS_INPUT_REQUIRING_CLIENT_CERT);
    const tls = await import('node:tls');
    const port = relay.port('t', 'tls-in');
    await new Promise<void>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port, ca: undefined, rejectUnauthorized: false }, () => s.write('<13>sneaky\n'));
      s.on('error', () => resolve());
      s.on('close', () => resolve());
    });
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_input_connections_rejected_total', { reason: 'tls_handshake' })).toBe(1));
    expect(await relay.metric('intake_relay_events_received_total')).toBe(0);
  });
});

describe('relay -> rsyslog as the intake', () => {
  it('imtcp over TLS (OpenSSL driver): every connection after the first resumes the TLS session rsyslog offered; every event once', async () => {
    const port = await freePort();
    const peer = track(
      startRsyslog(
        (dir) => `global(DefaultNetstreamDriverCAFile="${TLS}ca.crt" DefaultNetstreamDriverCertFile="${TLS}server.crt" DefaultNetstreamDriverKeyFile="${TLS}server.key")
module(load="imtcp" StreamDriver.Name="ossl" StreamDriver.Mode="1" StreamDriver.AuthMode="anon")
input(type="imtcp" address="127.0.0.1" port="${port}" ruleset="in")
template(name="msg" type="string" string="%msg%\\n")
ruleset(name="in") { action(type="omfile" file="${dir}/out.log" template="msg") }`,
      ),
    );
    await peer.listening(port);
    // Each batch is closed for confirmation 200 ms after it was written: a connection per send.
    const relay = track(await startRelay(relayYaml({ intakePort: port })));
    const tcp = relay.port('t', 'tcp/0');
    const sends = 5;
    for (let k = 0; k < sends; k++) {
      await sendTcp(tcp, syslogLines(k * 100, (k + 1) * 100, (i) => `seq=${i}`, '<14>Nov 22 10:00:00 h app: '));
      await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_sent_total')).toBe((k + 1) * 100), { timeout: 10_000 });
    }
    const connects = await relay.metric('intake_relay_output_connects_total');
    expect(connects).toBeGreaterThanOrEqual(sends);
    expect(await relay.metric('intake_relay_output_tls_resumed_total')).toBe(connects - 1);
    const out = fileLines(join(peer.dir, 'out.log'));
    expect(new Set(out).size).toBe(sends * 100);
    expect(out).toHaveLength(sends * 100);
    expect(await books(relay, 't')).toMatchObject({ received: sends * 100, sent: sends * 100, dropped: 0, balanced: true });
  });

  it('imtcp over TLS requiring a client certificate (x509/name), which aborts a resumed handshake: the relay connects again at once without resuming, and stops offering sessions; no error, every event once', async () => {
    const port = await freePort();
    const peer = track(
      startRsyslog(
        (dir) => `global(DefaultNetstreamDriverCAFile="${TLS}ca.crt" DefaultNetstreamDriverCertFile="${TLS}server.crt" DefaultNetstreamDriverKeyFile="${TLS}server.key")
module(load="imtcp" StreamDriver.Name="ossl" StreamDriver.Mode="1" StreamDriver.AuthMode="x509/name" PermittedPeer=["relay-client"])
input(type="imtcp" address="127.0.0.1" port="${port}" ruleset="in")
template(name="msg" type="string" string="%msg%\\n")
ruleset(name="in") { action(type="omfile" file="${dir}/out.log" template="msg") }`,
      ),
    );
    await peer.listening(port);
    const relay = track(await startRelay(relayYaml({ intakePort: port, output: `      client_cert_file: ${TLS}client.crt\n      client_key_file: ${TLS}client.key` })));
    const tcp = relay.port('t', 'tcp/0');
    const sends = 4;
    for (let k = 0; k < sends; k++) {
      await sendTcp(tcp, syslogLines(k * 100, (k + 1) * 100, (i) => `seq=${i}`, '<14>Nov 22 10:00:00 h app: '));
      await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_sent_total')).toBe((k + 1) * 100), { timeout: 10_000 });
    }
    expect(await relay.metric('intake_relay_output_connects_total')).toBeGreaterThanOrEqual(sends);
    expect(await relay.metric('intake_relay_output_tls_resumed_total')).toBe(0);
    expect(await relay.metric('intake_relay_output_errors_total')).toBe(0);
    const out = fileLines(join(peer.dir, 'out.log'));
    expect(new Set(out).size).toBe(sends * 100);
    expect(out).toHaveLength(sends * 100);
    expect(await books(relay, 't')).toMatchObject({ received: sends * 100, sent: sends * 100, dropped: 0, balanced: true });
  });
});
