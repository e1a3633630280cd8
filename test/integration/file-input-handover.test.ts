// The file input's checkpoints are named after the intake and the input: an input moved to another
// intake by a reload, or renamed (its default name is its first path), takes over the checkpoint
// that the gone input left for the same file (same device, inode and first bytes) instead of
// starting at the file's end; a running input's checkpoints are never taken, and one taken over is
// not taken twice.
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { books, startRelay, TEST_KEY, TLS, type RunningRelay } from '../helpers/relay.ts';
import { startTestIntake, type TestIntake } from '../helpers/peers.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { relayYaml } from '../helpers/config.ts';

// Stopped when each test ends (track), restarted ones too.
let relay: RunningRelay | undefined;
let intake: TestIntake | undefined;

const tmp = (): string => tempDir('file-handover-');
const lines = (tag: string, from: number, to: number): string => {
  let s = '';
  for (let i = from; i < to; i++) s += `${tag} ${String(i).padStart(6, '0')} ${'x'.repeat(40)}\n`;
  return s;
};
const tagged = (t: TestIntake, tag: string): string[] => t.received.map((r) => r.message).filter((m) => m.startsWith(`${tag} `));
const once = (msgs: string[]): boolean => new Set(msgs).size === msgs.length;

function yaml(port: number, dir: string, inputs: string): string {
  return relayYaml({ intakePort: port, extra: `data_dir: ${dir}/state\nshutdown_timeout_ms: 1000`, inputs });
}

const output = (port: number): string => `    output: { type: syslog, host: 127.0.0.1, port: ${port}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 200, backoff: { initial_ms: 50, max_ms: 200 } }`;
function twoIntakes(port: number, dir: string, t: string, u: string): string {
  return `log_level: debug
metrics: { enabled: false }
data_dir: ${dir}/state
shutdown_timeout_ms: 1000
intakes:
  - name: t
    intake_key: ${TEST_KEY}
    inputs: [${t}]
${output(port)}
  - name: u
    intake_key: ${TEST_KEY}
    inputs: [${u}]
${output(port)}
`;
}

describe('file input: checkpoints taken over from a gone input', () => {
  it('an input moved to another intake by a reload reads the backlog its old intake had not settled', async () => {
    const dir = tmp();
    const file = join(dir, 'app.log');
    writeFileSync(file, '');
    intake = track(await startTestIntake());
    const port = intake.port;
    const input = `{ type: file, name: f, paths: ["${file}"], poll_interval_ms: 50 }`;
    relay = track(await startRelay(twoIntakes(port, dir, input, '')));
    appendFileSync(file, lines('a', 0, 100));
    await vi.waitFor(() => expect(tagged(intake!, 'a').length).toBe(100), { timeout: 10_000, interval: 20 });
    await vi.waitFor(async () => expect(await books(relay!, 't')).toMatchObject({ queued: 0, balanced: true }), { timeout: 5_000 });
    // The intake goes away: what is read now stays in t's queue, unsettled.
    // t's checkpoint is past the 100 settled lines.
    await vi.waitFor(() => expect(readFileSync(join(dir, 'state', 'files', 't--f.json'), 'utf8')).toContain(`"offset":${lines('a', 0, 100).length},`), { timeout: 5_000, interval: 20 });
    await intake.stop();
    intake = undefined;
    appendFileSync(file, lines('b', 0, 2_000));
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_events_received_total', { intake: 't' })).toBe(2_100), { timeout: 10_000, interval: 20 });
    const report = await relay.daemon.reload(parseConfig(twoIntakes(port, dir, '', input), join(dir, 'v2.yaml'), {}));
    expect(report.failed).toEqual([]);
    // u takes over f's checkpoint (after the 100 settled lines) and reads the 2,000 lines again.
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_events_received_total', { intake: 'u' })).toBe(2_000), { timeout: 10_000, interval: 20 });
    expect(relay.logs.some((l) => l.msg?.toString().includes('taking over'))).toBe(true);
    intake = track(await startTestIntake(port));
    appendFileSync(file, lines('c', 0, 10));
    // Every line arrives (b twice: from t's queue and from u), nothing counted lost.
    await vi.waitFor(() => expect(new Set(tagged(intake!, 'b')).size).toBe(2_000), { timeout: 15_000, interval: 20 });
    await vi.waitFor(() => expect(tagged(intake!, 'c').length).toBe(10), { timeout: 10_000, interval: 20 });
    await vi.waitFor(async () => expect(await books(relay!, 'u')).toMatchObject({ queued: 0, balanced: true, received: 2_010, dropped: 0 }), { timeout: 5_000 });
  }, 40_000);

  it('a renamed input resumes from the old name\'s checkpoint; a running input\'s checkpoint is not taken, one taken over is not taken twice', async () => {
    const dir = tmp();
    const file = join(dir, 'app.log');
    writeFileSync(file, '');
    intake = track(await startTestIntake());
    relay = track(await startRelay(yaml(intake.port, dir, `      - { type: file, name: one, paths: ["${file}"], poll_interval_ms: 50 }`)));
    appendFileSync(file, lines('a', 0, 100));
    await vi.waitFor(() => expect(tagged(intake!, 'a').length).toBe(100), { timeout: 10_000, interval: 20 });
    await vi.waitFor(async () => expect(await books(relay!, 't')).toMatchObject({ queued: 0, balanced: true }), { timeout: 5_000 });
    await relay.stop();
    appendFileSync(file, lines('b', 0, 300));
    // Renamed (and a second new input on the same file): "two" takes over one's checkpoint;
    // "three" finds one's checkpoint taken and two's running: a first start, from the end.
    relay = track(await startRelay(yaml(intake.port, dir, `      - { type: file, name: two, paths: ["${file}"], poll_interval_ms: 50 }
      - { type: file, name: three, paths: ["${file}"], poll_interval_ms: 50 }`)));
    appendFileSync(file, lines('c', 0, 20));
    await vi.waitFor(() => expect(tagged(intake!, 'c').length).toBe(40), { timeout: 10_000, interval: 20 });
    await vi.waitFor(async () => expect(await books(relay!, 't')).toMatchObject({ queued: 0, balanced: true }), { timeout: 5_000 });
    const b = tagged(intake, 'b');
    expect(b.length).toBe(300);
    expect(once(b)).toBe(true);
    expect(tagged(intake, 'a').length).toBe(100);
    await relay.stop();
    // Both stopped: renamed again, "four" takes over the most recent of theirs (nothing re-read).
    appendFileSync(file, lines('d', 0, 5));
    relay = track(await startRelay(yaml(intake.port, dir, `      - { type: file, name: four, paths: ["${file}"], poll_interval_ms: 50 }`)));
    await vi.waitFor(() => expect(tagged(intake!, 'd').length).toBe(5), { timeout: 10_000, interval: 20 });
    await vi.waitFor(async () => expect(await books(relay!, 't')).toMatchObject({ queued: 0, balanced: true, received: 5 }), { timeout: 5_000 });
    expect(tagged(intake, 'b').length).toBe(300);
  }, 40_000);

  it('an input configured with the same file, started before the one whose checkpoint it is, does not take it over', async () => {
    const dir = tmp();
    const file = join(dir, 'app.log');
    writeFileSync(file, '');
    intake = track(await startTestIntake());
    const tcp = '{ type: tcp, address: 127.0.0.1, port: 0 }';
    const app = `{ type: file, name: app, paths: ["${file}"], poll_interval_ms: 50 }`;
    relay = track(await startRelay(twoIntakes(intake.port, dir, tcp, app)));
    appendFileSync(file, lines('a', 0, 100));
    await vi.waitFor(() => expect(tagged(intake!, 'a').length).toBe(100), { timeout: 10_000, interval: 20 });
    await vi.waitFor(async () => expect(await books(relay!, 'u')).toMatchObject({ queued: 0, balanced: true }), { timeout: 5_000 });
    await relay.stop();
    appendFileSync(file, lines('b', 0, 300));
    // Intake t (listed, so started, first) gets a new input on the same file, from its beginning;
    // u's "app" resumes from its own checkpoint.
    relay = track(await startRelay(twoIntakes(intake.port, dir, `{ type: file, name: fresh, paths: ["${file}"], read_from: beginning, new_files_from: beginning, poll_interval_ms: 50 }`, app)));
    await vi.waitFor(() => expect(tagged(intake!, 'b').length).toBe(600), { timeout: 10_000, interval: 20 });
    await vi.waitFor(async () => expect(await books(relay!, 't')).toMatchObject({ received: 400, queued: 0, balanced: true }), { timeout: 5_000 });
    await vi.waitFor(async () => expect(await books(relay!, 'u')).toMatchObject({ received: 300, queued: 0, balanced: true }), { timeout: 5_000 });
    // "a" once from the first run (u), once from t's first read of the whole file.
    expect(tagged(intake, 'a').length).toBe(200);
  }, 40_000);
});
