// An output type that is not built in: test/fixtures/outputs/lines (a schema, a sink, a definition,
// and two registry lines) and nothing else, in core or anywhere in src/. Registered, it is a type
// like the others: the loader validates its configuration, the relay runs it, the runner retries
// it, its metrics and books count it.
import { createServer, type Socket } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import '../fixtures/outputs/lines/register.ts';
import { parseConfig, ConfigError } from '../../src/config/load.ts';
import { books, startRelay, TEST_KEY } from '../helpers/relay.ts';
import { sendTcp } from '../helpers/peers.ts';
import { track, trackServer } from '../helpers/cleanup.ts';

function yaml(port: number): string {
  return `log_level: info
metrics: { enabled: false }
shutdown_timeout_ms: 1000
intakes:
  - name: t
    intake_key: ${TEST_KEY}
    inputs: [{ type: tcp, name: in, address: 127.0.0.1, port: 0 }]
    output: { type: lines, port: ${port} }
`;
}

describe('an output type registered from outside src/', () => {
  it('is validated, run, retried and counted like a built-in one', async () => {
    const lines: string[] = [];
    const conns: Socket[] = [];
    const server = trackServer(createServer((s) => {
      conns.push(s);
      let rest = '';
      s.on('data', (d: Buffer) => {
        const parts = (rest + d.toString()).split('\n');
        rest = parts.pop() ?? '';
        lines.push(...parts);
      });
      s.on('error', () => undefined);
    }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;

    // Its own configuration errors, from its own schema.
    expect(() => parseConfig(yaml(port).replace(`port: ${port} }`, `port: ${port}, colour: red }`), '/x.yaml', {})).toThrow(ConfigError);
    expect(parseConfig(yaml(port), '/x.yaml', {}).intakes[0]?.output).toMatchObject({ type: 'lines', host: '127.0.0.1', port });

    const relay = track(await startRelay(yaml(port)));
    await sendTcp(relay.port('t', 'in'), Array.from({ length: 200 }, (_, i) => `<14>Nov 28 10:00:00 h app: line ${i}\n`).join(''));
    await vi.waitFor(() => expect(lines).toHaveLength(200), { timeout: 10_000 });
    expect(lines).toEqual(Array.from({ length: 200 }, (_, i) => `line ${i}`));
    // The connection cut: the runner retries through the sink's retryable result.
    for (const c of conns) c.destroy();
    await new Promise((r) => setTimeout(r, 100));
    await sendTcp(relay.port('t', 'in'), Array.from({ length: 50 }, (_, i) => `<14>Nov 28 10:00:00 h app: after ${i}\n`).join(''));
    await vi.waitFor(() => expect(lines.filter((l) => l.startsWith('after '))).toHaveLength(50), { timeout: 10_000 });
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: 250, sent: 250, dropped: 0, balanced: true }));
    expect(await relay.metric('intake_relay_events_sent_total', { intake: 't', output: 'lines' })).toBe(250);
  });
});
