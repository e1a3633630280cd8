// One port, many intakes: a mixed stream from several senders (distinct loopback source addresses)
// on one UDP and one TCP port, routed to four intakes; each intake's events arrive with its own key,
// exactly its events. Filters drop what they should, counted per rule; the books balance.
import dgram from 'node:dgram';
import net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay, TLS } from '../helpers/relay.ts';
import { startTestIntake } from '../helpers/peers.ts';
import { track } from '../helpers/cleanup.ts';

const KEYS = { fw: 'FwKey000000000000000000000000001', proxy: 'ProxyKey0000000000000000000000001', db: 'DbKey000000000000000000000000001', misc: 'MiscKey00000000000000000000000001' };

function yaml(port: number): string {
  const intakeYaml = (name: keyof typeof KEYS, extra = '') => `  - name: ${name}
    intake_key: ${KEYS[name]}
    output: { type: syslog, host: 127.0.0.1, port: ${port}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 100 }
${extra}`;
  const routes = `    routes:
      - match: { sender: 127.0.0.2/32 }
        intake: fw
      - match: { app_name: squid* }
        intake: proxy
      - match: { hostname: "/^db-\\\\d+$/" }
        intake: db
      - match: { message: DROPME }
        drop: true
    default: misc`;
  return `log_level: warn
metrics: { enabled: false }
intakes:
${intakeYaml('fw', `    filters:
      - description: no heartbeats
        filters: [{ field: app_name, operator: "==", value: heartbeat }]`)}
${intakeYaml('proxy')}
${intakeYaml('db', `    filters:
      - description: browser file events
        filters:
          - { field: process.name, operator: in, value: [chrome.exe, firefox.exe] }
          - { field: action.name, operator: "==", value: file-created }`)}
${intakeYaml('misc')}
listeners:
  - type: udp
    name: shared-udp
    address: 127.0.0.1
    port: 0
${routes}
  - type: tcp
    name: shared-tcp
    address: 127.0.0.1
    port: 0
${routes}
`;
}

async function udpFrom(source: string, port: number, lines: string[]): Promise<void> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, source, () => r()));
  for (const l of lines) await new Promise<void>((r) => s.send(l, port, '127.0.0.1', () => r()));
  s.close();
}

async function tcpFrom(source: string, port: number, lines: string[]): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port, localAddress: source }, () => s.end(lines.map((l) => `${l}\n`).join('')));
    s.on('error', reject);
    s.on('close', () => resolve());
  });
}

describe('one port, many intakes', () => {
  it('routes a mixed stream from several senders; each intake gets exactly its events', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(yaml(intake.port)));
    const udp = relay.daemon.topology.listenerPort('shared-udp')!;
    const tcp = relay.daemon.topology.listenerPort('shared-tcp')!;
    const want: Record<keyof typeof KEYS, string[]> = { fw: [], proxy: [], db: [], misc: [] };
    const send: Promise<void>[] = [];
    let sent = 0;
    for (const [proto, port, from] of [['udp', udp, udpFrom], ['tcp', tcp, tcpFrom]] as const) {
      // The firewall at 127.0.0.2: everything it sends is fw's, whatever the app (but heartbeats are filtered).
      const fw = Array.from({ length: 50 }, (_, i) => `<134>Nov 22 10:00:00 fw01 ${i % 10 === 0 ? 'heartbeat' : 'filterlog'}: ${proto} fw ${i}`);
      want.fw.push(...fw.filter((_, i) => i % 10 !== 0).map((l) => l.slice(l.indexOf(': ') + 2)));
      // A box at 127.0.0.3 carrying a proxy, a database and other things.
      const box = [
        ...Array.from({ length: 30 }, (_, i) => `<14>Nov 22 10:00:00 box squid[9]: ${proto} proxy ${i}`),
        ...Array.from({ length: 20 }, (_, i) => `<14>Nov 22 10:00:00 db-${i} postgres: ${proto} db ${i}`),
        `<14>Nov 22 10:00:00 db-7 agent: {"process": {"name": "chrome.exe"}, "action": {"name": "file-created"}, "p": "${proto}"}`,
        `<14>Nov 22 10:00:00 db-7 agent: {"process": {"name": "chrome.exe"}, "action": {"name": "connected-to"}, "p": "${proto}"}`,
        `<14>Nov 22 10:00:00 web1 nginx: ${proto} please DROPME`,
        ...Array.from({ length: 10 }, (_, i) => `<14>Nov 22 10:00:00 web1 nginx: ${proto} misc ${i}`),
      ];
      want.proxy.push(...box.slice(0, 30).map((l) => l.slice(l.indexOf(': ') + 2)));
      want.db.push(...box.slice(30, 50).map((l) => l.slice(l.indexOf(': ') + 2)), box[51]!.slice(box[51]!.indexOf(': ') + 2));
      want.misc.push(...box.slice(53).map((l) => l.slice(l.indexOf(': ') + 2)));
      send.push(from('127.0.0.2', port, fw), from('127.0.0.3', port, box));
      sent += fw.length + box.length;
    }
    await Promise.all(send);
    const total = Object.values(want).reduce((n, w) => n + w.length, 0);
    await vi.waitFor(() => expect(intake.received).toHaveLength(total), { timeout: 10_000 });
    for (const name of Object.keys(KEYS) as (keyof typeof KEYS)[]) {
      const got = intake.received.filter((m) => m.intakeKey === KEYS[name]).map((m) => m.message);
      expect(got.sort(), name).toEqual(want[name].sort());
    }
    expect(await relay.metric('intake_relay_route_dropped_total', { reason: 'route_drop' })).toBe(2);
    expect(await relay.metric('intake_relay_events_filtered_total', { intake: 'fw', rule: 'no heartbeats' })).toBe(10);
    expect(await relay.metric('intake_relay_events_filtered_total', { intake: 'db', rule: 'browser file events' })).toBe(2);
    // The books, per intake, and the listener's own drops: everything sent is accounted for.
    let accounted = 2;
    for (const name of Object.keys(KEYS)) {
      await vi.waitFor(async () => expect(await books(relay, name)).toMatchObject({ queued: 0, unacked: 0, balanced: true }));
      accounted += (await books(relay, name)).received;
    }
    expect(accounted).toBe(sent);
  });
});
