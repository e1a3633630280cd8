// `intake-relay tap`: a live, sampled view of the events a running relay receives, as they leave
// the parser, from the daemon's /tap (on the operations port its configuration gives). One JSON
// object per line on stdout (or one readable line with --format text); what the view missed
// (skipped by the rate, dropped while the terminal was slow) goes to stderr.

import { http } from '../platform/builtins.ts';
import { z } from 'zod';

export interface TapOptions {
  readonly intake: string | undefined;
  readonly input: string | undefined;
  readonly limit: number;
  readonly rate: number;
  readonly format: 'json' | 'text';
}

/** What the daemon sends (pipeline/tap.ts), as far as --format text uses it. */
const tapLine = z.object({
  received_at: z.string(),
  intake: z.string(),
  input: z.string(),
  sender: z.string(),
  facility: z.union([z.string(), z.number()]),
  severity: z.string(),
  hostname: z.string(),
  app_name: z.string(),
  procid: z.string(),
  structured_data: z.string(),
  message: z.string(),
});
type TapLine = z.infer<typeof tapLine>;
const notice = z.object({ notice: z.string() });

function text(l: TapLine): string {
  const tag = l.app_name ? `${l.app_name}${l.procid ? `[${l.procid}]` : ''}: ` : '';
  const sd = l.structured_data ? `${l.structured_data} ` : '';
  return `${l.received_at} ${l.intake} ${l.input} ${l.sender || '-'} ${l.facility}.${l.severity} ${l.hostname || '-'} ${tag}${sd}${l.message}`;
}

/**
 * Streams the view to `out` until it ends (its limit, the daemon stopping) or `signal` aborts
 * (Ctrl-C). Resolves to the exit status: 0, 1 (no daemon to ask, or the view refused), 64 (a bad query).
 */
export function tap(base: string, o: TapOptions, out: NodeJS.WritableStream, err: NodeJS.WritableStream, signal: AbortSignal): Promise<number> {
  const q = new URLSearchParams({ limit: String(o.limit), rate: String(o.rate) });
  if (o.intake !== undefined) q.set('intake', o.intake);
  if (o.input !== undefined) q.set('input', o.input);
  const url = `${base}/tap?${q.toString()}`;
  const show = (line: string): void => {
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      err.write(`intake-relay tap: not a line of the tap: ${line.slice(0, 200)}\n`);
      return;
    }
    const n = notice.safeParse(v);
    if (n.success) {
      err.write(`intake-relay tap: ${n.data.notice}\n`);
      return;
    }
    const l = o.format === 'text' ? tapLine.safeParse(v) : undefined;
    out.write(l?.success ? `${text(l.data)}\n` : `${line}\n`);
  };
  return new Promise((resolve) => {
    const req = http.get(url, { signal }, (res) => {
      res.setEncoding('utf8');
      if (res.statusCode !== 200) {
        let body = '';
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          let msg = body.trim();
          try {
            msg = (JSON.parse(body) as { error?: string }).error ?? msg;
          } catch {
            // not JSON: shown as it is
          }
          err.write(`intake-relay tap: ${res.statusCode ?? 0}: ${msg}\n`);
          resolve(res.statusCode === 400 ? 64 : 1);
        });
        return;
      }
      // `intake-relay tap | head`: the reader went away; that is the end, not an error.
      out.once('error', () => {
        req.destroy();
        resolve(0);
      });
      let rest = '';
      res.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) if (line) show(line);
      });
      res.on('end', () => resolve(0));
      res.on('error', () => resolve(signal.aborted ? 0 : 1));
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (signal.aborted) return resolve(0);
      const hint = e.code === 'ECONNREFUSED' ? ': is the relay running with this configuration (metrics.enabled, metrics.port)?' : '';
      err.write(`intake-relay tap: cannot reach ${base}: ${e.message}${hint}\n`);
      resolve(1);
    });
  });
}
