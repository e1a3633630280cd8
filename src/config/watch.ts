// --watch-config: a change of the configuration file reloads it.
//
// The file's status is polled (editors that replace the file and Kubernetes' ConfigMap symlink swaps
// change no inode being watched). The baseline is taken before the daemon reads the file, so a change
// made while it loads and starts is seen at the first poll; fs.watchFile would take its own baseline
// only after start-up and miss it.

import { stat, statSync, type Stats } from 'node:fs';

export interface FileMark {
  mtimeMs: number;
  /** Changes also when a copy keeps the modification time (cp -p). */
  ctimeMs: number;
  ino: number;
  size: number;
}

const MISSING: FileMark = { mtimeMs: 0, ctimeMs: 0, ino: 0, size: -1 };

function markOf(s: Stats | undefined): FileMark {
  return s ? { mtimeMs: s.mtimeMs, ctimeMs: s.ctimeMs, ino: s.ino, size: s.size } : MISSING;
}

function same(a: FileMark, b: FileMark): boolean {
  return a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino && a.size === b.size;
}

/** The file's status now (follows symlinks; a missing file has a mark of its own). */
export function markFile(path: string): FileMark {
  try {
    return markOf(statSync(path));
  } catch {
    return MISSING;
  }
}

/**
 * Calls onChange each time the file's status differs from the last one seen, starting from `since`
 * (from markFile before the file was read). A missing file is a change once it reappears, not before:
 * a reload of a file being replaced would only be refused. Returns the function that stops polling.
 */
export function watchConfigFile(path: string, since: FileMark, onChange: () => void, intervalMs = 1000): () => void {
  let last = since;
  let polling = false;
  const timer = setInterval(() => {
    if (polling) return;
    polling = true;
    stat(path, (err, s) => {
      polling = false;
      const now = markOf(err ? undefined : s);
      if (same(now, last)) return;
      last = now;
      if (now !== MISSING) onChange();
    });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
