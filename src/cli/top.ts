// `intake-relay top`: a live view of a running relay in the terminal, from its /snapshot (on the
// operations port its configuration gives; local by default, like tap), refreshed every second. Per
// intake: events/s in and out, queue (events, fill of its limit, oldest event), backlog and time
// left, drops/s, output state; the picked intake's detail (drops by reason, resends, last error);
// per input: connections, events/s, kernel drops, silent senders; per thread: utilization. Keys: q
// quits, s sorts by the next column, up and down (or k, j) pick an intake. Without a terminal, or
// with --once, one snapshot as text (rates over one second) or --json (the snapshot as served).

import { http } from '../platform/builtins.ts';
import type { IntakeSnapshot, Snapshot } from '../telemetry/snapshot.ts';
import type { Backlog } from '../runtime/backlog.ts';
import { count, duration } from '../runtime/backlog.ts';

/** An intake as /snapshot serves it: the snapshot's, with its rates and backlog (runtime/views.ts). */
export type TopIntake = IntakeSnapshot & { readonly events_in_per_s?: number; readonly events_out_per_s?: number; readonly backlog?: Backlog | null };
export type TopSnapshot = Omit<Snapshot, 'intakes'> & { readonly intakes: readonly TopIntake[] };

/** Why a snapshot could not be had, as one line. */
export class Unreachable extends Error {}

/** GET /snapshot. */
export function fetchSnapshot(base: string, timeoutMs = 3_000): Promise<TopSnapshot> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${base}/snapshot`, { timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Unreachable(`${base}/snapshot answered ${res.statusCode ?? 0}${res.statusCode === 404 ? ': a relay older than this command?' : ''}`));
        try {
          resolve(JSON.parse(body) as TopSnapshot);
        } catch {
          reject(new Unreachable(`${base}/snapshot did not answer JSON`));
        }
      });
      res.on('error', (e) => reject(new Unreachable(`${base}: ${e.message}`)));
    });
    req.on('timeout', () => req.destroy(new Unreachable(`no answer from ${base} in ${timeoutMs / 1000} s`)));
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (e instanceof Unreachable) return reject(e);
      const hint = e.code === 'ECONNREFUSED' ? ': nothing listens there (is the relay running with this configuration: metrics.enabled, metrics.port?)' : '';
      reject(new Unreachable(`cannot reach the relay at ${base}: ${e.code ?? e.message}${hint}`));
    });
  });
}

/** Per-second rates between two snapshots of one intake. */
interface IntakeRates {
  readonly in: number;
  readonly out: number;
  readonly resent: number;
  /** Drops/s by reason (filtered ones under "filtered"). */
  readonly drops: Readonly<Record<string, number>>;
  readonly dropped: number;
}

function intakeRates(cur: TopIntake, prev: TopIntake | undefined, dt: number): IntakeRates | undefined {
  if (!prev || dt <= 0) return undefined;
  const per = (a: number, b: number): number => Math.max(0, (a - b) / dt);
  const drops: Record<string, number> = {};
  for (const [reason, n] of Object.entries(cur.dropped)) {
    const r = per(n, prev.dropped[reason] ?? 0);
    if (r > 0) drops[reason] = r;
  }
  const filtered = per(cur.filtered, prev.filtered);
  if (filtered > 0) drops.filtered = filtered;
  return { in: per(cur.received, prev.received), out: per(cur.sent, prev.sent), resent: per(cur.resent, prev.resent), drops, dropped: Object.values(drops).reduce((a, b) => a + b, 0) };
}

export const SORTS = ['name', 'in', 'out', 'queued', 'drops'] as const;
export type SortKey = (typeof SORTS)[number];

export interface Screen {
  readonly cur: TopSnapshot;
  readonly prev: TopSnapshot | undefined;
  readonly sort: SortKey;
  /** The picked intake's name. */
  readonly picked: string | undefined;
  readonly base: string;
  /** A live screen (keys shown); false for --once. */
  readonly live: boolean;
  /** Why the last refresh failed, shown on top of the last good snapshot. */
  readonly problem?: string;
}

function rate(n: number | undefined): string {
  if (n === undefined) return '-';
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e4) return `${Math.round(n / 1e3)}k`;
  return count(n);
}

function amount(n: number): string {
  if (n >= 1e10) return `${Math.round(n / 1e9)}G`;
  if (n >= 1e7) return `${Math.round(n / 1e6)}M`;
  if (n >= 1e5) return `${Math.round(n / 1e3)}k`;
  return count(n);
}

function percent(f: number | undefined): string {
  if (f === undefined) return '-';
  if (f >= 10) return '>999%';
  return `${(f * 100).toFixed(f < 0.1 ? 1 : 0)}%`;
}

function bytes(n: number): string {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(1)} GiB`;
  if (n >= 1 << 20) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  if (n >= 1024) return `${Math.round(n / 1024)} KiB`;
  return `${n} B`;
}

function age(s: number): string {
  if (s <= 0) return '-';
  if (s < 10) return `${s.toFixed(1)}s`;
  if (s < 120) return `${Math.round(s)}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}

/** The fill of the queue: the larger of events and bytes against their limits. */
function fill(i: TopIntake): number | undefined {
  const e = i.max_events ? i.queued_events / i.max_events : 0;
  const b = i.max_bytes ? i.queued_bytes / i.max_bytes : 0;
  return i.max_events || i.max_bytes ? Math.max(e, b) : undefined;
}

/** What the output is doing, in a word. */
export function outputState(i: TopIntake): string {
  if (i.state === 'key_rejected') return 'key refused';
  if (!i.accepting) return 'refusing';
  if (i.stalled && i.state === 'connected') return 'stalled';
  return i.state;
}

/** 42s, 3m05s, 2h10m. */
function short(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

function backlogCell(b: Backlog | null | undefined): string {
  if (!b) return '-';
  if (b.eta_seconds !== null) return `~${short(b.eta_seconds)}`;
  return b.trend === 'growing' ? 'growing' : 'held';
}

/** Text in a column of `n` (the last one a space before the next column), cut with ~ when longer. */
const pad = (s: string, n: number): string => (s.length > n - 1 ? `${s.slice(0, n - 2)}~ ` : s.padEnd(n));
/** A figure right-aligned in a column of `n`, after a space; # when it does not fit. */
const lpad = (s: string, n: number): string => (s.length > n - 1 ? ` ${'#'.repeat(n - 1)}` : s.padStart(n));

/** Each intake's rates between the two snapshots (undefined for an intake new since the last one). */
function ratesOf(cur: TopSnapshot, prev: TopSnapshot | undefined): Map<string, IntakeRates | undefined> {
  const dt = prev ? (cur.at - prev.at) / 1000 : 0;
  return new Map(cur.intakes.map((i) => [i.name, intakeRates(i, prev?.intakes.find((p) => p.name === i.name), dt)]));
}

/** The intakes in the order the screen lists them: by `sort`, then by name. */
export function sortedIntakes(cur: TopSnapshot, prev: TopSnapshot | undefined, sort: SortKey): TopIntake[] {
  const rates = ratesOf(cur, prev);
  const key: Record<SortKey, (i: TopIntake) => number | string> = {
    name: (i) => i.name.toLowerCase(),
    in: (i) => -(rates.get(i.name)?.in ?? i.events_in_per_s ?? 0),
    out: (i) => -(rates.get(i.name)?.out ?? i.events_out_per_s ?? 0),
    queued: (i) => -i.queued_events,
    drops: (i) => -(rates.get(i.name)?.dropped ?? 0),
  };
  return [...cur.intakes].sort((a, b) => {
    const x = key[sort](a);
    const y = key[sort](b);
    return x < y ? -1 : x > y ? 1 : a.name.localeCompare(b.name);
  });
}

/** The screen's lines (at most 80 columns each), from the latest snapshot and the one before. */
export function render(s: Screen): string[] {
  const { cur, prev } = s;
  const dt = prev ? (cur.at - prev.at) / 1000 : 0;
  const rates = ratesOf(cur, prev);
  const inRate = (i: TopIntake): number | undefined => rates.get(i.name)?.in ?? i.events_in_per_s;
  const outRate = (i: TopIntake): number | undefined => rates.get(i.name)?.out ?? i.events_out_per_s;
  const intakes = sortedIntakes(cur, prev, s.sort);
  const time = new Date(cur.at).toISOString().slice(11, 19);
  const lines: string[] = [];
  const head = `intake-relay ${cur.version} | ${cur.phase} | ${time} UTC | ${s.base.replace(/^http:\/\//, '')}`;
  lines.push(head);
  if (s.problem) lines.push(`! ${s.problem}`.slice(0, 80));
  lines.push('');
  const mark = (k: SortKey, label: string): string => (s.sort === k && s.live ? `${label}*` : label);
  lines.push(`  ${pad(mark('name', 'INTAKE'), 14)}${pad('OUTPUT', 12)}${lpad(mark('in', 'IN/s'), 7)}${lpad(mark('out', 'OUT/s'), 7)}${lpad(mark('queued', 'QUEUED'), 8)}${lpad('FILL', 6)}${lpad('OLDEST', 7)}${lpad('BACKLOG', 9)}${lpad(mark('drops', 'DROP/s'), 8)}`);
  for (const i of intakes) {
    const f = fill(i);
    const r = rates.get(i.name);
    const picked = i.name === s.picked;
    lines.push(`${picked ? '>' : ' '} ${pad(i.name, 14)}${pad(outputState(i), 12)}${lpad(rate(inRate(i)), 7)}${lpad(rate(outRate(i)), 7)}${lpad(amount(i.queued_events), 8)}${lpad(percent(f), 6)}${lpad(age(i.oldest_age_seconds), 7)}${lpad(backlogCell(i.backlog), 9)}${lpad(r ? rate(r.dropped) : '-', 8)}`);
  }
  const p = cur.intakes.find((i) => i.name === s.picked) ?? intakes[0];
  if (p) lines.push('', ...detail(p, rates.get(p.name)));
  if (cur.inputs.length > 0) {
    lines.push('', `  ${pad('INPUT', 22)}${pad('INTAKE', 16)}${lpad('CONNS', 6)}${lpad('EVENTS/s', 10)}${lpad('KERNEL DROPS', 13)}${lpad('SILENT', 8)}`);
    for (const i of cur.inputs) {
      const before = prev?.inputs.find((x) => x.input === i.input && x.intake === i.intake);
      const r = before && dt > 0 ? Math.max(0, (i.received - before.received) / dt) : undefined;
      lines.push(`  ${pad(i.input, 22)}${pad(i.intake || '(listener)', 16)}${lpad(amount(i.connections), 6)}${lpad(rate(r), 10)}${lpad(i.kernel_drops === null ? '-' : amount(i.kernel_drops), 13)}${lpad(amount(i.silent_senders), 8)}`);
    }
  }
  if (cur.threads.length > 0) lines.push('', `  THREADS  ${cur.threads.map((t) => `${t.thread} ${Math.round(t.utilization * 100)}%`).join('   ')}`);
  if (s.live) lines.push('', `q quit   s sort (by ${s.sort})   up/down pick an intake`);
  return lines.map((l) => l.slice(0, 80));
}

/** The picked intake's lines: its queue, its drops by reason, its backlog, its last error. */
function detail(i: TopIntake, r: IntakeRates | undefined): string[] {
  const limit = i.max_bytes ? ` of ${bytes(i.max_bytes)}` : '';
  const out = [`${i.name} -> ${i.output}: ${count(i.queued_events)} events queued (${bytes(i.queued_bytes)}${limit}), ${count(i.unacked_events)} unacked, resent ${r ? rate(r.resent) : '-'}/s`];
  const drops = r ? Object.entries(r.drops).map(([k, v]) => `${k} ${rate(v)}`) : [];
  out.push(`  drops/s: ${drops.length > 0 ? drops.join(', ') : 'none'}${Object.keys(i.dropped).length > 0 ? `  (since start: ${Object.entries(i.dropped).map(([k, v]) => `${k} ${amount(v)}`).join(', ')})` : ''}`);
  const b = i.backlog;
  if (b) {
    const since = b.since.slice(11, 19);
    out.push(b.eta_seconds !== null
      ? `  backlog: ${count(b.events)} events, draining at ${count(b.drain_per_s)}/s: about ${duration(b.eta_seconds)} left (since ${since})`
      : `  backlog: ${count(b.events)} events, ${b.trend === 'growing' ? 'growing' : 'not shrinking'} (since ${since})`);
  }
  if (i.last_error) out.push(`  last error: ${i.last_error}`);
  return out;
}

/** The snapshot as text, once: two snapshots a second apart give the rates. */
export async function once(base: string, json: boolean, out: NodeJS.WritableStream): Promise<void> {
  const first = await fetchSnapshot(base);
  if (json) {
    out.write(`${JSON.stringify(first)}\n`);
    return;
  }
  await new Promise((r) => setTimeout(r, 1000));
  const cur = await fetchSnapshot(base);
  out.write(`${render({ cur, prev: first, sort: 'name', picked: undefined, base, live: false }).join('\n')}\n`);
}

interface Tty {
  readonly stdin: NodeJS.ReadStream;
  readonly stdout: NodeJS.WriteStream;
}

/** The live screen until q, Ctrl-C or `signal`; the terminal restored whatever ends it. */
export async function live(base: string, tty: Tty, signal: AbortSignal, intervalMs = 1000): Promise<void> {
  const { stdin, stdout } = tty;
  let cur: TopSnapshot | undefined;
  let prev: TopSnapshot | undefined;
  let sort: SortKey = 'name';
  let picked: string | undefined;
  let problem: string | undefined;
  const draw = (): void => {
    const rows = stdout.rows || 24;
    const lines = cur
      ? render({ cur, prev, sort, picked, base, live: true, ...(problem ? { problem } : {}) })
      : [`intake-relay top: ${problem ?? `asking ${base}...`}`, '', 'q quits.'];
    stdout.write(`\x1b[H${lines.slice(0, rows).map((l) => l.slice(0, stdout.columns || 80)).join('\x1b[K\r\n')}\x1b[K\x1b[J`);
  };
  const refresh = async (): Promise<void> => {
    try {
      const next = await fetchSnapshot(base);
      prev = cur;
      cur = next;
      problem = undefined;
      if (picked === undefined || !cur.intakes.some((i) => i.name === picked)) picked = cur.intakes[0]?.name;
    } catch (err) {
      problem = err instanceof Error ? err.message : String(err);
    }
    if (!signal.aborted) draw();
  };
  const move = (by: number): void => {
    if (!cur) return;
    const names = sortedIntakes(cur, prev, sort).map((i) => i.name);
    const at = Math.max(0, names.indexOf(picked ?? ''));
    picked = names[Math.min(names.length - 1, Math.max(0, at + by))];
  };
  await new Promise<void>((resolve) => {
    const finish = (): void => {
      clearInterval(timer);
      stdin.off('data', onKey);
      signal.removeEventListener('abort', finish);
      if (stdin.isTTY) stdin.setRawMode(false);
      stdin.pause();
      stdout.write('\x1b[?25h\x1b[?1049l');
      resolve();
    };
    const onKey = (data: Buffer): void => {
      const k = data.toString('latin1');
      if (k === 'q' || k === 'Q' || k === '\x03' || k === '\x1b') return finish();
      if (k === 's') sort = SORTS[(SORTS.indexOf(sort) + 1) % SORTS.length] as SortKey;
      else if (k === 'S') sort = SORTS[(SORTS.indexOf(sort) + SORTS.length - 1) % SORTS.length] as SortKey;
      else if (k === '\x1b[A' || k === 'k') move(-1);
      else if (k === '\x1b[B' || k === 'j') move(1);
      else return;
      draw();
    };
    stdout.write('\x1b[?1049h\x1b[?25l\x1b[H\x1b[J');
    if (stdin.isTTY) stdin.setRawMode(true);
    stdin.resume();
    stdin.on('data', onKey);
    signal.addEventListener('abort', finish, { once: true });
    const timer = setInterval(() => void refresh(), intervalMs);
    draw();
    void refresh();
  });
}
