// Reloads that restart the HTTP listener (same port with another setting, then another port) while
// clients post continuously: every request sent gets an answer (those in flight on the old listener
// are finished there, told Connection: close), and what was accepted is what the intake received,
// once each.
import net from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { books, startRelay, TLS, type RunningRelay } from '../helpers/relay.ts';
import { freePort, startTestIntake, type TestIntake } from '../helpers/peers.ts';
import { counts } from '../helpers/process.ts';

const KEY = 'AAAAaaaa0000111122223333444455556';

let relay: RunningRelay | undefined;
let intake: TestIntake | undefined;
afterEach(async () => {
  await relay?.stop();
  relay = undefined;
  await intake?.stop();
  intake = undefined;
});

function yaml(intakePort: number, port: number, keepAliveMs: number): string {
  return `log_level: info
metrics: { enabled: false }
shutdown_timeout_ms: 5000
intakes:
  - name: a
    intake_key: ${KEY}
    output: { type: syslog, host: 127.0.0.1, port: ${intakePort}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 200, resend_window_bytes: 65536, backoff: { initial_ms: 50, max_ms: 200 } }
listeners:
  - type: http
    name: api
    address: 127.0.0.1
    port: ${port}
    keep_alive_timeout_ms: ${keepAliveMs}
`;
}

const headers = { 'content-type': 'application/json', 'x-sekoiaio-intake-key': KEY };

describe('HTTP input: a reload that restarts the listener', () => {
  it('answers every request in flight, and the intake gets what was accepted once', async () => {
    intake = await startTestIntake();
    const [p1, p2] = [await freePort(), await freePort()];
    const dir = mkdtempSync(join(tmpdir(), 'http-reload-'));
    const file = join(dir, 'config.yaml');
    const reload = async (text: string) => {
      writeFileSync(file, text);
      return r.daemon.reload(parseConfig(text, file, {}));
    };
    const r = (relay = await startRelay(yaml(intake.port, p1, 5000)));

    let running = true;
    let accepted = 0;
    let answers = 0;
    let retried = 0;
    const failures: string[] = [];
    const poster = async (c: number): Promise<void> => {
      for (let n = 0; running; n++) {
        const body = JSON.stringify({ events: Array.from({ length: 20 }, (_, k) => `client ${c} request ${n} event ${k}`) });
        for (;;) {
          const port = r.daemon.topology.listenerPort('api');
          if (port === undefined) {
            await new Promise((res) => setTimeout(res, 5)); // between the old listener and the new
            continue;
          }
          try {
            const res = await request(`http://127.0.0.1:${port}/jsons?path=%24.events`, { method: 'POST', body, headers });
            const json = (await res.body.json()) as { accepted?: number };
            answers++;
            if (res.statusCode === 200) {
              accepted += json.accepted ?? 0;
              break;
            }
            // Not taken: retried as a sender would, after its Retry-After (shortened here).
            if (res.statusCode !== 503 && res.statusCode !== 429) failures.push(`status ${res.statusCode} ${JSON.stringify(json)}`);
            if (!(Number(res.headers['retry-after']) >= 1)) failures.push(`${res.statusCode} without Retry-After`);
            retried++;
          } catch (err) {
            const code = (err as { code?: string }).code;
            // Nothing listens there (any more, or yet): the request was never sent.
            if (code === 'ECONNREFUSED') continue;
            failures.push(`no answer: ${code ?? ''} ${(err as Error).message}`);
          }
          await new Promise((res) => setTimeout(res, 20));
        }
      }
    };
    const posters = Array.from({ length: 8 }, (_, c) => poster(c));
    try {
    await vi.waitFor(() => expect(accepted).toBeGreaterThan(400), { timeout: 20_000 });

    // A request whose body is still coming when its listener restarts.
    const slowBody = Buffer.from(JSON.stringify({ events: ['slow one', 'slow two'] }));
    const slow = net.connect(p1, '127.0.0.1');
    let slowAnswer = '';
    slow.on('data', (d: Buffer) => (slowAnswer += d.toString()));
    slow.on('error', () => {}); // seen as no answer
    const slowClosed = new Promise<void>((r) => slow.on('close', () => r()));
    slow.write(`POST /jsons?path=%24.events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-SEKOIAIO-INTAKE-KEY: ${KEY}\r\nContent-Length: ${slowBody.length}\r\nExpect: 100-continue\r\n\r\n`);
    // The relay has the request (a request not yet read is not in flight: the client may resend it).
    await vi.waitFor(() => expect(slowAnswer).toMatch(/^HTTP\/1\.1 100 /), { timeout: 10_000 });
    slow.write(slowBody.subarray(0, 10));

    // Same port, another setting: the listener restarts there.
    const first = await reload(yaml(intake.port, p1, 4000));
    expect(first.restarted).toEqual(['api']);
    const before = accepted;
    await vi.waitFor(() => expect(accepted).toBeGreaterThan(before + 1000), { timeout: 20_000 });
    slow.write(slowBody.subarray(10)); // not end(): Node's server closes a half-closed connection
    await slowClosed;
    expect(slowAnswer).toMatch(/\r\n\r\nHTTP\/1\.1 200 /);
    expect(slowAnswer).toMatch(/\r\nconnection: close\r\n/i);

    // Another port.
    expect((await reload(yaml(intake.port, p2, 4000))).restarted).toEqual(['api']);
    expect(relay.daemon.topology.listenerPort('api')).toBe(p2);
    const after = accepted;
    await vi.waitFor(() => expect(accepted).toBeGreaterThan(after + 1000), { timeout: 20_000 });
    } finally {
      running = false;
      await Promise.all(posters);
    }

    expect(failures).toEqual([]);
    expect(answers).toBeGreaterThan(0);
    const total = accepted + 2;
    await vi.waitFor(() => expect(intake!.received.length).toBeGreaterThanOrEqual(total), { timeout: 20_000 });
    const twice = [...counts(intake)].filter(([, n]) => n > 1);
    expect(twice).toEqual([]);
    expect(intake.received).toHaveLength(total);
    expect(counts(intake).get('slow two')).toBe(1);
    await vi.waitFor(async () => expect(await books(relay!, 'a')).toMatchObject({ received: total, sent: total, balanced: true }), { timeout: 10_000 });
    process.stdout.write(`HTTP reload: ${total} events accepted and received once each, ${answers} answers, ${retried} retried after 429/503\n`);
  }, 90_000);

  it('a request still unfinished after delivery_timeout_ms gets 503 with Retry-After, and none of its events go in', async () => {
    intake = await startTestIntake();
    const [p1, p2] = [await freePort(), await freePort()];
    const text = (port: number): string => yaml(intake!.port, port, 5000).replace('keep_alive_timeout_ms: 5000', 'keep_alive_timeout_ms: 5000\n    delivery_timeout_ms: 300');
    const r = (relay = await startRelay(text(p1)));
    const slow = net.connect(p1, '127.0.0.1');
    let answer = '';
    slow.on('data', (d: Buffer) => (answer += d.toString()));
    slow.on('error', () => {});
    const closed = new Promise<void>((res) => slow.on('close', () => res()));
    slow.write(`POST /jsons HTTP/1.1\r\nHost: x\r\nX-SEKOIAIO-INTAKE-KEY: ${KEY}\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n`);
    await vi.waitFor(() => expect(answer).toMatch(/^HTTP\/1\.1 100 /), { timeout: 10_000 });
    slow.write('["never finished');
    await r.daemon.reload(parseConfig(text(p2), join(mkdtempSync(join(tmpdir(), 'http-reload-')), 'c.yaml'), {}));
    await closed;
    expect(answer).toMatch(/\r\n\r\nHTTP\/1\.1 503 /);
    expect(answer).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(answer).toContain('"reason":"shutdown"');
    expect(await r.metric('intake_relay_http_input_refused_total', { reason: 'shutdown' })).toBe(1);
    expect(await r.metric('intake_relay_http_input_refused_total')).toBe(1);
    expect(await r.metric('intake_relay_events_received_total')).toBe(0);
  });
});

describe('HTTP input: a stop', () => {
  it('lets a request still uploading its body finish and be queued (the queues close after), then delivers it', async () => {
    intake = await startTestIntake();
    const port = await freePort();
    const r = (relay = await startRelay(yaml(intake.port, port, 5000).replace('    keep_alive_timeout_ms: 5000', '    keep_alive_timeout_ms: 5000\n    respond_when: queued')));
    const body = Buffer.from('first line\nsecond line\n');
    const answer = new Promise<string>((resolve) => {
      let got = '';
      const s = net.connect(port, '127.0.0.1', () => {
        s.write(`POST /plain/batch HTTP/1.1\r\nHost: x\r\nX-SEKOIAIO-INTAKE-KEY: ${KEY}\r\nContent-Length: ${body.length}\r\n\r\n`);
        s.write(body.subarray(0, 5));
      });
      s.on('data', (d: Buffer) => (got += d.toString()));
      s.on('close', () => resolve(got));
      s.on('error', () => {});
      // The rest of the body once the stop has begun.
      void vi.waitFor(() => expect(r.daemon.phase).toBe('draining'), { timeout: 5_000 }).then(() => s.end(body.subarray(5)));
    });
    await vi.waitFor(async () => expect(await r.metric('intake_relay_http_input_inflight_bytes')).toBeGreaterThan(0));
    const stopping = r.stop();
    expect(await answer).toMatch(/^HTTP\/1\.1 200 /);
    expect((await stopping).lost).toBe(0);
    expect(intake.received.map((m) => m.message)).toEqual(['first line', 'second line']);
  });
});
