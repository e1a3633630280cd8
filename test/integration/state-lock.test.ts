// Two relay processes on one data_dir (the README's "split by intake" with the default data_dir, a
// shared volume, `compose --scale`): the second is refused before it opens a port, exit 73, naming
// the directory and the process that holds it; `validate` says the same; the first delivers every
// event; a kill -9 of the first frees the directory for the second at once.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { freePort, sendTcp, startTestIntake } from '../helpers/peers.ts';
import { relayYaml } from '../helpers/config.ts';
import { counts, runCli, startRelayProcess } from '../helpers/process.ts';
import { startRelay } from '../helpers/relay.ts';
import { parseConfig } from '../../src/config/load.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { syslogLines, syslogMessages } from '../helpers/lines.ts';

const body = (i: number): string => `lock ${String(i).padStart(6, '0')}`;

function yaml(intakePort: number, dataDir: string, inPort: number, opsPort: number): string {
  return relayYaml({
    intakePort,
    inputs: `      - { type: tcp, address: 127.0.0.1, port: ${inPort}, name: in }`,
    extra: `data_dir: ${dataDir}\nshutdown_timeout_ms: 2000`,
    queue: '    queue: { type: disk }',
  }).replace('metrics: { enabled: false }', `metrics: { enabled: true, address: 127.0.0.1, port: ${opsPort} }`);
}

/** Resolves once the port answers TCP. */
async function listening(port: number): Promise<void> {
  await vi.waitFor(() => sendTcp(port, ''), { timeout: 20_000, interval: 100 });
}

describe('two relays on one data_dir', () => {
  it('the second is refused (exit 73, naming the directory and the holder) before it listens; the first delivers everything; after a kill -9 the second starts', async () => {
    const dir = tempDir('state-lock-');
    const data = join(dir, 'state');
    const intake = track(await startTestIntake());
    const [in1, in2, ops1, ops2] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const first = join(dir, 'first.yaml');
    const second = join(dir, 'second.yaml');
    writeFileSync(first, yaml(intake.port, data, in1, ops1));
    writeFileSync(second, yaml(intake.port, data, in2, ops2));

    const a = startRelayProcess(first);
    await listening(in1);
    const pidA = a.proc.pid as number;

    // validate: the running relay's own file is fine (a reload goes to it); the other is refused.
    const own = await runCli(['validate', '-c', first]);
    expect(own.code, own.out).toBe(0);
    expect(own.stdout).toContain(`held by the relay running this configuration (process ${pidA})`);
    const other = await runCli(['validate', '-c', second]);
    expect(other.code, other.out).toBe(73);
    expect(other.stdout).toContain(`data_dir ${data} is in use by process ${pidA}`);
    expect(other.stdout).toContain(first);

    // run: refused before any port opens.
    const b = startRelayProcess(second);
    expect(await b.exited).toBe(73);
    expect(b.output()).toContain(`data_dir ${data} is in use by process ${pidA}`);
    expect(b.output()).not.toContain('intake-relay started');
    await expect(sendTcp(in2, 'x\n')).rejects.toThrow(/ECONNREFUSED/);
    await expect(sendTcp(ops2, '')).rejects.toThrow(/ECONNREFUSED/);

    // The first delivers all of it, once.
    await sendTcp(in1, syslogLines(0, 4_000, body));
    await vi.waitFor(() => expect(intake.received.length).toBeGreaterThanOrEqual(4_000), { timeout: 30_000 });
    const seen = counts(intake);
    expect(syslogMessages(0, 4_000, body).filter((m) => seen.get(m) !== 1)).toEqual([]);

    // kill -9: the kernel lets go of the lock with the process; the second starts at once.
    a.proc.kill('SIGKILL');
    await a.exited;
    const c = startRelayProcess(second);
    await listening(in2);
    await sendTcp(in2, syslogLines(4_000, 4_100, body));
    await vi.waitFor(() => expect(intake.received.length).toBeGreaterThanOrEqual(4_100), { timeout: 30_000 });
    c.proc.kill('SIGTERM');
    expect(await c.exited).toBe(0);
  });

  it('a disk queue directory shared through queue.path is locked too, whatever the data_dir', async () => {
    const dir = tempDir('state-lock-');
    const shared = join(dir, 'queue');
    const intake = track(await startTestIntake());
    const [in1, in2, ops1, ops2] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const first = join(dir, 'first.yaml');
    const second = join(dir, 'second.yaml');
    writeFileSync(first, yaml(intake.port, join(dir, 'a'), in1, ops1).replace('{ type: disk }', `{ type: disk, path: ${shared} }`));
    writeFileSync(second, yaml(intake.port, join(dir, 'b'), in2, ops2).replace('{ type: disk }', `{ type: disk, path: ${shared} }`));
    const a = startRelayProcess(first);
    await listening(in1);
    const b = startRelayProcess(second);
    expect(await b.exited).toBe(73);
    expect(b.output()).toContain(`The disk queue ${shared} of intake \\"t\\" is in use by process ${a.proc.pid}`);
  });

  it('a reload that adds a disk queue another process holds is refused whole: the running configuration stays', async () => {
    const dir = tempDir('state-lock-');
    const held = join(dir, 'held');
    mkdirSync(held);
    const other = spawn('flock', ['--nonblock', join(held, 'intake-relay.lock'), 'sleep', '60'], { stdio: 'ignore' });
    track({ stop: async () => void other.kill('SIGKILL') });
    await vi.waitFor(() => expect(spawnSync('flock', ['--nonblock', join(held, 'intake-relay.lock'), 'true']).status).toBe(1));
    const intake = track(await startTestIntake());
    const v1 = relayYaml({ intakePort: intake.port, inputs: '      - { type: tcp, address: 127.0.0.1, port: 0, name: in }', extra: `data_dir: ${join(dir, 'data')}` });
    const relay = track(await startRelay(v1));
    const v2 = `${v1}  - name: d
    intake_key: ${'k'.repeat(32)}
    inputs: [{ type: tcp, address: 127.0.0.1, port: 0, name: din }]
    output: { type: syslog, host: 127.0.0.1, port: ${intake.port}, server_name: localhost, ca_file: ${join(import.meta.dirname, '../fixtures/tls/ca.crt')} }
    queue: { type: disk, path: ${held} }
`;
    const report = await relay.daemon.reload(parseConfig(v2, join(dir, 'v2.yaml'), {}));
    expect(report.added).toEqual([]);
    expect(report.failed).toEqual([`The disk queue ${held} of intake "d" is in use by another process: two relays must not share a data_dir or a disk queue directory (give each its own data_dir, or queue.path). Stop the other one first.`]);
    expect(relay.daemon.topology.intakes().map((p) => p.name)).toEqual(['t']);
    expect(relay.logs.some((l) => l.level === 'error' && String(l.msg).startsWith('Reload refused'))).toBe(true);
    expect(await relay.metric('intake_relay_config_last_reload_successful')).toBe(0);
  });
});
