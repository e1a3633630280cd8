// `intake-relay tap`: a live, sampled view of the events a running relay receives, as they leave
// the parser, from the daemon's /tap (on the operations port its configuration gives). One JSON
// object per line on stdout (or one readable line with --format text); what the view missed
// (skipped by the rate, dropped while the terminal was slow) goes to stderr.

import http from 'node:http';

export interface TapOptions {
  readonly intake: string | undefined;
  readonly input: string | undefined;
  readonly limit: number;
  readonly rate: number;
  readonly format: 'json' | 'text';
}

interface TapLine {
  readonly received_at: string;
  readonly intake: string;
  readonly input: string;
  readonly sender: string;
  readonly facility: string | number;
  readonly severity: string;
  readonly hostname: string;
  readonly app_name: string;
  readonly procid: string;
  readonly structured_data: string;
  readonly message: string;
}

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
      let rest = '';
      res.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          if (!line) continue;
          const v = JSON.parse(line) as TapLine | { notice: string };
          if ('notice' in v) err.write(`intake-relay tap: ${v.notice}\n`);
          else out.write(o.format === 'text' ? `${text(v)}\n` : `${line}\n`);
        }
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
