// --watch-config's poll of the file's status (src/config/watch.ts), on real files.
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { markFile, watchConfigFile } from '../../src/config/watch.ts';
import { tempDir } from '../helpers/cleanup.ts';

const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

describe('--watch-config', () => {
  it('a change made after the mark and before the watch starts (the daemon starting) is seen at the first poll', async () => {
    const file = join(tempDir('watch-'), 'relay.yaml');
    writeFileSync(file, 'a: 1\n');
    const mark = markFile(file);
    writeFileSync(file, 'a: 22\n');
    let changes = 0;
    stops.push(watchConfigFile(file, mark, () => changes++, 20));
    await vi.waitFor(() => expect(changes).toBe(1));
    // No further change: no further call, however many polls.
    await new Promise((r) => setTimeout(r, 150));
    expect(changes).toBe(1);
  });

  it('follows a file replaced by a rename (editors, ConfigMap symlink swaps); a missing file is no change until it is back', async () => {
    const dir = tempDir('watch-');
    const file = join(dir, 'relay.yaml');
    writeFileSync(file, 'a: 1\n');
    let changes = 0;
    stops.push(watchConfigFile(file, markFile(file), () => changes++, 20));
    await new Promise((r) => setTimeout(r, 100));
    expect(changes).toBe(0);
    writeFileSync(join(dir, 'next.yaml'), 'a: 1\n');
    renameSync(join(dir, 'next.yaml'), file);
    await vi.waitFor(() => expect(changes).toBe(1));
    rmSync(file);
    await new Promise((r) => setTimeout(r, 150));
    expect(changes).toBe(1);
    writeFileSync(file, 'a: 3\n');
    await vi.waitFor(() => expect(changes).toBe(2));
  });
});
