// Benchmark HTTP intake: HTTPS on loopback (throwaway certificate), parses every JSON body
// (gunzipping when asked), counts events, answers 200. Reports counts over IPC.
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { selfSignedCertificate } from '../src/emulator/self-signed.ts';

const { cert, key } = selfSignedCertificate();
let events = 0;
let requests = 0;
let refused = 0;
const server = https.createServer({ cert, key, keepAliveTimeout: 60_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    requests++;
    try {
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const parsed = JSON.parse(body.toString('utf8')) as { events: unknown[] };
      if (!req.headers.authorization?.startsWith('Basic ') || !Array.isArray(parsed.events)) throw new Error('bad request');
      events += parsed.events.length;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    } catch {
      refused++;
      res.writeHead(400).end();
    }
  });
});
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port, ca: cert }));
process.on('message', (m) => {
  if (m === 'count') process.send?.({ frames: events, refused, requests });
  if (m === 'stop') server.close(() => process.exit(0));
});
