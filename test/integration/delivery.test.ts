// What happens when things go wrong: TLS refusals, the intake vanishing, full queues, bad input,
// shutdown. Every test checks the books: received = sent + dropped + queued + unacknowledged.
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { IntakeEmulator, type ReceivedMessage } from '../../src/emulator/intake-emulator.ts';
import { books, startRelay, TEST_KEY, TLS, errText } from '../helpers/relay.ts';
import { freePort, sendTcp, startTestIntake, type TestIntake } from '../helpers/peers.ts';
import { relayYaml } from '../helpers/config.ts';
import { track, trackServer } from '../helpers/cleanup.ts';
import { startFaultyIntake } from '../helpers/faulty-intake.ts';
import { syslogLines } from '../helpers/lines.ts';

async function intakeWith(cert: string, port = 0): Promise<{ emulator: IntakeEmulator; received: ReceivedMessage[] }> {
  const received: ReceivedMessage[] = [];
  const emulator = track(new IntakeEmulator({ port, cert: readFileSync(`${TLS}${cert}.crt`), key: readFileSync(`${TLS}${cert}.key`), onMessage: (m) => received.push(m) }));
  await emulator.start();
  return { emulator, received };
}

const lines = (n: number, tag = 'e'): string => syslogLines(0, n, (i) => `${tag}${i}`, '<14>Nov 22 10:00:00 h app: ');

describe('TLS failures', () => {
  it.each([
    ['an untrusted certificate', 'other', 'ERELAY_TLS_CERT', /not accepted .*ca_file/],
    ['a certificate for another name', 'wrong-name', 'ERELAY_TLS_HOSTNAME', /does not match the host name/],
  ])('%s: a clear error, events kept, delivered once the intake is right', async (_what, cert, code, text) => {
    const port = await freePort();
    const bad = cert === 'other' ? await selfSignedIntake(port) : await intakeWith(cert, port);
    const relay = track(await startRelay(relayYaml({ intakePort: port })));
    await sendTcp(relay.port('t', 'tcp/0'), lines(50));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_output_errors_total', { code })).toBeGreaterThan(0), { timeout: 10_000 });
    const err = relay.logs.find((l) => l.code === code);
    expect(errText(err)).toMatch(text);
    expect(errText(err)).toContain(`127.0.0.1:${port}`);
    expect(await books(relay, 't')).toMatchObject({ received: 50, sent: 0, dropped: 0, queued: 50, balanced: true });
    await bad.emulator.stop();
    const good = await intakeWith('server', port);
    await vi.waitFor(() => expect(good.received).toHaveLength(50), { timeout: 10_000 });
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ sent: 50, queued: 0, balanced: true }));
    expect(relay.logText()).not.toContain(TEST_KEY);
  });
});

/** An intake whose certificate no configured CA signed (the emulator's own throwaway one). */
async function selfSignedIntake(port: number) {
  const emulator = track(new IntakeEmulator({ port }));
  await emulator.start();
  return { emulator };
}

describe('the intake goes away', () => {
  it('connection cut under load: what was written in the window is written again, nothing lost', async () => {
    let intake: TestIntake = track(await startTestIntake());
    const port = intake.port;
    const relay = track(await startRelay(relayYaml({ intakePort: port, resendWindowMs: 2_000 })));
    const tcp = relay.port('t', 'tcp/0');
    await sendTcp(tcp, lines(3_000, 'a'));
    await vi.waitFor(() => expect(intake.received.length).toBeGreaterThan(1_000), { timeout: 10_000 });
    const before = intake.received;
    await intake.stop(); // sockets destroyed: like a crash, unread bytes are lost
    await sendTcp(tcp, lines(2_000, 'b'));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_output_connected')).toBe(0));
    intake = track(await startTestIntake(port));
    const unique = (): Set<string> => new Set([...before, ...intake.received].map((m) => m.message));
    await vi.waitFor(() => expect(unique().size).toBe(5_000), { timeout: 15_000 });
    const duplicates = before.length + intake.received.length - 5_000;
    expect(duplicates).toBeLessThanOrEqual(await relay.metric('intake_relay_events_resent_total'));
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 5_000, sent: 5_000, dropped: 0, balanced: true }), { timeout: 10_000 });
  });
});

describe('full queues', () => {
  it('block: a TCP sender is paused while the intake is down, and nothing is dropped', async () => {
    const port = await freePort();
    const relay = track(await startRelay(relayYaml({ intakePort: port, queue: '    queue: { max_events: 200, when_full: block }' })));
    const done = sendTcp(relay.port('t', 'tcp/0'), lines(20_000));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_input_pauses_total')).toBeGreaterThan(0), { timeout: 10_000 });
    const queued = (await books(relay, 't')).queued;
    expect(queued).toBeLessThan(20_000);
    const intake = track(await startTestIntake(port));
    await done;
    await vi.waitFor(() => expect(intake.received).toHaveLength(20_000), { timeout: 20_000 });
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 20_000, sent: 20_000, dropped: 0, balanced: true }));
  });

  it('UDP cannot wait: datagrams that do not fit are dropped and counted as queue_full', async () => {
    const port = await freePort();
    const relay = track(await startRelay(relayYaml({ intakePort: port, queue: '    queue: { max_events: 100 }' })));
    const udp = relay.port('t', 'udp/0');
    const sock = dgram.createSocket('udp4');
    // Paced so that the kernel's socket buffer never overflows: this tests the queue, not the kernel.
    for (let i = 0; i < 300; i++) {
      await new Promise<void>((r) => sock.send(`<14>dgram ${i}`, udp, '127.0.0.1', () => r()));
      if (i % 50 === 49) await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_received_total')).toBe(i + 1));
    }
    sock.close();
    expect(await relay.metric('intake_relay_udp_kernel_drops_total')).toBe(0);
    const b = await books(relay, 't');
    expect(b).toMatchObject({ queued: 100, dropped: 200, balanced: true });
    expect(await relay.metric('intake_relay_events_dropped_total', { reason: 'queue_full' })).toBe(200);
  });

  it('datagrams the kernel drops before the relay reads them are counted too', async () => {
    const port = await freePort();
    const relay = track(await startRelay(relayYaml({ intakePort: port, queue: '    queue: { max_events: 1000000 }' })));
    const udp = relay.port('t', 'udp/0');
    // A burst from another process while the relay's event loop is blocked: the socket buffer
    // must overflow, and the kernel's drops must show up in the metrics.
    const sent = 5_000;
    const child = spawn(process.execPath, ['-e', `
      const s = require('node:dgram').createSocket('udp4'); const p = Buffer.alloc(1000, 97); let n = 0;
      for (let i = 0; i < ${sent}; i++) s.send(p, ${udp}, '127.0.0.1', () => { if (++n === ${sent}) s.close(); });`]);
    const exited = new Promise((r) => child.once('exit', r));
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_500);
    await exited;
    await vi.waitFor(async () => {
      const received = await relay.metric('intake_relay_events_received_total');
      const kernel = await relay.metric('intake_relay_udp_kernel_drops_total');
      expect(kernel).toBeGreaterThan(0);
      expect(received + kernel).toBe(sent);
    }, { timeout: 10_000 });
  });

  it('drop_newest: TCP events beyond the limit are refused and counted', async () => {
    const port = await freePort();
    const relay = track(await startRelay(relayYaml({ intakePort: port, queue: '    queue: { max_events: 100, when_full: drop_newest }' })));
    await sendTcp(relay.port('t', 'tcp/0'), lines(1_000));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_received_total')).toBe(1_000));
    expect(await books(relay, 't')).toMatchObject({ queued: 100, dropped: 900, balanced: true });
  });
});

describe('bad input', () => {
  it('oversized events are dropped or truncated, invalid UTF-8 repaired, all counted', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(
      relayYaml({
        intakePort: intake.port,
        inputs: `      - { type: tcp, name: drop, address: 127.0.0.1, port: 0, max_message_bytes: 1000 }
      - { type: tcp, name: cut, address: 127.0.0.1, port: 0, max_message_bytes: 1000, oversize: truncate }`,
      }),
    ));
    const big = `<13>${'x'.repeat(5_000)}`;
    const bad = Buffer.concat([Buffer.from('<13>bad \xff\xfe bytes\n', 'latin1'), Buffer.from('<13>fine\n')]);
    await sendTcp(relay.port('t', 'drop'), Buffer.concat([Buffer.from(`${big}\n${Buffer.byteLength(big)} ${big}<13>after\n`), bad]));
    await sendTcp(relay.port('t', 'cut'), `${big}\n<13>${'é'.repeat(2_000)}\n`);
    await vi.waitFor(() => expect(intake.received).toHaveLength(5), { timeout: 10_000 });
    expect(await relay.metric('intake_relay_events_dropped_total', { reason: 'too_large' })).toBe(2);
    expect(await relay.metric('intake_relay_events_modified_total', { reason: 'truncated' })).toBe(2);
    expect(await relay.metric('intake_relay_events_modified_total', { reason: 'invalid_utf8' })).toBe(1);
    const msgs = intake.received.map((m) => m.message);
    expect(msgs).toContain('after');
    expect(msgs).toContain('fine');
    expect(msgs).toContain('bad \uFFFD\uFFFD bytes');
    const cut = intake.received.filter((m) => m.message.startsWith('é'));
    expect(cut).toHaveLength(1);
    expect(Buffer.byteLength(`<13>${cut[0]!.message}`)).toBeLessThanOrEqual(1000);
    expect(cut[0]!.message).not.toContain('\uFFFD');
    for (const m of intake.received) expect(m.problems).toEqual([]);
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 7, sent: 5, dropped: 2, balanced: true }));
  });

  it('never sends the intake more than its 250 KiB an event: a message the header or a repair made longer is cut, counted', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port })));
    // The default max_message_bytes (256000) exactly, which the header makes longer; bytes that are
    // no UTF-8 (each becomes 3 bytes: U+FFFD); and a line that fits with its header.
    const exact = `<13>${'x'.repeat(256_000 - 5)}`;
    const invalid = Buffer.concat([Buffer.from('<13>'), Buffer.alloc(200_000, 0xff), Buffer.from('\n')]);
    const euro = `<13>${'€'.repeat(80_000)}`; // 240,004 bytes: cut on a character boundary
    const small = '<13>small';
    await sendTcp(relay.port('t', 'tcp/0'), Buffer.concat([Buffer.from(`${exact}\n`), invalid, Buffer.from(`${euro}\n${small}\n`)]));
    await vi.waitFor(() => expect(intake.received).toHaveLength(4), { timeout: 20_000 });
    for (const m of intake.received) {
      expect(m.problems).toEqual([]);
      expect(Buffer.byteLength(m.raw)).toBeLessThanOrEqual(250 * 1024);
    }
    // Cut to the limit, or up to 3 bytes short of it where a character would be split.
    expect(intake.received.map((m) => Buffer.byteLength(m.raw) > 250 * 1024 - 4)).toEqual([true, true, false, false]);
    expect(intake.received[1]!.message).toMatch(/^\uFFFD+$/);
    expect(intake.received[2]!.message).toBe('€'.repeat(80_000));
    expect(intake.received[3]!.message).toBe('small');
    expect(await relay.metric('intake_relay_events_modified_total', { reason: 'intake_limit' })).toBe(2);
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 4, sent: 4, dropped: 0, balanced: true }));
  });
});

describe('idle senders', () => {
  it('a connection silent for idle_timeout_ms is closed and counted', async () => {
    const port = await freePort();
    const relay = track(await startRelay(relayYaml({ intakePort: port, inputs: '      - { type: tcp, address: 127.0.0.1, port: 0, idle_timeout_ms: 200 }' })));
    const net = await import('node:net');
    const s = net.connect(relay.port('t', 'tcp/0'), '127.0.0.1');
    s.write('<13>one line, then silence\n');
    await new Promise((r) => s.once('close', r));
    expect(await relay.metric('intake_relay_input_connections_rejected_total', { reason: 'idle_timeout' })).toBe(1);
    expect(await relay.metric('intake_relay_events_received_total')).toBe(1);
  });
});

describe('shutdown', () => {
  it('drains what is queued and confirms it with the intake before exiting', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, resendWindowMs: 60_000 })));
    await sendTcp(relay.port('t', 'tcp/0'), lines(1_000));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_received_total')).toBe(1_000));
    const report = await relay.stop();
    // Confirmed only as the stop closed the connection: all of it delivered while stopping.
    expect(report).toMatchObject({ delivered: 1_000, kept: 0, lost: 0 });
    expect(relay.logs.at(-1)).toMatchObject({ level: 'info', delivered: 1_000, kept: 0, lost: 0, msg: 'Stopped: every queued event was delivered (1000 while stopping).' });
    expect(intake.received).toHaveLength(1_000);
    expect(await books(relay, 't')).toMatchObject({ sent: 1_000, dropped: 0, balanced: true });
  });

  it('shutdown_delay_ms: after the signal the inputs take events that long (not ready meanwhile), then the stop drains them', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, extra: 'shutdown_timeout_ms: 2000\nshutdown_delay_ms: 1500' })));
    const stopping = relay.stop();
    expect(relay.daemon.phase).toBe('draining');
    expect(relay.daemon.view.ready()).toBe(false);
    // The application's last lines, sent after the signal.
    await sendTcp(relay.port('t', 'tcp/0'), lines(50));
    const report = await stopping;
    expect(report).toMatchObject({ lost: 0, kept: 0 });
    expect(intake.received).toHaveLength(50);
    expect(relay.logs.some((l) => l.msg === 'Stopping soon: inputs still take events until shutdown_delay_ms has passed.')).toBe(true);
  });

  it('reports and counts what could not be delivered before the timeout', async () => {
    const port = await freePort();
    const relay = track(await startRelay(relayYaml({ intakePort: port, extra: 'shutdown_timeout_ms: 300' })));
    await sendTcp(relay.port('t', 'tcp/0'), lines(100));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_received_total')).toBe(100));
    const report = await relay.stop();
    expect(report.lost).toBe(100);
    expect(await relay.metric('intake_relay_events_dropped_total', { reason: 'shutdown' })).toBe(100);
    expect(relay.logs.at(-1)).toMatchObject({ level: 'error', delivered: 0, kept: 0, lost: 100, per_intake: { t: { delivered: 0, kept: 0, lost: 100 } } });
    expect(relay.logs.at(-1)?.msg).toMatch(/^Stopped: 100 events could not be delivered before the shutdown timeout and are lost/);
  });

  it('a connection lost while the stop waits for the intake to confirm is opened again and its window written again: nothing undelivered', async () => {
    // The first connection reads nothing and never answers the relay's close; later ones read everything.
    const intake = track(await startFaultyIntake((i) => (i === 0 ? { kind: 'blackhole', resetAfterMs: 60_000 } : { kind: 'read' })));
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, resendWindowMs: 60_000, extra: 'shutdown_timeout_ms: 5000', output: '      write_timeout_ms: 500' })));
    await sendTcp(relay.port('t', 'tcp/0'), lines(500));
    // All written on the first connection, none confirmed yet.
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_output_unacked_events')).toBe(500), { timeout: 10_000 });
    expect(intake.connections).toBe(1);
    const report = await relay.stop();
    expect(report.lost).toBe(0);
    expect(new Set(intake.received.map((m) => m.message)).size).toBe(500);
    expect(intake.connections).toBe(2);
    expect(await relay.metric('intake_relay_output_errors_total', { code: 'ERELAY_WRITE_TIMEOUT' })).toBe(1);
    expect(await relay.metric('intake_relay_events_resent_total')).toBe(500);
    expect(await books(relay, 't')).toMatchObject({ received: 500, sent: 500, dropped: 0, queued: 0, unacked: 0, balanced: true });
  });

  it('a window lost during the stop is written again until the deadline; what is unconfirmed then is reported and counted as dropped, once', async () => {
    // No connection ever answers the relay's close.
    const intake = track(await startFaultyIntake(() => ({ kind: 'blackhole', resetAfterMs: 60_000 })));
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, resendWindowMs: 60_000, extra: 'shutdown_timeout_ms: 2000', output: '      write_timeout_ms: 300' })));
    await sendTcp(relay.port('t', 'tcp/0'), lines(500));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_output_unacked_events')).toBe(500), { timeout: 10_000 });
    const report = await relay.stop();
    expect(report.lost).toBe(500);
    // Opened again (after the backoff) and written again while the deadline allowed.
    expect(intake.connections).toBeGreaterThanOrEqual(2);
    expect(await relay.metric('intake_relay_events_resent_total')).toBeGreaterThanOrEqual(500);
    const received = await relay.metric('intake_relay_events_received_total');
    const sent = await relay.metric('intake_relay_events_sent_total');
    const dropped = await relay.metric('intake_relay_events_dropped_total');
    expect({ received, sent, dropped }).toEqual({ received: 500, sent: 0, dropped: 500 });
    expect(await relay.metric('intake_relay_events_dropped_total', { reason: 'shutdown' })).toBe(500);
  });
});

describe('output client certificate', () => {
  it('presents client_cert_file to an intake that requires one', async () => {
    const tls = await import('node:tls');
    const got: string[] = [];
    let peerCn = '';
    const server = tls.createServer(
      { cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`), ca: readFileSync(`${TLS}ca.crt`), requestCert: true, rejectUnauthorized: true },
      (s) => {
        peerCn = String(s.getPeerCertificate().subject?.CN);
        s.on('data', (d: Buffer) => got.push(d.toString()));
        s.on('end', () => s.end());
      },
    );
    trackServer(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as import('node:net').AddressInfo).port;
    const relay = track(await startRelay(relayYaml({ intakePort: port, output: `      client_cert_file: ${TLS}client.crt\n      client_key_file: ${TLS}client.key` })));
    await sendTcp(relay.port('t', 'tcp/0'), '<13>with a client certificate\n');
    await vi.waitFor(() => expect(got.join('')).toContain('with a client certificate'));
    expect(peerCn).toBe('relay-client');
  });
});

describe('readiness', () => {
  it('readiness: delivering: /readyz turns 503 when an intake has a backlog and no delivery for stall_timeout_ms, and 200 again once it recovers', async () => {
    const port = await freePort();
    const relay = track(await startRelay(relayYaml({ intakePort: port, extra: 'shutdown_timeout_ms: 500' }).replace('metrics: { enabled: false }', 'metrics: { address: 127.0.0.1, port: 0, stall_timeout_ms: 300, readiness: delivering }')));
    const ops = `http://127.0.0.1:${relay.daemon.opsPort}`;
    expect((await fetch(`${ops}/readyz`)).status).toBe(200); // nothing queued: nothing stalled
    await sendTcp(relay.port('t', 'tcp/0'), lines(20));
    await vi.waitFor(async () => expect((await fetch(`${ops}/readyz`)).status).toBe(503), { timeout: 5_000 });
    const body = (await (await fetch(`${ops}/readyz`)).json()) as { ready: boolean; intakes: { name: string; stalled: boolean; queued_events: number; last_error: string }[] };
    expect(body.ready).toBe(false);
    expect(body.intakes[0]).toMatchObject({ name: 't', stalled: true, queued_events: 20 });
    expect(body.intakes[0]!.last_error).toMatch(/refused/);
    const intake = track(await startTestIntake(port));
    await vi.waitFor(() => expect(intake.received).toHaveLength(20), { timeout: 10_000 });
    await vi.waitFor(async () => expect((await fetch(`${ops}/readyz`)).status).toBe(200), { timeout: 5_000 });
  });

  it('by default (readiness: accepting) a stalled intake stays ready: its queue still takes events; it shows in /status and the metrics; a full queue under block is not ready', async () => {
    const port = await freePort();
    const relay = track(await startRelay(relayYaml({ intakePort: port, extra: 'shutdown_timeout_ms: 500', queue: '    queue: { max_events: 50, when_full: block }' })
      .replace('metrics: { enabled: false }', 'metrics: { address: 127.0.0.1, port: 0, stall_timeout_ms: 300 }')));
    const ops = `http://127.0.0.1:${relay.daemon.opsPort}`;
    const status = async () => (await (await fetch(`${ops}/status`)).json()) as { ready: boolean; readiness: string; intakes: { stalled: boolean; accepting: boolean }[] };
    await sendTcp(relay.port('t', 'tcp/0'), lines(20));
    await vi.waitFor(async () => expect((await status()).intakes[0]).toMatchObject({ stalled: true, accepting: true }), { timeout: 5_000 });
    expect((await fetch(`${ops}/readyz`)).status).toBe(200);
    expect(await status()).toMatchObject({ ready: true, readiness: 'accepting' });
    expect(await relay.metric('intake_relay_output_stalled', { intake: 't' })).toBe(1);
    expect(await relay.metric('intake_relay_output_seconds_since_delivery', { intake: 't' })).toBeGreaterThanOrEqual(0);
    // 50 more fill the queue: the TCP sender is paused, and the relay cannot take more.
    void sendTcp(relay.port('t', 'tcp/0'), lines(100)).catch(() => {});
    await vi.waitFor(async () => expect((await fetch(`${ops}/readyz`)).status).toBe(503), { timeout: 5_000 });
    expect((await status()).intakes[0]).toMatchObject({ accepting: false });
    const intake = track(await startTestIntake(port));
    await vi.waitFor(() => expect(intake.received.length).toBe(120), { timeout: 10_000 });
    await vi.waitFor(async () => expect((await fetch(`${ops}/readyz`)).status).toBe(200), { timeout: 5_000 });
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_output_stalled', { intake: 't' })).toBe(0));
  });
});
