// Reloading the configuration of a running relay: intakes added, removed and changed under load,
// nothing lost, and the inputs and listeners that did not change stay open (their connections
// too). Then the process: SIGHUP with an invalid file keeps the running configuration; a valid one
// applies; --watch-config reloads on a change of the file.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { books, startRelay, TLS } from '../helpers/relay.ts';
import { freePort, sendTcp, startTestIntake, steadySender, type TestIntake } from '../helpers/peers.ts';
import { counts, exited, startRelayProcess } from '../helpers/process.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { syslogLines, syslogMessages } from '../helpers/lines.ts';

const KEYS = { a: 'AAAAaaaa00001111222233334444aaaa', b: 'BBBBbbbb00001111222233334444bbbb', c: 'CCCCcccc00001111222233334444cccc' };

interface Ports {
  intake: number;
  a: number;
  b: number;
  c: number;
  shared: number;
}

function intakeYaml(name: keyof typeof KEYS, port: number, intakePort: number, extra = '', resendMs = 200): string {
  return `  - name: ${name}
    intake_key: ${KEYS[name]}
    inputs: [{ type: tcp, name: in-${name}, address: 127.0.0.1, port: ${port} }]
    output: { type: syslog, host: 127.0.0.1, port: ${intakePort}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: ${resendMs}, backoff: { initial_ms: 50, max_ms: 200 } }
${extra ? `${extra}\n` : ''}`;
}

function configYaml(intakes: string, p: Ports, extra = ''): string {
  return `log_level: info
metrics: { enabled: false }
shutdown_timeout_ms: 3000
${extra}
intakes:
${intakes}
listeners:
  - type: tcp
    name: shared
    address: 127.0.0.1
    port: ${p.shared}
    routes: [{ match: { app_name: ra }, intake: a }]
    default: drop
`;
}

const byKey = (t: TestIntake, key: string): string[] => t.received.filter((m) => m.intakeKey === key).map((m) => m.message);

describe('reload', () => {
  it('adds, removes and changes intakes under load: nothing lost, unchanged inputs and listeners stay open', async () => {
    const intake = track(await startTestIntake());
    const p: Ports = { intake: intake.port, a: await freePort(), b: await freePort(), c: await freePort(), shared: await freePort() };
    const v1 = configYaml(intakeYaml('b', p.b, p.intake) + intakeYaml('a', p.a, p.intake), p);
    const relay = track(await startRelay(v1));
    const onA = steadySender(p.a, (n) => `<14>Nov 23 10:00:00 host app: a ${n}`);
    const onShared = steadySender(p.shared, (n) => `<14>Nov 23 10:00:00 host ra: shared ${n}`);
    await sendTcp(p.b, syslogLines(0, 500, (i) => `b ${i}`));
    await vi.waitFor(() => expect(byKey(intake, KEYS.b).length).toBe(500));
    await vi.waitFor(() => expect(onA.sent).toBeGreaterThan(2_000));

    // v2: b removed; c added; a's output changed (a new runner and sink take over its queue) and a
    // filter added; the shared listener unchanged (a moves from index 1 to 0 behind it).
    const v2 = configYaml(
      intakeYaml('a', p.a, p.intake, `    filters: [{ description: drop noise, filters: [{ field: app_name, operator: "==", value: noise }] }]`, 300) + intakeYaml('c', p.c, p.intake),
      p,
    );
    const report = await relay.daemon.reload(parseConfig(v2, 'v2.yaml', {}));
    expect(report).toMatchObject({ added: ['c'], removed: ['b'], changed: ['a'], restarted: [], failed: [], notApplied: [] });
    expect(relay.daemon.topology.inputPort('a', 'in-a')).toBe(p.a);
    await vi.waitFor(() => expect(onA.sent).toBeGreaterThan(4_000));
    await sendTcp(p.c, '<14>Nov 23 10:00:00 host app: c 0\n<14>Nov 23 10:00:00 host noise: filtered\n');
    await sendTcp(p.a, '<14>Nov 23 10:00:00 host noise: filtered on a\n');
    await Promise.all([onA.stop(), onShared.stop()]);
    expect(onA.closedByPeer).toBe(false);
    expect(onShared.closedByPeer).toBe(false);
    // The b input is closed.
    await expect(sendTcp(p.b, 'x\n')).rejects.toThrow(/ECONNREFUSED/);

    const a = () => byKey(intake, KEYS.a);
    await vi.waitFor(() => expect(new Set(a()).size).toBe(onA.sent + onShared.sent), { timeout: 10_000 });
    const c = counts(intake);
    for (let i = 0; i < onA.sent; i++) expect(c.get(`a ${i}`), `a ${i}`).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < onShared.sent; i++) expect(c.get(`shared ${i}`), `shared ${i}`).toBeGreaterThanOrEqual(1);
    expect(a()).not.toContain('filtered on a');
    // A duplicate is only possible for writes handed from the old output to the new one, and is counted.
    const resent = await relay.metric('intake_relay_events_resent_total', { intake: 'a' });
    expect(a().length - new Set(a()).size).toBeLessThanOrEqual(resent);
    await vi.waitFor(() => expect(byKey(intake, KEYS.c)).toEqual(['c 0', 'filtered']));
    await vi.waitFor(async () => expect(await books(relay, 'a')).toMatchObject({ queued: 0, unacked: 0, balanced: true }));
    expect(await books(relay, 'b')).toMatchObject({ received: 500, sent: 500, dropped: 0 });
  });

  it('an intake with a disk queue removed and added again: its queue is handed from the old to the new, nothing lost', async () => {
    const p: Ports = { intake: await freePort(), a: await freePort(), b: await freePort(), c: await freePort(), shared: await freePort() };
    const dir = tempDir('reload-disk-');
    const withB = configYaml(intakeYaml('a', p.a, p.intake) + intakeYaml('b', p.b, p.intake, `    queue: { type: disk, path: ${dir}/b }`), p, 'shutdown_timeout_ms: 500');
    const withoutB = configYaml(intakeYaml('a', p.a, p.intake), p, 'shutdown_timeout_ms: 500');
    const relay = track(await startRelay(withB.replace('shutdown_timeout_ms: 3000\n', '')));
    await sendTcp(p.b, syslogLines(0, 1_000, (i) => `d ${i}`));
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_disk_queue_events', { intake: 'b' })).toBe(1_000));
    // Removed (the intake is down: its queue keeps the events), then at once added again.
    await relay.daemon.reload(parseConfig(withoutB.replace('shutdown_timeout_ms: 3000\n', ''), 'v2.yaml', {}));
    const back = await relay.daemon.reload(parseConfig(withB.replace('shutdown_timeout_ms: 3000\n', ''), 'v3.yaml', {}));
    expect(back).toMatchObject({ added: ['b'], failed: [] });
    const intake = track(await startTestIntake(p.intake));
    await vi.waitFor(() => expect(byKey(intake, KEYS.b).length).toBe(1_000), { timeout: 10_000 });
    expect(byKey(intake, KEYS.b)).toEqual(syslogMessages(0, 1_000, (i) => `d ${i}`));
  });

  it('a new key for an intake: the HTTP listener takes the new key and refuses the old one', async () => {
    const intake = track(await startTestIntake());
    const p: Ports = { intake: intake.port, a: await freePort(), b: await freePort(), c: await freePort(), shared: await freePort() };
    const http = await freePort();
    const listener = `  - { type: http, name: api, address: 127.0.0.1, port: ${http}, respond_when: queued }\n`;
    const v1 = configYaml(intakeYaml('a', p.a, p.intake), p) + listener;
    const relay = track(await startRelay(v1));
    const post = async (key: string) => (await fetch(`http://127.0.0.1:${http}/plain`, { method: 'POST', body: `with ${key.slice(0, 4)}`, headers: { authorization: `Basic ${Buffer.from(`:${key}`).toString('base64')}` } })).status;
    expect(await post(KEYS.a)).toBe(200);
    const v2 = v1.replace(`intake_key: ${KEYS.a}`, `intake_key: ${KEYS.c}`);
    expect(await relay.daemon.reload(parseConfig(v2, 'v2.yaml', {}))).toMatchObject({ changed: ['a'], failed: [] });
    expect(await post(KEYS.a)).toBe(401);
    expect(await post(KEYS.c)).toBe(200);
    await vi.waitFor(() => expect(byKey(intake, KEYS.c)).toContain('with CCCC'));
  });

  it('an intake a reload could not add is added by the next reload once it can be', async () => {
    const intake = track(await startTestIntake());
    const p: Ports = { intake: intake.port, a: await freePort(), b: await freePort(), c: await freePort(), shared: await freePort() };
    const dir = tempDir('reload-retry-');
    writeFileSync(join(dir, 'not-a-dir'), '');
    const relay = track(await startRelay(configYaml(intakeYaml('a', p.a, p.intake), p)));
    const broken = configYaml(intakeYaml('a', p.a, p.intake) + intakeYaml('b', p.b, p.intake, `    queue: { type: disk, path: ${dir}/not-a-dir/q }`), p);
    expect(await relay.daemon.reload(parseConfig(broken, 'v2.yaml', {}))).toMatchObject({ added: [], failed: ['b'] });
    const fixed = broken.replace(`${dir}/not-a-dir/q`, `${dir}/q`);
    expect(await relay.daemon.reload(parseConfig(fixed, 'v3.yaml', {}))).toMatchObject({ added: ['b'], failed: [] });
    await sendTcp(p.b, '<14>Nov 23 10:00:00 host app: b at last\n');
    await vi.waitFor(() => expect(byKey(intake, KEYS.b)).toEqual(['b at last']));
  });

  it('a queue type change needs a restart: the running queue stays, and every reload reports it until then', async () => {
    const intake = track(await startTestIntake());
    const p: Ports = { intake: intake.port, a: await freePort(), b: await freePort(), c: await freePort(), shared: await freePort() };
    const dir = tempDir('reload-type-');
    const v1 = configYaml(intakeYaml('a', p.a, p.intake), p);
    const v2 = configYaml(intakeYaml('a', p.a, p.intake, `    queue: { type: disk, path: ${dir}/a }`), p);
    const relay = track(await startRelay(v1));
    for (const v of ['v2', 'v3']) {
      const report = await relay.daemon.reload(parseConfig(v2, `${v}.yaml`, {}));
      expect(report).toMatchObject({ notApplied: ['intakes.a.queue (type or path)'], failed: [] });
      expect(relay.daemon.topology.intakes()[0]?.intake.queue.type).toBe('memory');
      expect(relay.daemon.topology.config.intakes[0]?.queue.type).toBe('memory');
    }
    await sendTcp(p.a, syslogLines(0, 100, (i) => `m ${i}`));
    await vi.waitFor(() => expect(byKey(intake, KEYS.a)).toEqual(syslogMessages(0, 100, (i) => `m ${i}`)));
    // Removed: its memory queue holds no directory, so no later queue waits for one.
    const withoutA = configYaml(intakeYaml('b', p.b, p.intake), p).replace('intake: a }', 'intake: b }');
    expect(await relay.daemon.reload(parseConfig(withoutA, 'v4.yaml', {}))).toMatchObject({ removed: ['a'], added: ['b'], notApplied: [] });
    expect(relay.daemon.topology.drainingDisks).toBe(0);
  });

  it('an intake renamed onto its own disk queue directory: the HTTP listener, kept, takes its events while the old queue drains', async () => {
    const p: Ports = { intake: await freePort(), a: await freePort(), b: await freePort(), c: await freePort(), shared: await freePort() };
    const http = await freePort();
    const dir = tempDir('reload-rename-');
    const queue = `    queue: { type: disk, path: ${dir}/q }`;
    const listener = `  - { type: http, name: api, address: 127.0.0.1, port: ${http}, respond_when: queued }\n`;
    const v1 = configYaml(intakeYaml('a', p.a, p.intake, queue), p, 'shutdown_timeout_ms: 1500').replace('shutdown_timeout_ms: 3000\n', '') + listener;
    // Renamed, same key: the HTTP listener's configuration is unchanged, so it is kept.
    const v2 = configYaml(intakeYaml('b', p.b, p.intake, queue).replace(KEYS.b, KEYS.a), p, 'shutdown_timeout_ms: 1500').replace('shutdown_timeout_ms: 3000\n', '').replace('intake: a }', 'intake: b }') + listener;
    const post = async (body: string) => (await fetch(`http://127.0.0.1:${http}/plain`, { method: 'POST', body, headers: { authorization: `Basic ${Buffer.from(`:${KEYS.a}`).toString('base64')}` } })).status;
    // No intake yet: the old queue cannot deliver, so its drain lasts shutdown_timeout_ms.
    const relay = track(await startRelay(v1));
    expect(await post('before')).toBe(200);
    const reloading = relay.daemon.reload(parseConfig(v2, 'v2.yaml', {}));
    let done = false;
    void reloading.finally(() => (done = true));
    // The old queue drains: the new intake waits for its directory.
    await vi.waitFor(() => expect(relay.daemon.topology.drainingDisks).toBe(1));
    const during = Array.from({ length: 5 }, (_, i) => post(`during ${i}`));
    await new Promise((r) => setTimeout(r, 200));
    expect(done).toBe(false);
    expect(await reloading).toMatchObject({ removed: ['a'], added: ['b'], failed: [] });
    expect(await Promise.all(during)).toEqual([200, 200, 200, 200, 200]);
    expect(await post('after')).toBe(200);
    const intake = track(await startTestIntake(p.intake));
    const want = ['before', ...Array.from({ length: 5 }, (_, i) => `during ${i}`), 'after'];
    await vi.waitFor(() => expect(new Set(byKey(intake, KEYS.a))).toEqual(new Set(want)), { timeout: 10_000 });
    expect(await relay.metric('intake_relay_events_dropped_total', { intake: 'a' })).toBe(0);
    expect(await relay.metric('intake_relay_events_dropped_total', { intake: 'b' })).toBe(0);
  });

  it('a changed data_dir (it needs a restart) leaves file inputs as they are', async () => {
    const intake = track(await startTestIntake());
    const p: Ports = { intake: intake.port, a: await freePort(), b: await freePort(), c: await freePort(), shared: await freePort() };
    const dir = tempDir('reload-data-');
    writeFileSync(join(dir, 'app.log'), '');
    const file = `    inputs: [{ type: file, name: f, paths: [${join(dir, 'app.log')}], read_from: beginning }]`;
    const v1 = configYaml(intakeYaml('a', p.a, p.intake).replace(/    inputs: .*\n/, `${file}\n`), p, `data_dir: ${dir}/state`);
    const relay = track(await startRelay(v1));
    const report = await relay.daemon.reload(parseConfig(v1.replace(`data_dir: ${dir}/state`, `data_dir: ${dir}/other`), 'v2.yaml', {}));
    expect(report).toMatchObject({ restarted: [], notApplied: ['data_dir'] });
  });

  it('names the inputs and listeners it adds to or removes from what stays, as intake/input', async () => {
    const intake = track(await startTestIntake());
    const p: Ports = { intake: intake.port, a: await freePort(), b: await freePort(), c: await freePort(), shared: await freePort() };
    const v1 = configYaml(intakeYaml('a', p.a, p.intake), p);
    const relay = track(await startRelay(v1));
    const extra = await freePort();
    const v2 = v1.replace(`port: ${p.a} }]`, `port: ${p.a} }, { type: udp, name: extra, address: 127.0.0.1, port: ${extra} }]`);
    expect(v2).not.toBe(v1);
    expect(await relay.daemon.reload(parseConfig(v2, 'v2.yaml', {}))).toMatchObject({ added: ['a/extra'], removed: [], changed: [], restarted: [], failed: [] });
    const v3 = v1.replace(/listeners:[\s\S]*$/, '');
    expect(await relay.daemon.reload(parseConfig(v3, 'v3.yaml', {}))).toMatchObject({ added: [], removed: ['a/extra', 'shared'], failed: [] });
  });

  it('the process: SIGHUP with an invalid file keeps the running configuration; a valid one applies; --watch-config follows the file', async () => {
    const intake = track(await startTestIntake());
    const p: Ports = { intake: intake.port, a: await freePort(), b: await freePort(), c: await freePort(), shared: await freePort() };
    const dir = tempDir('reload-');
    const file = join(dir, 'relay.yaml');
    writeFileSync(file, configYaml(intakeYaml('a', p.a, p.intake), p));
    const r = startRelayProcess(file);
    await vi.waitFor(() => expect(r.output()).toContain('intake-relay started'), { timeout: 15_000 });
    writeFileSync(file, `${configYaml(intakeYaml('a', p.a, p.intake), p)}bogus_key: 1\n`);
    r.proc.kill('SIGHUP');
    await vi.waitFor(() => expect(r.output()).toContain('Reload refused: the new configuration is invalid'), { timeout: 10_000 });
    expect(r.output()).toMatch(/relay\.yaml:\d+:\d+: bogus_key: unknown key/);
    await sendTcp(p.a, '<14>Nov 23 10:00:00 host app: still running\n');
    await vi.waitFor(() => expect(byKey(intake, KEYS.a)).toEqual(['still running']), { timeout: 10_000 });

    writeFileSync(file, configYaml(intakeYaml('a', p.a, p.intake) + intakeYaml('b', p.b, p.intake), p));
    r.proc.kill('SIGHUP');
    await vi.waitFor(() => expect(r.output()).toContain('Configuration reloaded'), { timeout: 10_000 });
    await sendTcp(p.b, '<14>Nov 23 10:00:00 host app: b after reload\n');
    await vi.waitFor(() => expect(byKey(intake, KEYS.b)).toEqual(['b after reload']), { timeout: 10_000 });
    r.proc.kill('SIGTERM');
    await exited(r.proc);

    const watched = startRelayProcess(file, { extra: ['--watch-config'] });
    await vi.waitFor(() => expect(watched.output()).toContain('intake-relay started'), { timeout: 15_000 });
    writeFileSync(file, configYaml(intakeYaml('a', p.a, p.intake) + intakeYaml('c', p.c, p.intake), p));
    await vi.waitFor(() => expect(watched.output()).toContain('"trigger":"file changed"'), { timeout: 10_000 });
    await vi.waitFor(() => expect(watched.output()).toContain('Configuration reloaded'), { timeout: 10_000 });
    await sendTcp(p.c, '<14>Nov 23 10:00:00 host app: c after watch\n');
    await vi.waitFor(() => expect(byKey(intake, KEYS.c)).toEqual(['c after watch']), { timeout: 10_000 });
    watched.proc.kill('SIGTERM');
    await exited(watched.proc);
    expect(watched.output() + r.output()).not.toContain(KEYS.a);
  }, 60_000);
});
