// State directory locks without the native addon: util-linux's flock(1) locks the open file this
// process keeps, seen from another process (flock(1) again) as held until it is let go; the holder
// is named; one directory locked twice by one process is one lock.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { tempDir, track } from '../helpers/cleanup.ts';

vi.mock('../../src/platform/native-addon.ts', () => ({ nativeAddon: () => ({ exports: undefined, reason: 'mocked away' }) }));
const { LOCK_FILE, lockMethod, StateLockedError, StateLocks, stateHolder } = await import('../../src/platform/state-lock.ts');

/** Whether another process could take the lock now (flock -n, let go at once). */
function freeFromOutside(dir: string): boolean {
  return spawnSync('flock', ['--nonblock', join(dir, LOCK_FILE), 'true']).status === 0;
}

describe('state locks through flock(1)', () => {
  it('is the method without the addon; holds against another process until released; names the holder', () => {
    expect(lockMethod()).toBe('flock-command');
    const dir = join(tempDir('lock-'), 'data');
    const warnings: string[] = [];
    const a = new StateLocks('/etc/a.yaml', (m) => warnings.push(m));
    a.hold([{ dir, what: `data_dir ${dir}` }]);
    expect(freeFromOutside(dir)).toBe(false);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid, config: '/etc/a.yaml' });
    expect(stateHolder(dir)?.holder).toMatchObject({ pid: process.pid });
    // The same directory again (a reload): one lock, still held until the last owner lets go.
    a.hold([{ dir, what: `data_dir ${dir}` }]);
    const b = new StateLocks('/etc/a.yaml', () => {});
    b.hold([{ dir, what: `data_dir ${dir}` }]);
    a.releaseAll();
    expect(freeFromOutside(dir)).toBe(false);
    b.releaseAll();
    expect(freeFromOutside(dir)).toBe(true);
    expect(stateHolder(dir)).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it('another process holding one of the directories: StateLockedError naming it, and none of the others stays locked', async () => {
    const root = tempDir('lock-');
    const [one, two] = [join(root, 'one'), join(root, 'two')];
    mkdirSync(two, { recursive: true });
    // Another process holds `two` (as a second relay would).
    const other = spawn('flock', ['--nonblock', join(two, LOCK_FILE), 'sleep', '60'], { stdio: 'ignore' });
    track({ stop: async () => void other.kill('SIGKILL') });
    await vi.waitFor(() => expect(freeFromOutside(two)).toBe(false));
    const locks = new StateLocks('/etc/b.yaml', () => {});
    let caught: unknown;
    try {
      locks.hold([{ dir: one, what: `data_dir ${one}` }, { dir: two, what: `The disk queue ${two}` }]);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(StateLockedError);
    expect((caught as Error).message).toMatch(new RegExp(`^The disk queue ${two} is in use by another process`));
    expect((caught as { code: string }).code).toBe('ERELAY_STATE_LOCKED');
    expect(freeFromOutside(one)).toBe(true);
    expect(locks.dirs).toEqual([]);
    // Spawning flock (here and in each freeFromOutside) takes seconds on a loaded 2-core machine.
  }, 30_000);
});
