// The HTTP input with real clients (undici and curl): every endpoint of the intake API and every
// way of giving the key, routes with bearer tokens, gzip, each bad input, a slow client, and a flood
// that fills the queue (429 + Retry-After; after retrying, nothing lost and nothing twice).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { books, startRelay, TLS, type RunningRelay } from '../helpers/relay.ts';
import { freePort, startTestIntake, type TestIntake } from '../helpers/peers.ts';

const execFileAsync = promisify(execFile);
const KEY_A = 'AAAAaaaa0000111122223333444455556';
const KEY_B = 'BBBBbbbb0000111122223333444455556';
const TOKEN = 'route-token-0123456789abcdef';

let relay: RunningRelay | undefined;
let intake: TestIntake | undefined;
afterEach(async () => {
  await relay?.stop();
  relay = undefined;
  await intake?.stop();
  intake = undefined;
});

function yaml(intakePort: number, listener = '', queue = ''): string {
  const out = `    output: { type: syslog, host: 127.0.0.1, port: ${intakePort}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 100, backoff: { initial_ms: 50, max_ms: 100 } }`;
  return `log_level: debug
metrics: { enabled: false }
shutdown_timeout_ms: 1000
intakes:
  - name: a
    intake_key: ${KEY_A}
${out}
${queue}
  - name: b
    intake_key: ${KEY_B}
${out}
listeners:
  - type: http
    name: api
    address: 127.0.0.1
    port: 0
    max_body_bytes: 200000
    max_decompressed_bytes: 500000
    max_events_per_request: 1000
    max_message_bytes: 1000
    headers_timeout_ms: 400
    paths:
      - { path: /ingest/app, intake: a, format: lines, bearer_token: ${TOKEN} }
      - { path: /ndjson, intake: b, format: ndjson }
${listener}`;
}

async function setup(listener = '', queue = '') {
  intake = await startTestIntake();
  relay = await startRelay(yaml(intake.port, listener, queue));
  const base = `http://127.0.0.1:${relay.daemon.topology.listenerPort('api')}`;
  return { base, intake, relay };
}

const basic = (key: string): string => `Basic ${Buffer.from(`:${key}`).toString('base64')}`;

async function post(url: string, body: string | Buffer, headers: Record<string, string> = {}, method = 'POST') {
  const res = await request(url, { method: method as 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

describe('HTTP input: the intake API', () => {
  it('accepts every endpoint and every way of giving the key, and routes by key', async () => {
    const { base, intake, relay } = await setup();
    // The intake's real request shape (../shared/intake-platform-spec.md), unchanged.
    const r1 = await post(`${base}/jsons?path=%24.events&status_code=200`, JSON.stringify({ events: ['jsons one', 'jsons two'] }), { authorization: basic(KEY_A) });
    expect(r1).toMatchObject({ status: 200, json: { accepted: 2, event_ids: [expect.any(String), expect.any(String)] } });
    expect((await post(`${base}/jsons`, JSON.stringify([{ user: 'x', n: 1 }]), { 'x-sekoiaio-intake-key': KEY_B })).status).toBe(200);
    const r3 = await post(`${base}/plain?intake_key=${KEY_A}&status_code=202`, 'plain one', { 'content-type': 'text/plain' });
    expect(r3).toMatchObject({ status: 202, json: { accepted: 1, event_id: expect.any(String) } });
    expect((await post(`${base}/plain/batch`, 'batch one\r\nbatch two\n\nbatch three\n', { authorization: basic(KEY_B), 'content-type': 'text/plain' })).json).toMatchObject({ accepted: 3 });
    expect((await post(`${base}/batch`, JSON.stringify({ intake_key: KEY_A, jsons: ['b1', { k: 'v' }] }))).json).toMatchObject({ accepted: 2 });
    const r6 = await post(`${base}/array`, JSON.stringify([{ intake_key: KEY_A, json: 'arr a' }, { intake_key: 'nope', json: 'lost' }, { intake_key: KEY_B, json: { arr: 'b' } }]));
    expect(r6).toMatchObject({ status: 200, json: { accepted: 2, refused: [{ index: 1, error: 'intake key not served here' }] } });

    const want: Record<string, string[]> = {
      [KEY_A]: ['jsons one', 'jsons two', 'plain one', 'b1', '{"k":"v"}', 'arr a'],
      [KEY_B]: ['{"user":"x","n":1}', 'batch one', 'batch two', 'batch three', '{"arr":"b"}'],
    };
    await vi.waitFor(() => expect(intake.received).toHaveLength(11), { timeout: 10_000 });
    for (const key of [KEY_A, KEY_B]) {
      expect(intake.received.filter((m) => m.intakeKey === key).map((m) => m.message).sort()).toEqual(want[key]!.sort());
    }
    expect(intake.received[0]).toMatchObject({ hostname: '127.0.0.1', problems: [] });
    await vi.waitFor(async () => {
      expect(await books(relay, 'a')).toMatchObject({ received: 6, sent: 6, balanced: true });
      expect(await books(relay, 'b')).toMatchObject({ received: 5, sent: 5, balanced: true });
    });
  });

  it('curl: gzip bodies, a route with its bearer token, NDJSON', async () => {
    const { base, intake } = await setup();
    const dir = mkdtempSync(join(tmpdir(), 'curl-'));
    writeFileSync(join(dir, 'body.gz'), gzipSync(JSON.stringify({ events: ['gz one', 'gz two'] })));
    // Not spawnSync: the relay runs in this process and must answer while curl waits.
    const curl = (args: string[]) => execFileAsync('curl', ['-sS', '-o', '-', '-w', '\n%{http_code}', ...args], { encoding: 'utf8' });
    const gz = await curl(['-H', `Authorization: ${basic(KEY_A)}`, '-H', 'Content-Encoding: gzip', '-H', 'Content-Type: application/json', '--data-binary', `@${join(dir, 'body.gz')}`, `${base}/jsons?path=%24.events`]);
    expect(gz.stdout.trim().split('\n').pop()).toBe('200');
    const route = await curl(['-H', `Authorization: Bearer ${TOKEN}`, '--data-binary', 'route one\nroute two\n', `${base}/ingest/app`]);
    expect(route.stdout.trim().split('\n').pop()).toBe('200');
    const denied = await curl(['-H', 'Authorization: Bearer wrong-token-0123456789', '--data-binary', 'x\n', `${base}/ingest/app`]);
    expect(denied.stdout.trim().split('\n').pop()).toBe('401');
    const nd = await curl(['--data-binary', '{"a":1}\n"just text"\n', `${base}/ndjson`]);
    expect(nd.stdout.trim().split('\n').pop()).toBe('200');
    await vi.waitFor(() => expect(intake.received).toHaveLength(6), { timeout: 10_000 });
    expect(intake.received.map((m) => m.message).sort()).toEqual(['"just text"'.slice(1, -1), '{"a":1}', 'gz one', 'gz two', 'route one', 'route two'].sort());
  });
});

describe('HTTP input: bad input gets a clear answer and a count, never a crash', () => {
  it.each([
    ['invalid JSON', '/jsons', '{"events": [', { authorization: basic(KEY_A) }, 400, 'invalid_json'],
    ['a path that selects nothing', '/jsons?path=%24.nothing', '{"events": []}', { authorization: basic(KEY_A) }, 400, 'path_not_found'],
    ['a body that is not a list', '/jsons', '{"events": []}', { authorization: basic(KEY_A) }, 400, 'not_a_list'],
    ['an unknown key', '/jsons', '[]', { authorization: basic('WrongKey0000') }, 401, 'unauthorized'],
    ['no key at all', '/plain', 'x', {}, 401, 'unauthorized'],
    ['an unknown path', '/nothing', 'x', {}, 404, 'not_found'],
    ['an unsupported encoding', '/plain', 'x', { 'content-encoding': 'br', authorization: basic(KEY_A) }, 415, 'unsupported_encoding'],
    ['a multipart body', '/plain', '--b\r\n\r\nx\r\n--b--', { 'content-type': 'multipart/form-data; boundary=b', authorization: basic(KEY_A) }, 415, 'unsupported_media_type'],
    ['too large a body', '/plain', 'x'.repeat(300_000), { authorization: basic(KEY_A) }, 413, 'body_too_large'],
    ['too many events', '/jsons', JSON.stringify(Array.from({ length: 1001 }, () => 'e')), { authorization: basic(KEY_A) }, 413, 'too_many_events'],
  ])('%s', async (_what, path, body, headers, status, reason) => {
    const { base, relay } = await setup();
    const r = await post(`${base}${path}`, body, headers as Record<string, string>);
    expect(r.status).toBe(status);
    expect(r.json).toMatchObject({ reason, error: expect.any(String) });
    expect(await relay.metric('intake_relay_http_input_refused_total', { reason })).toBe(1);
    expect(await relay.metric('intake_relay_events_received_total')).toBe(0);
  });

  it('a wrong method gets 405 with Allow', async () => {
    const { base } = await setup();
    const r = await post(`${base}/jsons`, '', {}, 'PUT');
    expect(r.status).toBe(405);
    expect(r.headers.allow).toBe('POST');
  });

  it('a gzip bomb gets 413 without being inflated past the limit', async () => {
    const { base, relay } = await setup();
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024)); // 50 MB of zeros, ~50 KB compressed
    expect(bomb.length).toBeLessThan(200_000);
    const r = await post(`${base}/plain`, bomb, { authorization: basic(KEY_A), 'content-encoding': 'gzip' });
    expect(r).toMatchObject({ status: 413, json: { reason: 'body_too_large' } });
    expect(await relay.metric('intake_relay_http_input_refused_total', { reason: 'body_too_large' })).toBe(1);
  });

  it('an event over max_message_bytes is refused alone and counted; the others go', async () => {
    const { base, intake, relay } = await setup();
    const r = await post(`${base}/jsons`, JSON.stringify(['small', 'y'.repeat(2000), 'also small']), { authorization: basic(KEY_A) });
    expect(r.json).toMatchObject({ accepted: 2, refused: [{ index: 1 }] });
    await vi.waitFor(() => expect(intake.received.map((m) => m.message)).toEqual(['small', 'also small']));
    await vi.waitFor(async () => expect(await books(relay, 'a')).toMatchObject({ received: 3, sent: 2, dropped: 1, balanced: true }));
  });

  it('a slow client is cut off after headers_timeout_ms', async () => {
    const { base, relay } = await setup();
    const { port } = new URL(base);
    const s = net.connect(Number(port), '127.0.0.1');
    s.write('POST /plain HTTP/1.1\r\nHost: x\r\n'); // and never finishes the headers
    let answer = '';
    s.on('data', (d: Buffer) => (answer += d.toString()));
    const started = Date.now();
    await new Promise((r) => s.once('close', r));
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(await relay.metric('intake_relay_http_input_refused_total', { reason: 'slow_client' })).toBe(1);
    expect(await relay.metric('intake_relay_http_input_refused_total', { reason: 'bad_request' })).toBe(0);
  });
});

describe('HTTP input: backpressure', () => {
  it('a flood that fills the queue gets 429 + Retry-After; after retrying, nothing is lost or doubled', async () => {
    const port = await freePort(); // the intake is down at first
    relay = await startRelay(yaml(port, '', '    queue: { max_events: 1000 }'));
    const base = `http://127.0.0.1:${relay.daemon.topology.listenerPort('api')}`;
    let throttled = 0;
    let retryAfter = '';
    const send = async (i: number): Promise<void> => {
      const body = JSON.stringify({ events: Array.from({ length: 100 }, (_, j) => `req ${i} ev ${j}`) });
      for (;;) {
        const r = await post(`${base}/jsons?path=%24.events`, body, { authorization: basic(KEY_A) });
        if (r.status === 200) return;
        expect(r.status).toBe(429);
        throttled++;
        retryAfter = String(r.headers['retry-after']);
        await new Promise((res) => setTimeout(res, 100)); // a test client that retries sooner than asked
      }
    };
    const all = Promise.all(Array.from({ length: 50 }, (_, i) => send(i)));
    await vi.waitFor(() => expect(throttled).toBeGreaterThan(0), { timeout: 10_000 });
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    intake = await startTestIntake(port);
    await all;
    await vi.waitFor(() => expect(intake!.received).toHaveLength(5_000), { timeout: 20_000 });
    expect(new Set(intake.received.map((m) => m.message)).size).toBe(5_000);
    expect(await relay.metric('intake_relay_http_input_refused_total', { reason: 'throttled' })).toBe(throttled);
    await vi.waitFor(async () => expect(await books(relay!, 'a')).toMatchObject({ received: 5_000, sent: 5_000, dropped: 0, balanced: true }));
  });
});

describe('HTTP input: when the answer comes (respond_when)', () => {
  it('auto with a memory queue: 200 only once the events reached the intake; 503 not_delivered after delivery_timeout_ms', async () => {
    const { base, intake } = await setup('    delivery_timeout_ms: 600');
    const r = await post(`${base}/jsons`, JSON.stringify(['delivered first', 'then answered']), { authorization: basic(KEY_A) });
    expect(r.status).toBe(200);
    // Acknowledged by the output before the answer: the intake has them already.
    expect(intake.received.map((m) => m.message)).toEqual(['delivered first', 'then answered']);
    await intake.stop();
    const down = await post(`${base}/jsons`, JSON.stringify(['intake down']), { authorization: basic(KEY_A) });
    expect(down).toMatchObject({ status: 503, json: { reason: 'not_delivered' } });
    expect(down.headers['retry-after']).toBe('10');
    // The events stay queued and go once the intake is back.
    const back = await startTestIntake(intake.port);
    await vi.waitFor(() => expect(back.received.map((m) => m.message)).toEqual(['intake down']), { timeout: 5_000 });
    await back.stop();
  });

  it('queued, or a disk queue: 200 at once, even with the intake down', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'http-respond-'));
    relay = await startRelay(yaml(port, '    respond_when: queued', `    queue: { type: disk, path: ${dir}/a }`).replace('intakes:', `data_dir: ${dir}\nintakes:`));
    const base = `http://127.0.0.1:${relay.daemon.topology.listenerPort('api')}`;
    // Intake a has a disk queue: safe once written there.
    expect((await post(`${base}/jsons`, JSON.stringify(['to disk']), { authorization: basic(KEY_A) })).status).toBe(200);
    // Intake b has a memory queue, and the listener says queued.
    expect((await post(`${base}/jsons`, JSON.stringify(['to memory']), { authorization: basic(KEY_B) })).status).toBe(200);
    expect(await books(relay, 'a')).toMatchObject({ received: 1, queued: 1, balanced: true });
    expect(await books(relay, 'b')).toMatchObject({ received: 1, queued: 1, balanced: true });
  });
});
