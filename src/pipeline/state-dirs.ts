// The directories a configuration keeps state in, each locked by the daemon that runs it
// (platform/state-lock.ts): data_dir when file inputs keep checkpoints there or a disk queue lives
// under it, and each disk queue's own directory (queue.path may be anywhere).

import { sep } from 'node:path';
import type { Config } from '../config/resolve.ts';

export function stateDirs(cfg: Pick<Config, 'dataDir' | 'intakes'>): { readonly dir: string; readonly what: string }[] {
  const under = (p: string): boolean => p === cfg.dataDir || p.startsWith(cfg.dataDir.endsWith(sep) ? cfg.dataDir : cfg.dataDir + sep);
  const queues = cfg.intakes.flatMap((i) => (i.queue.type === 'disk' ? [{ dir: i.queue.path, what: `The disk queue ${i.queue.path} of intake "${i.name}"` }] : []));
  const checkpoints = cfg.intakes.some((i) => i.inputs.some((c) => c.type === 'file'));
  const dataDir = checkpoints || queues.some((q) => under(q.dir)) ? [{ dir: cfg.dataDir, what: `data_dir ${cfg.dataDir}` }] : [];
  return [...dataDir, ...queues];
}

/**
 * What a relay started as root gives its user (platform/privileges.ts): data_dir, and in it only
 * what the relay keeps there (checkpoints, the queues' directory, the lock), never other files; each
 * disk queue's directory whole.
 */
export function ownedStateDirs(cfg: Pick<Config, 'dataDir' | 'intakes'>): { readonly dir: string; readonly ours?: readonly string[] }[] {
  const queues = cfg.intakes.flatMap((i) => (i.queue.type === 'disk' ? [{ dir: i.queue.path }] : []));
  return [{ dir: cfg.dataDir, ours: ['files', 'queues', 'intake-relay.lock'] }, ...queues];
}
