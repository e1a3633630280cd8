// The file input after a restart, for a followed file renamed while the relay was stopped: it is
// found by its identity (device, inode and first bytes) among all the files of its directory,
// whatever its name now (logrotate's `-DATE.backup` on a name clash, `app-DATE.log` with
// `extension .log`, one the globs still match), its unread end is read once, and it is let go. The
// other files of the directory that the globs do not match are not read. The relay runs as its own
// process and is stopped as a user would, with SIGTERM.
import { appendFileSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { freePort, startTestIntake } from '../helpers/peers.ts';
import { tempDir, track } from '../helpers/cleanup.ts';
import { relayYaml } from '../helpers/config.ts';
import { counts, exited, startRelayProcess, type CliProcess } from '../helpers/process.ts';

const lines = (tag: string, from: number, to: number): string => {
  let s = '';
  for (let i = from; i < to; i++) s += `${tag} ${String(i).padStart(6, '0')} ${'x'.repeat(60)}\n`;
  return s;
};
const expected = (tag: string, from: number, to: number): string[] => lines(tag, from, to).split('\n').slice(0, -1);

interface Entry {
  readonly key: string;
  readonly path: string;
  readonly offset: number;
}

/** The entries of the input's checkpoint file (the only one in data_dir/files). */
function checkpoints(dir: string): Entry[] {
  const files = join(dir, 'state', 'files');
  const name = readdirSync(files).find((f) => f.endsWith('.json'));
  if (!name) return [];
  return (JSON.parse(readFileSync(join(files, name), 'utf8')) as { files: Entry[] }).files;
}

/** "device:inode", as the checkpoints name a file. */
const keyOf = (path: string): string => {
  const st = statSync(path, { bigint: true });
  return `${st.dev}:${st.ino}`;
};

describe('file input: a followed file renamed while the relay was stopped', () => {
  it('is found by identity whatever its name now: its unread lines arrive once, then it is let go; files the globs do not match are not read', async () => {
    const dir = tempDir('file-renamed-');
    const file = join(dir, 'app.log');
    writeFileSync(file, '');
    const intake = track(await startTestIntake());
    const metricsPort = await freePort();
    const config = join(dir, 'relay.yaml');
    writeFileSync(config, relayYaml({
      intakePort: intake.port,
      extra: `data_dir: ${dir}/state\nshutdown_timeout_ms: 3000`,
      // kept-*.log: a rotated name the globs still match (followed as itself, from its checkpoint).
      inputs: `      - { type: file, paths: ["${file}", "${dir}/kept-*.log"], rotate_wait_ms: 200, glob_interval_ms: 200 }`,
    }).replace('metrics: { enabled: false }', `metrics: { address: 127.0.0.1, port: ${metricsPort} }`).replace('log_level: debug', 'log_level: info'));
    const scrape = async (name: string): Promise<number> => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return text.split('\n').filter((l) => l.startsWith(name)).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    };
    const sent: string[] = [];
    const write = (path: string, tag: string, n: number): void => {
      appendFileSync(path, lines(tag, 0, n));
      sent.push(...expected(tag, 0, n));
    };
    const start = async (): Promise<CliProcess> => {
      const r = startRelayProcess(config);
      await vi.waitFor(() => expect(r.output()).toContain('intake-relay started'), { timeout: 15_000 });
      return r;
    };
    /** Every line written arrives, each once (by content), and nothing else. */
    const allOnce = async (): Promise<void> => {
      await vi.waitFor(() => expect(counts(intake).size).toBe(sent.length), { timeout: 15_000, interval: 50 });
      const c = counts(intake);
      for (const l of sent) expect(c.get(l), l).toBe(1);
      expect(intake.received.length).toBe(sent.length);
    };

    let relay = await start();
    write(file, 'run1', 100);
    await allOnce();
    // Stopped as a user would; the checkpoint is past the lines delivered.
    relay.proc.kill('SIGTERM');
    await exited(relay.proc);
    expect(checkpoints(dir)).toEqual([expect.objectContaining({ key: keyOf(file), path: file, offset: lines('run1', 0, 100).length })]);

    // A file the globs do not match, never followed: not read, whatever happens beside it.
    writeFileSync(join(dir, 'app.log.orig'), lines('unrelated', 0, 10));
    const renames: [string, string][] = [
      // logrotate's name when the dated one exists already.
      ['stopped1', join(dir, 'app.log-20261128.backup')],
      // logrotate's `dateext` with `extension .log`: a name that does not start with the old one.
      ['stopped2', join(dir, 'app-20261128.log')],
      // A name the globs match: followed as itself, resumed from its checkpoint (read once, not twice).
      ['stopped3', join(dir, 'kept-20261128.log')],
    ];
    for (const [i, [tag, rotated]] of renames.entries()) {
      // While stopped: 100 lines the relay has not read, the file renamed, a new app.log written.
      write(file, tag, 100);
      const key = keyOf(file);
      renameSync(file, rotated);
      write(file, `after${i + 1}`, 50);
      relay = await start();
      await allOnce();
      // The renamed file is let go once read (one the globs match stays followed), and its
      // checkpoint says it was read to its end, at its new name: no later start reads it again.
      const matched = rotated.includes('kept-');
      await vi.waitFor(async () => expect(await scrape('intake_relay_files_tracked')).toBe(matched ? 2 : 1), { timeout: 10_000, interval: 50 });
      await vi.waitFor(() => expect(checkpoints(dir)).toEqual(expect.arrayContaining([
        expect.objectContaining({ key, path: rotated, offset: statSync(rotated).size }),
        expect.objectContaining({ key: keyOf(file), path: file, offset: statSync(file).size }),
      ])), { timeout: 10_000, interval: 50 });
      expect(checkpoints(dir).filter((e) => e.path === file)).toHaveLength(1);
      expect(intake.received.length).toBe(sent.length);
      relay.proc.kill('SIGTERM');
      await exited(relay.proc);
      const recovered = relay.output().split('\n').filter((l) => l.includes('File rotated while stopped')).map((l) => (JSON.parse(l) as { file: string }).file);
      expect(recovered).toEqual(matched ? [] : [rotated]);
    }
    // A last start reads none of them again, nor the file the globs never matched.
    relay = await start();
    write(file, 'run2', 10);
    await allOnce();
    expect(await scrape('intake_relay_file_rotations_total')).toBe(0);
    expect(intake.received.some((r) => r.message.startsWith('unrelated'))).toBe(false);
    relay.proc.kill('SIGTERM');
    await exited(relay.proc);
  }, 90_000);
});
