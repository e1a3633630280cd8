// What one output connection costs in TLS handshakes (`node bench/tls-handshake.ts`): 100
// connections in a row to a loopback TLS server in the same process, each closed at once, with
// the options the outputs use (src/outputs/tls-options.ts). CPU is both ends together.
// - per connection: a context built for each one (as `check` does), no session resumed;
// - IntakeTls: one context for all, each connection resuming the session offered on the one before.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { IntakeTls, verifiedTlsOptions } from '../src/outputs/tls-options.ts';

const D = new URL('../test/fixtures/tls/', import.meta.url);
const read = (f: string): Buffer => readFileSync(new URL(f, D));
const server = tls.createServer({ cert: read('server.crt'), key: read('server.key') }, (s) => {
  s.on('data', () => {});
  s.on('end', () => s.end());
  s.on('error', () => {});
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
const port = (server.address() as AddressInfo).port;
const endpoint = { name: 'localhost', ca: read('ca.crt'), cert: undefined, key: undefined };

async function connections(n: number, connect: () => tls.TLSSocket): Promise<{ cpuMs: number; resumed: number }> {
  const c0 = process.cpuUsage();
  let resumed = 0;
  for (let i = 0; i < n; i++) {
    await new Promise<void>((resolve, reject) => {
      const s = connect();
      s.once('secureConnect', () => {
        if (s.isSessionReused()) resumed++;
        s.end();
      });
      s.on('data', () => {});
      s.on('close', () => resolve());
      s.on('error', reject);
    });
  }
  const c = process.cpuUsage(c0);
  return { cpuMs: (c.user + c.system) / 1000 / n, resumed };
}

const n = 100;
const each = (): tls.TLSSocket => tls.connect({ host: '127.0.0.1', port, ...verifiedTlsOptions(endpoint) });
await connections(20, each); // warm-up
const plain = await connections(n, each);
const intake = new IntakeTls(endpoint);
const shared = await connections(n, () => intake.connect('127.0.0.1', port));
console.log(`per connection (a context each, no resumption): ${plain.cpuMs.toFixed(2)} ms of CPU per connection, both ends`);
console.log(`IntakeTls (one context, sessions resumed): ${shared.cpuMs.toFixed(2)} ms of CPU per connection, both ends; ${shared.resumed} of ${n} resumed`);
server.close();
