// The network's routine failures are a code and a sentence in the log, never a stack trace: each
// output (syslog, RELP, HTTP) against a peer that refuses the connection, one that resets it (at
// once, or after the TLS handshake), and one that accepts it and never answers (a timeout). Every event stays queued and counted.
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import * as tls from 'node:tls';
import { describe, expect, it, vi } from 'vitest';
import { freePort, sendTcp } from '../helpers/peers.ts';
import { books, startRelay, TEST_KEY, TLS } from '../helpers/relay.ts';
import { track } from '../helpers/cleanup.ts';

/**
 * A peer that does one thing to every connection: reset it at once, reset it once the TLS
 * handshake is done, or hold it without a byte.
 */
async function peer(behaviour: 'reset' | 'tls-reset' | 'silent'): Promise<{ port: number; stop(): Promise<void> }> {
  const held = new Set<Socket>();
  const server: Server = createServer((s) => {
    if (behaviour === 'reset') s.resetAndDestroy();
    else if (behaviour === 'tls-reset') {
      const t = new tls.TLSSocket(s, { isServer: true, cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`) });
      t.on('error', () => undefined);
      t.once('secure', () => s.resetAndDestroy());
    }
    else {
      held.add(s);
      s.on('error', () => undefined);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    stop: async () => {
      for (const s of held) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const OUTPUTS = {
  syslog: (port: number) => `{ type: syslog, host: 127.0.0.1, port: ${port}, server_name: localhost, ca_file: ${TLS}ca.crt, connect_timeout_ms: 500, backoff: { initial_ms: 100, max_ms: 300 } }`,
  relp: (port: number) => `{ type: relp, host: 127.0.0.1, port: ${port}, server_name: localhost, ca_file: ${TLS}ca.crt, connect_timeout_ms: 500, backoff: { initial_ms: 100, max_ms: 300 } }`,
  http: (port: number) => `{ type: http, url: https://127.0.0.1:${port}, ca_file: ${TLS}ca.crt, proxy: none, connect_timeout_ms: 500, headers_timeout_ms: 500, request_timeout_ms: 1000, backoff: { initial_ms: 100, max_ms: 300 } }`,
};

describe('routine network failures in the log', () => {
  it('refused, reset and timed-out connections of every output: a code and a sentence, no stack; every event still counted', async () => {
    const refused = await freePort();
    const reset = track(await peer('reset'));
    const afterTls = track(await peer('tls-reset'));
    const silent = track(await peer('silent'));
    const peers = { refused, reset: reset.port, 'tls-reset': afterTls.port, timeout: silent.port };
    const intakes = Object.entries(OUTPUTS).flatMap(([type, output]) => Object.entries(peers).map(([how, port]) => ({ name: `${type}-${how}`, output: output(port) })));
    const relay = await startRelay(`log_level: debug
metrics: { enabled: false }
shutdown_timeout_ms: 500
intakes:
${intakes.map((i) => `  - name: ${i.name}
    intake_key: ${TEST_KEY}
    inputs: [{ type: tcp, name: in, address: 127.0.0.1, port: 0 }]
    output: ${i.output}`).join('\n')}
`);
    try {
      for (const i of intakes) await sendTcp(relay.port(i.name, 'in'), '<14>Nov 23 10:00:00 host app: one\n<14>Nov 23 10:00:00 host app: two\n');
      // Each output has tried and failed at least twice.
      await vi.waitFor(async () => {
        for (const i of intakes) expect(await relay.metric('intake_relay_output_errors_total', { intake: i.name }), i.name).toBeGreaterThanOrEqual(2);
      }, { timeout: 30_000, interval: 200 });
      const failures = relay.logs.filter((l) => l.err !== undefined);
      expect(failures.length).toBeGreaterThan(0);
      for (const l of failures) {
        const err = l.err as Record<string, unknown>;
        expect(err.stack, JSON.stringify(l)).toBeUndefined();
        expect(typeof err.message).toBe('string');
      }
      expect(relay.logText()).not.toMatch(/\\n\s+at |"stack"/);
      for (const i of intakes) { const b = await books(relay, i.name); expect(b, `${i.name} ${JSON.stringify(b)}`).toMatchObject({ received: 2, sent: 0, dropped: 0, balanced: true }); }
    } finally {
      await relay.stop();
    }
  }, 60_000);
});
