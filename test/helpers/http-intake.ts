// A scripted HTTPS intake on loopback (the committed test certificate): records every request and
// answers as the test's script says: a status, headers, a delay, a hang, or a reset connection.
import { gunzipSync } from 'node:zlib';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { TLS } from './relay.ts';

export interface HttpRequestSeen {
  readonly at: number;
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly events: string[];
  readonly bodyBytes: number;
}

export type Answer =
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number }
  | { hang: true }
  | { reset: true };

export interface HttpIntake {
  readonly port: number;
  readonly url: string;
  readonly requests: HttpRequestSeen[];
  /** Events the intake accepted (answered 2xx), in arrival order. */
  readonly accepted: string[];
  script: (req: HttpRequestSeen, n: number) => Answer;
  stop(): Promise<void>;
}

export async function startHttpIntake(script: HttpIntake['script'] = () => ({ status: 200, body: '{"event_ids":[]}' })): Promise<HttpIntake> {
  const requests: HttpRequestSeen[] = [];
  const accepted: string[] = [];
  const hung = new Set<import('node:http').ServerResponse>();
  const intake: HttpIntake = {
    port: 0,
    url: '',
    requests,
    accepted,
    script,
    stop: async () => {
      for (const r of hung) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = https.createServer({ cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let raw = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
      let events: string[] = [];
      try {
        events = (JSON.parse(raw.toString('utf8')) as { events: string[] }).events;
      } catch {
        events = [];
      }
      const seen: HttpRequestSeen = { at: Date.now(), method: req.method ?? '', url: req.url ?? '', headers: req.headers, events, bodyBytes: raw.length };
      requests.push(seen);
      const a = intake.script(seen, requests.length);
      if ('hang' in a) {
        hung.add(res);
        return;
      }
      if ('reset' in a) {
        req.socket.destroy();
        return;
      }
      const answer = (): void => {
        if (a.status >= 200 && a.status < 300) accepted.push(...events);
        res.writeHead(a.status, { 'content-type': 'application/json', ...(a.headers ?? {}) }).end(a.body ?? '{}');
      };
      if (a.delayMs) setTimeout(answer, a.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(intake, { port, url: `https://127.0.0.1:${port}` });
}

/** A plain HTTP CONNECT proxy on loopback that records the tunnels it opened. */
export async function startConnectProxy(): Promise<{ url: string; tunnels: string[]; stop(): Promise<void> }> {
  const http = await import('node:http');
  const net = await import('node:net');
  const tunnels: string[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req, client: import('node:net').Socket, head: Buffer) => {
    tunnels.push(req.url ?? '');
    const [host, port] = (req.url ?? '').split(':');
    const upstream = net.connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => sockets.delete(s));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    tunnels,
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
