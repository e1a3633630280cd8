// syslog-ng (syslog() source over TLS, RFC 5424 with octet counting) as the receiving intake: it
// must parse every field the relay writes, and see the intake key as SD parameter. Then stopped
// mid-stream and restarted: nothing written after it went away may be lost.
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay, TEST_KEY } from '../helpers/relay.ts';
import { fileLines, freePort, sendTcp, startSyslogNg, syslogNgIntake } from '../helpers/peers.ts';
import { relayYaml } from '../helpers/config.ts';
import { track } from '../helpers/cleanup.ts';

const TEMPLATE = '${PRI}|${ISODATE}|${HOST}|${PROGRAM}|${PID}|${MSGID}|${.SDATA.SEKOIA@53288.intake_key}|${SDATA}|${MSG}\\n';
const intakeConfig = (port: number): ((dir: string) => string) => syslogNgIntake(port, TEMPLATE, ['frac-digits(3)']);

describe('relay -> syslog-ng', () => {
  it('syslog-ng parses every header field, the intake key and the source SD', async () => {
    const port = await freePort();
    const peer = track(startSyslogNg(intakeConfig(port)));
    const out = join(peer.dir, 'out.log');
    await peer.listening(port);
    const relay = track(await startRelay(relayYaml({ intakePort: port, output: '      timestamp: source' })));
    const tcp = relay.port('t', 'tcp/0');
    await sendTcp(
      tcp,
      [
        '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog 8710 ID47 [exampleSDID@32473 iut="3" eventSource="App"] An application event',
        '<34>Oct 11 22:14:15 bsdhost su[99]: \'su root\' failed',
        'a line without any header',
        '<13>1 2026-11-22T10:00:00.5+01:00 h app - - - unicode: héllo ✓',
      ].join('\n') + '\n',
    );
    await vi.waitFor(() => expect(fileLines(out)).toHaveLength(4), { timeout: 15_000 });
    const got = fileLines(out).map((l) => l.split('|'));
    const year = new Date().getFullYear();
    expect(got[0]).toEqual(['165', '2003-10-11T22:14:15.003+00:00', 'mymachine.example.com', 'evntslog', '8710', 'LOG', TEST_KEY,
      `[SEKOIA@53288 intake_key="${TEST_KEY}"][exampleSDID@32473 iut="3" eventSource="App"]`, 'An application event']);
    expect(got[1]!.slice(0, 2)).toEqual(['34', expect.stringMatching(new RegExp(`^${year}-10-11T22:14:15`))]);
    expect(got[1]!.slice(2)).toEqual(['bsdhost', 'su', '99', 'LOG', TEST_KEY, `[SEKOIA@53288 intake_key="${TEST_KEY}"]`, '\'su root\' failed']);
    expect(got[2]!.slice(2)).toEqual(['127.0.0.1', '', '', 'LOG', TEST_KEY, `[SEKOIA@53288 intake_key="${TEST_KEY}"]`, 'a line without any header']);
    expect(got[2]![0]).toBe('13');
    expect(got[3]).toEqual(['13', '2026-11-22T10:00:00.500+01:00', 'h', 'app', '', 'LOG', TEST_KEY, `[SEKOIA@53288 intake_key="${TEST_KEY}"]`, 'unicode: héllo ✓']);
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 4, sent: 4, balanced: true }));
  });

  it('syslog-ng stopped mid-stream and restarted: every event arrives, duplicates are counted', async () => {
    const port = await freePort();
    const peer = track(startSyslogNg(intakeConfig(port)));
    const dir = peer.dir;
    const out = join(dir, 'out.log');
    await peer.listening(port);
    const relay = track(await startRelay(relayYaml({ intakePort: port, resendWindowMs: 2000 })));
    const tcp = relay.port('t', 'tcp/0');
    const total = 20_000;
    let next = 0;
    const batch = async (n: number): Promise<void> => {
      let s = '';
      for (let i = 0; i < n && next < total; i++, next++) s += `<14>Nov 22 10:00:00 h app: seq=${next}\n`;
      await sendTcp(tcp, s);
    };
    // First part of the stream, then the intake goes away while more keeps coming.
    while (next < 8_000) await batch(500);
    await vi.waitFor(() => expect(fileLines(out).length).toBeGreaterThan(4_000), { timeout: 15_000 });
    await peer.stop('SIGTERM');
    while (next < 14_000) await batch(500);
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_output_errors_total')).toBeGreaterThan(0), { timeout: 15_000 });
    track(startSyslogNg(intakeConfig(port), dir));
    while (next < total) await batch(500);
    const seen = (): Map<string, number> => {
      const m = new Map<string, number>();
      for (const l of fileLines(out)) {
        const seq = /seq=(\d+)$/.exec(l)?.[1];
        if (seq) m.set(seq, (m.get(seq) ?? 0) + 1);
      }
      return m;
    };
    await vi.waitFor(() => expect(seen().size).toBe(total), { timeout: 30_000 });
    const counts = seen();
    let duplicates = 0;
    for (const c of counts.values()) duplicates += c - 1;
    const resent = await relay.metric('intake_relay_events_resent_total');
    console.log(`syslog-ng restart: ${total} sent, 0 lost, ${duplicates} duplicated (relay resent ${resent})`);
    expect(duplicates).toBeLessThanOrEqual(resent);
    // Acknowledged once the resend window (2 s) has passed on a healthy connection.
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: total, sent: total, dropped: 0, queued: 0, unacked: 0, balanced: true }), { timeout: 10_000 });
  });

  it('a resend window smaller than the proof distance: a connection is closed for confirmation every half window, syslog-ng answers each close, every event arrives once', async () => {
    const port = await freePort();
    const peer = track(startSyslogNg(intakeConfig(port)));
    const out = join(peer.dir, 'out.log');
    await peer.listening(port);
    // No time-based close within the test (60 s); the window's half (512 KiB) closes connections.
    const relay = track(await startRelay(relayYaml({ intakePort: port, resendWindowMs: 60_000, output: '      resend_window_bytes: 1048576' })));
    const tcp = relay.port('t', 'tcp/0');
    const total = 20_000; // about 5 MB as written: ten half windows
    let s = '';
    for (let i = 0; i < total; i++) s += `<14>Nov 22 10:00:00 h app: seq=${i} ${'x'.repeat(150)}\n`;
    await sendTcp(tcp, s);
    await vi.waitFor(() => expect(fileLines(out).length).toBeGreaterThanOrEqual(total), { timeout: 30_000 });
    const seqs = fileLines(out).map((l) => /seq=(\d+) /.exec(l)?.[1]);
    expect(new Set(seqs).size).toBe(total);
    expect(seqs).toHaveLength(total);
    // All confirmed by syslog-ng's answers to the closes (the last one's by the stop below).
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_sent_total')).toBeGreaterThan(total * 0.8), { timeout: 10_000 });
    const connects = await relay.metric('intake_relay_output_connects_total');
    expect(connects).toBeGreaterThanOrEqual(6);
    // syslog-ng offers no TLS 1.3 session to resume (it turns tickets off in its network sources):
    // every handshake is a full one (rsyslog's, which offers them: rsyslog.test.ts).
    expect(await relay.metric('intake_relay_output_tls_resumed_total')).toBe(0);
    expect(await relay.metric('intake_relay_events_resent_total')).toBe(0);
    expect(await relay.metric('intake_relay_output_errors_total')).toBe(0);
    const books0 = await books(relay, 't');
    expect(books0).toMatchObject({ received: total, dropped: 0, queued: 0, balanced: true });
  });
});
