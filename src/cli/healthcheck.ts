// `intake-relay healthcheck`: the container image's HEALTHCHECK, which has neither curl nor Node.
// It asks the running daemon's /readyz, at the address and port its configuration gives the
// operations server, and is healthy on 200 only.

import http from 'node:http';

/** Where the daemon that runs this configuration answers /readyz; undefined when metrics are off. */
export function readyzUrl(config: { readonly metrics: { readonly enabled: boolean; readonly address: string; readonly port: number } }): string | undefined {
  if (!config.metrics.enabled) return undefined;
  const { address, port } = config.metrics;
  // A server on every address answers on loopback: the check runs in the daemon's own network.
  const host = address === '0.0.0.0' ? '127.0.0.1' : address === '::' ? '::1' : address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}/readyz`;
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
