// The file input at max_open_files, with the reader held back by a full queue (intake down): a file
// is closed for another with unread bytes; one with nothing unread goes first, so that a file with
// unread bytes deleted meanwhile is still open and read to its end. Where every open file has
// unread bytes, one of them is closed; deleted before it is reopened, its unread bytes are lost:
// counted (file_errors_total, deleted_unread) and logged with the bytes lost.
import { statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay, type RunningRelay } from '../helpers/relay.ts';
import { freePort, startTestIntake, type TestIntake } from '../helpers/peers.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { relayYaml } from '../helpers/config.ts';

// Stopped when each test ends (track), restarted ones too.
let relay: RunningRelay | undefined;
let intake: TestIntake | undefined;

const tmp = (): string => tempDir('file-evict-');
/** Lines of exactly 1024 bytes: a turn of the reader (8 reads of 512 KiB) ends on a line boundary. */
const LINE = 1024;
const lines = (tag: string, from: number, to: number): string => {
  let s = '';
  for (let i = from; i < to; i++) {
    const head = `${tag} ${String(i).padStart(6, '0')} `;
    s += `${head}${'x'.repeat(LINE - head.length - 1)}\n`;
  }
  return s;
};
/**
 * A file's lines as the intake got them, sorted: each once is what is checked. 5.5 MB go out, so the
 * output closes a connection for confirmation on the way (each time it holds half its 8 MiB
 * window), and the intake reads the closing connection's last batches beside the next one's first.
 */
const tagged = (t: TestIntake, tag: string): string[] => t.received.map((r) => r.message).filter((m) => m.startsWith(`${tag} `)).sort();
const expected = (tag: string, from: number, to: number): string[] => lines(tag, from, to).split('\n').slice(0, -1);
/** What the reader takes from a file in one turn (8 reads of 512 KiB). */
const TURN = 8 * 512 * 1024;

function yaml(port: number, dir: string, maxOpen: number): string {
  return relayYaml({
    intakePort: port,
    extra: `data_dir: ${dir}/state\nshutdown_timeout_ms: 3000`,
    inputs: `      - { type: file, paths: ["${dir}/*.log"], read_from: beginning, max_open_files: ${maxOpen}, rotate_wait_ms: 200, glob_interval_ms: 100 }`,
    queue: '    queue: { max_events: 4200 }',
  });
}

describe('file input at max_open_files, the reader held back by a full queue', () => {
  it('a file with unread bytes stays open while one with nothing unread can be closed: deleted meanwhile, it is still read to its end', async () => {
    const dir = tmp();
    // a.log: more than a turn; b.log: a few lines, read after a's turn (more recently active); c.log: not open
    // at start (max_open_files: 2), fills the queue once opened.
    writeFileSync(join(dir, 'a.log'), lines('a', 0, 5000));
    writeFileSync(join(dir, 'b.log'), lines('b', 0, 5));
    writeFileSync(join(dir, 'c.log'), lines('c', 0, 500));
    const port = await freePort();
    relay = track(await startRelay(yaml(port, dir, 2)));
    // c.log was opened (its lines are queued) and the reader waits for room.
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_queue_events')).toBeGreaterThan(TURN / LINE + 5), { timeout: 10_000, interval: 20 });
    expect(await relay.metric('intake_relay_files_open')).toBe(2);
    unlinkSync(join(dir, 'a.log'));
    intake = track(await startTestIntake(port));
    await vi.waitFor(() => expect(intake!.received.length).toBe(5505), { timeout: 20_000, interval: 20 });
    expect(tagged(intake, 'a')).toEqual(expected('a', 0, 5000));
    expect(tagged(intake, 'b')).toEqual(expected('b', 0, 5));
    expect(tagged(intake, 'c')).toEqual(expected('c', 0, 500));
    expect(await relay.metric('intake_relay_file_errors_total')).toBe(0);
    await vi.waitFor(async () => expect(await books(relay!, 't')).toMatchObject({ queued: 0, balanced: true }), { timeout: 5_000 });
  }, 40_000);

  it('every open file has unread bytes (max_open_files: 1): the one closed and then deleted is counted (deleted_unread) with the bytes lost, and logged', async () => {
    const dir = tmp();
    const a = join(dir, 'a.log');
    writeFileSync(a, lines('a', 0, 5000));
    writeFileSync(join(dir, 'b.log'), lines('b', 0, 500));
    const size = statSync(a).size;
    const port = await freePort();
    relay = track(await startRelay(yaml(port, dir, 1)));
    // a.log was read for a turn, then closed for b.log, whose lines fill the queue.
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_queue_events')).toBeGreaterThan(TURN / LINE), { timeout: 10_000, interval: 20 });
    unlinkSync(a);
    intake = track(await startTestIntake(port));
    const read = TURN / LINE;
    await vi.waitFor(() => expect(intake!.received.length).toBe(read + 500), { timeout: 20_000, interval: 20 });
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_file_errors_total', { reason: 'deleted_unread' })).toBe(1), { timeout: 5_000, interval: 20 });
    // Let go once settled: nothing more is counted or read.
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_files_tracked')).toBe(1), { timeout: 5_000, interval: 20 });
    expect(tagged(intake, 'a')).toEqual(expected('a', 0, read));
    expect(tagged(intake, 'b')).toEqual(expected('b', 0, 500));
    expect(await relay.metric('intake_relay_file_errors_total')).toBe(1);
    expect(relay.logs.filter((l) => l.code === 'deleted_unread')).toEqual([
      expect.objectContaining({ level: 'warn', file: a, offset: TURN, bytes: size - TURN }),
    ]);
    expect(intake.received.length).toBe(read + 500);
    await vi.waitFor(async () => expect(await books(relay!, 't')).toMatchObject({ queued: 0, balanced: true }), { timeout: 5_000 });
  }, 40_000);
});
