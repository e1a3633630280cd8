// The official forwarder's intakes.yaml and environment, run as its own process: REGION=OTHER with
// ENDPOINT to the intake emulator (through the default disk queue), and RELP_OUTPUT to rsyslog's
// imrelp over TLS. The relay trusts the test CA the way Node does without a ca_file:
// NODE_EXTRA_CA_CERTS.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { TEST_KEY, TLS } from '../helpers/relay.ts';
import { fileLines, freePort, sendTcp, startRsyslog, startTestIntake, waitListening } from '../helpers/peers.ts';
import { startRelayProcess, type CliProcess } from '../helpers/process.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { syslogLines, syslogMessages } from '../helpers/lines.ts';

/** A legacy file has no metrics: settings: METRICS_PORT (as the image and the shipped configuration read it) sets the port. */
let OPS = '';
async function opsPort(): Promise<string> {
  const p = await freePort();
  OPS = `http://127.0.0.1:${p}`;
  return String(p);
}

/** The forwarder's variables this test does not set, cleared so that the test's own environment cannot leak in. */
const CLEAR = { REGION: '', ENDPOINT: '', RELP_OUTPUT: '', DISK_SPACE: '', MEMORY_MESSAGES: '', CERTS_DIR: '', METRICS_ADDRESS: '', METRICS_PORT: '' };

function intakesYaml(dir: string, port: number): string {
  const file = join(dir, 'intakes.yaml');
  writeFileSync(file, `---\nintakes:\n- name: Techno1\n  protocol: tcp\n  port: ${port}\n  intake_key: ${TEST_KEY}\n`);
  return file;
}

async function started(relay: CliProcess, port: number): Promise<void> {
  try {
    await waitListening(port, 30_000);
  } catch (err) {
    throw new Error(`${(err as Error).message}; relay output:\n${relay.output()}`);
  }
}

/** Sum of a metric's samples for the intake, from the relay's /metrics. */
async function metric(name: string, intake: string): Promise<number> {
  const text = await (await fetch(`${OPS}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name}{`) && line.includes(`intake="${intake}"`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

async function books(intake: string) {
  const [received, sent, dropped, queued, unacked] = await Promise.all(
    ['events_received_total', 'events_sent_total', 'events_dropped_total', 'queue_events', 'output_unacked_events'].map((m) => metric(`intake_relay_${m}`, intake)),
  );
  return { received, sent, dropped, queued, unacked };
}

describe("the official forwarder's environment, as a process", () => {
  it('REGION=OTHER ENDPOINT=localhost:port: syslog over TLS to ENDPOINT, through the default disk queue', async () => {
    const intake = track(await startTestIntake());
    const dir = tempDir('legacy-other-');
    const port = await freePort();
    const state = join(dir, 'state');
    const relay = startRelayProcess(intakesYaml(dir, port), {
      env: { ...CLEAR, REGION: 'OTHER', ENDPOINT: `localhost:${intake.port}`, NODE_EXTRA_CA_CERTS: `${TLS}ca.crt`, STATE_DIRECTORY: state, METRICS_PORT: await opsPort() },
    });
    await started(relay, port);
    const n = 2_000;
    const message = (i: number): string => `other event ${i}`;
    await sendTcp(port, syslogLines(0, n, message));
    await vi.waitFor(() => expect(intake.received.length).toBeGreaterThanOrEqual(n), { timeout: 30_000 });
    expect(intake.received.map((m) => m.message)).toEqual(syslogMessages(0, n, message));
    expect(intake.received.every((m) => m.intakeKey === TEST_KEY && m.problems.length === 0)).toBe(true);
    expect(intake.protocolErrors).toEqual([]);
    // DISK_SPACE unset is the forwarder's 32g: the events went through a disk queue in STATE_DIRECTORY.
    expect(existsSync(join(state, 'queues', 'Techno1'))).toBe(true);
    expect(readdirSync(join(state, 'queues', 'Techno1')).length).toBeGreaterThan(0);
    await vi.waitFor(async () => expect(await books('Techno1')).toEqual({ received: n, sent: n, dropped: 0, queued: 0, unacked: 0 }), { timeout: 15_000 });
    expect(await metric('intake_relay_disk_queue_written_bytes_total', 'Techno1')).toBeGreaterThan(0);
    relay.proc.kill('SIGTERM');
    expect(await relay.exited).toBe(0);
    expect(relay.output()).not.toContain(TEST_KEY);
  });

  it('RELP_OUTPUT=1: every event once to rsyslog imrelp over TLS, at ENDPOINT', async () => {
    const relpPort = await freePort();
    const peer = track(
      startRsyslog(
        (d) => `module(load="imrelp" tls.tlslib="openssl")
input(type="imrelp" port="${relpPort}" ruleset="relp" tls="on" tls.caCert="${TLS}ca.crt" tls.myCert="${TLS}server.crt" tls.myPrivKey="${TLS}server.key")
template(name="raw" type="string" string="%rawmsg%\\n")
ruleset(name="relp") { action(type="omfile" file="${d}/out.log" template="raw") }`,
      ),
    );
    await peer.listening(relpPort);
    const dir = tempDir('legacy-relp-');
    const port = await freePort();
    const relay = startRelayProcess(intakesYaml(dir, port), {
      env: { ...CLEAR, REGION: 'OTHER', ENDPOINT: `localhost:${relpPort}`, RELP_OUTPUT: '1', DISK_SPACE: '0', MEMORY_MESSAGES: '50000', NODE_EXTRA_CA_CERTS: `${TLS}ca.crt`, STATE_DIRECTORY: join(dir, 'state'), METRICS_PORT: await opsPort() },
    });
    await started(relay, port);
    const n = 2_000;
    const message = (i: number): string => `relp event ${i}`;
    await sendTcp(port, syslogLines(0, n, message));
    const out = join(peer.dir, 'out.log');
    await vi.waitFor(() => expect(fileLines(out).length).toBeGreaterThanOrEqual(n), { timeout: 30_000 });
    const lines = fileLines(out);
    expect(lines).toHaveLength(n);
    // Each line is the RFC 5424 message the relay wrote: the intake key in its structured data, then MSG.
    const bodies = lines.map((l) => {
      const m = /^<14>1 \S+ host app - LOG \[SEKOIA@53288 intake_key="([^"]+)"\] (.*)$/.exec(l);
      expect(m, l).not.toBeNull();
      expect(m?.[1]).toBe(TEST_KEY);
      return m?.[2];
    });
    expect(new Set(bodies)).toEqual(new Set(syslogMessages(0, n, message)));
    await vi.waitFor(async () => expect(await books('Techno1')).toEqual({ received: n, sent: n, dropped: 0, queued: 0, unacked: 0 }), { timeout: 15_000 });
    relay.proc.kill('SIGTERM');
    expect(await relay.exited).toBe(0);
    expect(relay.output()).not.toContain(TEST_KEY);
  });
});
