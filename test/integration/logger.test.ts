// util-linux logger as the sender (UDP, TCP, octet-counted TCP), the intake emulator as the intake.
import { hostname } from 'node:os';
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay, TEST_KEY } from '../helpers/relay.ts';
import { logger, startTestIntake } from '../helpers/peers.ts';
import { relayYaml } from '../helpers/config.ts';
import { track } from '../helpers/cleanup.ts';

describe('logger -> relay -> intake', () => {
  it('forwards UDP, TCP and octet-counted TCP with every header field, and the books balance', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port })));
    const udp = relay.port('t', 'udp/0');
    const tcp = relay.port('t', 'tcp/0');
    logger(['-n', '127.0.0.1', '-P', String(udp), '-d', '--rfc3164', '-t', 'udpapp', '-p', 'local0.info', '--id=111', '--', 'hello over udp']);
    logger(['-n', '127.0.0.1', '-P', String(tcp), '-T', '--rfc5424', '-t', 'tcpapp', '-p', 'auth.warning', '--id=222', '--msgid', 'M1', '--', 'hello over tcp']);
    logger(['-n', '127.0.0.1', '-P', String(tcp), '-T', '--octet-count', '--rfc5424', '-t', 'octapp', '--sd-id', 'ex@32473', '--sd-param', 'k="v\\]"', '--', 'héllo wörld ✓']);
    await vi.waitFor(() => expect(intake.received).toHaveLength(3), { timeout: 10_000 });
    const byApp = Object.fromEntries(intake.received.map((m) => [m.appName, m]));
    for (const m of intake.received) {
      expect(m.problems).toEqual([]);
      expect(m.intakeKey).toBe(TEST_KEY);
      expect(m.msgId).toBe('LOG');
    }
    const host = hostname().split('.')[0]!;
    expect(byApp.udpapp).toMatchObject({ pri: 16 * 8 + 6, procId: '111', message: 'hello over udp', extraSd: '' });
    expect(byApp.udpapp!.hostname.split('.')[0]).toBe(host);
    expect(byApp.tcpapp).toMatchObject({ pri: 4 * 8 + 4, procId: '222', message: 'hello over tcp' });
    expect(byApp.tcpapp!.extraSd).toMatch(/^\[timeQuality [^\]]*\]$/);
    expect(byApp.octapp!.message).toBe('héllo wörld ✓');
    expect(byApp.octapp!.extraSd).toContain('[ex@32473 k="v\\]"]');
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 3, sent: 3, dropped: 0, queued: 0, unacked: 0, balanced: true }));
    expect(intake.protocolErrors).toEqual([]);
    expect(relay.logText()).not.toContain(TEST_KEY);
  });
});
