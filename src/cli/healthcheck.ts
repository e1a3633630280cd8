// `intake-relay healthcheck`: the container image's HEALTHCHECK, which has neither curl nor Node.
// It asks the running daemon's /readyz, at the address and port its configuration gives the
// operations server, and is healthy on 200 only.

import { http } from '../platform/builtins.ts';
import { opsBase } from './ops-url.ts';

/** Where the daemon that runs this configuration answers /readyz; undefined when metrics are off. */
export function readyzUrl(config: Parameters<typeof opsBase>[0]): string | undefined {
  const base = opsBase(config);
  return base && `${base}/readyz`;
}

/** One GET: ok on 200; the detail is one line (the status and the start of the body, or the error). */
export function probeReadyz(url: string, timeoutMs: number): Promise<{ ok: boolean; detail: string }> {
  return new Promise((resolve) => {
    // One connection, closed after the answer: the process exits at once.
    const req = http.get(url, { timeout: timeoutMs, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < 300) body += chunk;
      });
      res.on('end', () => resolve({ ok: res.statusCode === 200, detail: `${url}: ${res.statusCode ?? 0} ${body.slice(0, 300).replace(/\s+/g, ' ')}`.trimEnd() }));
      res.on('error', (err) => resolve({ ok: false, detail: `${url}: ${err.message}` }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve({ ok: false, detail: `${url}: ${err.message}` }));
  });
}
