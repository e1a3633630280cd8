// A reload that changes an intake's output type while the old output holds events it could not
// confirm: they are counted as dropped (shutdown) and settled, so the queue's settled mark moves
// on (file checkpoints, and the answers a RELP input owes its senders, would otherwise wait for
// them forever).
import net from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { startRelay, TEST_KEY, TLS } from '../helpers/relay.ts';
import { freePort, sendTcp, startTestIntake } from '../helpers/peers.ts';
import { track, trackServer } from '../helpers/cleanup.ts';
import { syslogLines } from '../helpers/lines.ts';

/** A RELP server that opens sessions and never answers a message. */
async function mute(): Promise<number> {
  const server = trackServer(
    net.createServer((s) => {
      s.once('data', (d) => {
        const txnr = /^(\d+) open /.exec(d.toString('latin1'))?.[1] ?? '1';
        const offers = '200 OK\nrelp_version=0\ncommands=syslog';
        s.write(`${txnr} rsp ${offers.length} ${offers}\n`);
      });
      s.on('error', () => {});
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

const yaml = (input: number, output: string) => `metrics: { enabled: false }
shutdown_timeout_ms: 500
intakes:
  - name: a
    intake_key: ${TEST_KEY}
    inputs: [{ type: tcp, address: 127.0.0.1, port: ${input} }]
    output: ${output}
`;

describe('reload: an output of another type takes over', () => {
  it('what the old RELP output could not confirm is counted as dropped and settled: the settled mark reaches the end', async () => {
    const relpPort = await mute();
    const input = await freePort();
    const relay = track(await startRelay(yaml(input, `{ type: relp, host: 127.0.0.1, port: ${relpPort}, tls: false, ack_timeout_ms: 600000 }`)));
    await sendTcp(input, syslogLines(0, 50, (i) => `r ${i}`));
    const queue = relay.daemon.topology.intakes()[0]!.queue;
    await vi.waitFor(() => expect(queue.nextSeq).toBe(50));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_output_unacked_events', { intake: 'a' })).toBe(50));
    expect(queue.settledBelow).toBe(0);
    const intake = track(await startTestIntake());
    await relay.daemon.reload(parseConfig(yaml(input, `{ type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: ${TLS}ca.crt }`), 'v2.yaml', {}));
    await vi.waitFor(() => expect(queue.settledBelow).toBe(50), { timeout: 10_000 });
    expect(await relay.metric('intake_relay_events_dropped_total', { intake: 'a', reason: 'shutdown' })).toBe(50);
    // New events go through the new output and settle too.
    await sendTcp(input, syslogLines(50, 60, (i) => `s ${i}`));
    await vi.waitFor(() => expect(queue.settledBelow).toBe(60), { timeout: 10_000 });
    expect(intake.received).toHaveLength(10);
  });
});
