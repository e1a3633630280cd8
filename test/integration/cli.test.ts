// The real entry points as processes: `intake-relay emulate` as the intake, `intake-relay run` as
// the relay, logger as the sender; then SIGTERM, a clean drain and exit 0. Also the operations
// endpoints as an operator would query them.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { freePort, logger, waitListening } from '../helpers/peers.ts';
import { TEST_KEY } from '../helpers/relay.ts';
import { tempDir } from '../helpers/cleanup.ts';
import { startCli } from '../helpers/process.ts';

describe('intake-relay run + emulate', () => {
  it('forwards end to end, serves metrics and health, drains on SIGTERM and exits 0', async () => {
    const [intakePort, inPort, opsPort] = [await freePort(), await freePort(), await freePort()];
    const emulate = startCli(['emulate', '--port', String(intakePort)]);
    await vi.waitFor(() => expect(emulate.out.stderr).toContain('-----END CERTIFICATE-----'), { timeout: 10_000 });
    const dir = tempDir('cli-test-');
    const ca = emulate.out.stderr.slice(emulate.out.stderr.indexOf('-----BEGIN CERTIFICATE-----'));
    writeFileSync(join(dir, 'ca.pem'), ca);
    writeFileSync(
      join(dir, 'relay.yaml'),
      `metrics: { address: 127.0.0.1, port: ${opsPort} }
intakes:
  - name: firewall
    intake_key: \${FW_KEY}
    inputs:
      - type: tcp
        address: 127.0.0.1
        port: ${inPort}
        max_connections: 1
    output:
      type: syslog
      host: 127.0.0.1
      port: ${intakePort}
      server_name: localhost
      ca_file: ${join(dir, 'ca.pem')}
`,
    );
    const relay = startCli(['run', '-c', join(dir, 'relay.yaml')], { env: { FW_KEY: TEST_KEY } });
    await waitListening(inPort);
    await vi.waitFor(async () => expect((await fetch(`http://127.0.0.1:${opsPort}/readyz`)).status).toBe(200), { timeout: 10_000 });
    // One logger connection at a time: with max_connections: 1, the next must not arrive while the
    // relay is still closing the previous one (it would be refused, on a busy machine).
    const open = async (): Promise<number> => Number(/intake_relay_input_connections\{[^}]*\} (\d+)/.exec(await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text())?.[1] ?? 0);
    for (let i = 0; i < 5; i++) {
      await vi.waitFor(async () => expect(await open()).toBe(0));
      logger(['-n', '127.0.0.1', '-P', String(inPort), '-T', '--octet-count', '-t', 'fw', '--', `deny tcp ${i}`]);
    }
    await vi.waitFor(() => expect(emulate.out.stdout.match(/^ok /gm)).toHaveLength(5), { timeout: 10_000 });
    expect(emulate.out.stdout).toMatch(/intake_key="\*{8}"\]\[timeQuality [^\]]*\] deny tcp 0\n/);
    expect(emulate.out.stdout).not.toContain(TEST_KEY);

    const metrics = await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text();
    expect(metrics).toContain('intake_relay_events_received_total{intake="firewall",input="tcp/' + inPort + '"} 5');
    expect(metrics).toContain('intake_relay_output_connected{intake="firewall",output="syslog"} 1');
    expect(metrics).not.toContain(TEST_KEY);
    expect((await fetch(`http://127.0.0.1:${opsPort}/healthz`)).status).toBe(200);
    const status = (await (await fetch(`http://127.0.0.1:${opsPort}/status`)).json()) as { intakes: { name: string; state: string }[] };
    expect(status.intakes).toEqual([expect.objectContaining({ name: 'firewall', state: 'connected' })]);

    // max_connections: 1 — a second connection while one is open is refused and counted.
    const net = await import('node:net');
    const first = net.connect(inPort, '127.0.0.1');
    await new Promise((r) => first.once('connect', r));
    const second = net.connect(inPort, '127.0.0.1');
    await new Promise((r) => second.once('close', r));
    first.destroy();
    await vi.waitFor(async () =>
      expect(await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text()).toContain(`intake_relay_input_connections_rejected_total{intake="firewall",input="tcp/${inPort}",reason="max_connections"} 1`),
    );

    relay.proc.kill('SIGTERM');
    expect(await relay.exited).toBe(0);
    expect(relay.out.stdout).toContain('Stopped: every queued event was delivered (');
    expect(relay.out.stdout).not.toContain(TEST_KEY);
    emulate.proc.kill('SIGTERM');
    expect(await emulate.exited).toBe(0);
    expect(emulate.out.stderr).toContain('received 5 frames, 0 refused');
  });

  it('a port already in use is a clear error and exit 1', async () => {
    const port = await freePort();
    const blocker = (await import('node:net')).createServer().listen(port, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    const dir = tempDir('cli-test-');
    writeFileSync(join(dir, 'r.yaml'), `metrics: { enabled: false }\nintakes:\n  - name: a\n    intake_key: ${TEST_KEY}\n    inputs:\n      - { type: tcp, address: 127.0.0.1, port: ${port} }\n`);
    const relay = startCli(['run', '-c', join(dir, 'r.yaml')]);
    expect(await relay.exited).toBe(1);
    blocker.close();
    expect(relay.out.stdout).toContain(`a/tcp/${port}: cannot listen on 127.0.0.1:${port}: another process already listens there.`);
  });
});
