// The HTTP output against a scripted HTTPS intake on loopback: each answer the issue lists, and
// for each: events arrive exactly once where the intake accepted them, nothing is lost,
// duplicates only where a request's outcome was unknown, and the books balance.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay, TEST_KEY, TLS, errText } from '../helpers/relay.ts';
import { sendTcp } from '../helpers/peers.ts';
import { startConnectProxy, startHttpIntake, type Answer } from '../helpers/http-intake.ts';
import { track } from '../helpers/cleanup.ts';
import { syslogLines } from '../helpers/lines.ts';
import { parseConfig } from '../../src/config/load.ts';
import { sendTest } from '../../src/cli/send.ts';

function httpYaml(url: string, output = '', batch = '    batch: { max_events: 100, linger_ms: 10 }'): string {
  return `log_level: debug
metrics: { enabled: false }
shutdown_timeout_ms: 2000
intakes:
  - name: h
    intake_key: ${TEST_KEY}
    inputs:
      - { type: tcp, address: 127.0.0.1, port: 0 }
    output:
      type: http
      url: ${url}
      ca_file: ${TLS}ca.crt
      proxy: none
      concurrency: 4
      request_timeout_ms: 1000
      backoff: { initial_ms: 50, max_ms: 200 }
${output}
${batch}
`;
}

const lines = (n: number, tag = 'ev', every?: [number, string]): string =>
  syslogLines(0, n, (i) => `${tag} ${i}${every && i % every[0] === 0 ? ` ${every[1]}` : ''}`, '<14>Nov 22 10:00:00 host app[7]: ');

async function run(n: number, script: (req: import('../helpers/http-intake.ts').HttpRequestSeen, k: number) => Answer, output = '', data?: string) {
  const intake = track(await startHttpIntake(script));
  const relay = track(await startRelay(httpYaml(intake.url, output)));
  await sendTcp(relay.port('h', 'tcp/0'), data ?? lines(n));
  return { intake, relay };
}

function once(list: string[]): void {
  expect(new Set(list).size).toBe(list.length);
}

describe('HTTP output', () => {
  it('200: POSTs {"events": [...]} to /jsons with the key as Basic password; each event once', async () => {
    const { intake, relay } = await run(1_000, () => ({ status: 200 }));
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(1_000), { timeout: 10_000 });
    once(intake.accepted);
    const r = intake.requests[0]!;
    expect(r.method).toBe('POST');
    expect(r.url).toBe('/jsons?path=%24.events&status_code=200');
    expect(r.headers.authorization).toBe(`Basic ${Buffer.from(`:${TEST_KEY}`).toString('base64')}`);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['user-agent']).toMatch(/^intake-relay\//);
    expect(intake.accepted[0]).toBe('ev 0'); // the MSG part: the header is for the syslog path
    await vi.waitFor(async () => expect(await books(relay, 'h')).toMatchObject({ received: 1_000, sent: 1_000, dropped: 0, queued: 0, balanced: true }));
    expect(await relay.metric('intake_relay_http_requests_total', { status_class: '2xx' })).toBe(intake.requests.length);
    expect(relay.logText()).not.toContain(TEST_KEY);
  });

  it('event: line and gzip send the whole lines, compressed; lines without a header go whole', async () => {
    const data = `<14>Nov 22 10:00:00 host app: with header\nno header at all ✓\n`;
    const { intake, relay } = await run(0, () => ({ status: 200 }), '      event: line\n      gzip: true', data);
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(2));
    expect(intake.accepted).toEqual(['<14>Nov 22 10:00:00 host app: with header', 'no header at all ✓']);
    expect(intake.requests[0]!.headers['content-encoding']).toBe('gzip');
    const raw = await relay.metric('intake_relay_http_body_bytes_total');
    const wire = await relay.metric('intake_relay_bytes_sent_total');
    expect(raw).toBeGreaterThan(0);
    expect(wire).toBeGreaterThan(0);
  });

  it('429 with Retry-After pauses the whole output for that long, then delivers everything once', async () => {
    const { intake, relay } = await run(500, (_r, k) => (k <= 2 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(500), { timeout: 10_000 });
    once(intake.accepted);
    // Requests already in flight when the 429 came may still land; no new one starts until
    // Retry-After has passed, whichever batch it carries.
    const throttled = intake.requests[0]!.at;
    const during = intake.requests.filter((r) => r.at - throttled > 300 && r.at - throttled < 900);
    expect(during).toEqual([]);
    expect(intake.requests.some((r) => r.at - throttled >= 900)).toBe(true);
    await vi.waitFor(async () => expect(await books(relay, 'h')).toMatchObject({ received: 500, sent: 500, dropped: 0, balanced: true }));
    expect(await relay.metric('intake_relay_output_retries_total')).toBeGreaterThanOrEqual(2);
  });

  it.each([500, 503, 408])('%i is retried with backoff; nothing lost, nothing twice', async (status) => {
    const { intake, relay } = await run(500, (_r, k) => (k <= 3 ? { status } : { status: 200 }));
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(500), { timeout: 10_000 });
    once(intake.accepted);
    await vi.waitFor(async () => expect(await books(relay, 'h')).toMatchObject({ received: 500, sent: 500, dropped: 0, balanced: true }));
    expect(await relay.metric('intake_relay_http_requests_total', { status_class: status >= 500 ? '5xx' : '4xx' })).toBe(3);
  });

  it('413: the batch is split; an event still refused alone is dropped as too_large, the rest delivered', async () => {
    const data = lines(300, 'ev', [97, 'HUGE']);
    const { intake, relay } = await run(0, (r) => (r.events.length > 20 || r.events.some((e) => e.includes('HUGE')) ? { status: 413 } : { status: 200 }), '', data);
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_dropped_total')).toBe(4), { timeout: 10_000 });
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(296));
    once(intake.accepted);
    expect(intake.accepted.some((e) => e.includes('HUGE'))).toBe(false);
    expect(await relay.metric('intake_relay_events_dropped_total', { reason: 'too_large' })).toBe(4);
    await vi.waitFor(async () => expect(await books(relay, 'h')).toMatchObject({ received: 300, sent: 296, dropped: 4, queued: 0, balanced: true }));
  });

  it('400 on a batch: split to isolate the refused events, drop only those, log the status', async () => {
    const data = lines(200, 'ev', [50, 'BAD']);
    const { intake, relay } = await run(0, (r) => (r.events.some((e) => e.includes('BAD')) ? { status: 400, body: '{"message":"invalid event"}' } : { status: 200 }), '', data);
    await vi.waitFor(async () => expect(await books(relay, 'h')).toMatchObject({ received: 200, sent: 196, dropped: 4, queued: 0, balanced: true }), { timeout: 10_000 });
    once(intake.accepted);
    expect(await relay.metric('intake_relay_events_dropped_total', { reason: 'rejected' })).toBe(4);
    const logged = relay.logs.filter((l) => errText(l).includes('HTTP 400'));
    expect(logged.length).toBe(1); // rate-limited
    expect(errText(logged[0])).toContain('invalid event');
  });

  it('401: one clear error, not ready, nothing dropped; delivered once the key is accepted', async () => {
    let refuse = true;
    const { intake, relay } = await run(300, () => (refuse ? { status: 401 } : { status: 200 }), '      key_retry_ms: 200');
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_output_key_rejected')).toBe(1));
    expect(relay.daemon.view.health()[0]).toMatchObject({ state: 'key_rejected', stalled: true });
    expect(await books(relay, 'h')).toMatchObject({ received: 300, dropped: 0, balanced: true });
    const errors = relay.logs.filter((l) => String(l.msg).includes('refuses the key'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ intake: 'h' });
    refuse = false;
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(300), { timeout: 10_000 });
    once(intake.accepted);
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_output_key_rejected')).toBe(0));
    expect(relay.daemon.view.health()[0]!.stalled).toBe(false);
    expect(relay.logText()).not.toContain(TEST_KEY);
  });

  it.each([
    ['hangs', { hang: true } as Answer],
    ['resets the connection', { reset: true } as Answer],
  ])('an intake that %s: retried, delivered; duplicates only as counted resends', async (_what, bad) => {
    const { intake, relay } = await run(300, (_r, k) => (k === 1 ? bad : { status: 200 }));
    await vi.waitFor(() => expect(new Set(intake.accepted).size).toBe(300), { timeout: 10_000 });
    const duplicates = intake.accepted.length - 300;
    expect(duplicates).toBeLessThanOrEqual(await relay.metric('intake_relay_events_resent_total'));
    expect(await relay.metric('intake_relay_events_resent_total')).toBeGreaterThan(0); // the first request's outcome was unknown
    await vi.waitFor(async () => expect(await books(relay, 'h')).toMatchObject({ received: 300, sent: 300, dropped: 0, balanced: true }));
  });

  it('a slow intake: several requests in flight, adaptive concurrency grows', async () => {
    let active = 0;
    let peak = 0;
    const intake = track(await startHttpIntake(() => {
      active++;
      peak = Math.max(peak, active);
      setTimeout(() => active--, 100);
      return { status: 200, delayMs: 100 };
    }));
    const relay = track(await startRelay(httpYaml(intake.url, '').replace('      concurrency: 4\n', '      concurrency: adaptive\n      max_concurrency: 8\n')));
    await sendTcp(relay.port('h', 'tcp/0'), lines(5_000));
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(5_000), { timeout: 20_000 });
    once(intake.accepted);
    expect(peak).toBeGreaterThan(1);
    expect(await relay.metric('intake_relay_output_concurrency_limit')).toBeGreaterThan(1);
    await vi.waitFor(async () => expect(await books(relay, 'h')).toMatchObject({ received: 5_000, sent: 5_000, balanced: true }));
  });

  it('bodies stay under max_body_bytes, JSON escaping included: larger batches are split before sending', async () => {
    // Quotes and backslashes double in JSON: 100 events of ~300 escaped bytes each.
    const data = syslogLines(0, 100, (i) => `${i} ${'"\\'.repeat(70)}`, '<14>Nov 22 10:00:00 h app: ');
    const { intake, relay } = await run(0, () => ({ status: 200 }), '      max_body_bytes: 2048', data);
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(100), { timeout: 10_000 });
    once(intake.accepted);
    expect(Math.max(...intake.requests.map((r) => r.bodyBytes))).toBeLessThanOrEqual(2048);
    expect(intake.accepted[0]).toBe(`0 ${'"\\'.repeat(70)}`);
    expect(await books(relay, 'h')).toMatchObject({ received: 100, sent: 100, dropped: 0, balanced: true });
  });

  it('max_retries: a batch still failing is dropped as retries_exhausted and counted', async () => {
    const { relay } = await run(50, () => ({ status: 500 }), '      max_retries: 2');
    await vi.waitFor(async () => expect(await relay.metric('intake_relay_events_dropped_total', { reason: 'retries_exhausted' })).toBe(50), { timeout: 10_000 });
    expect(await books(relay, 'h')).toMatchObject({ received: 50, sent: 0, dropped: 50, queued: 0, balanced: true });
  });

  it('proxy: env follows HTTPS_PROXY, and NO_PROXY exempts a host', async () => {
    const proxy = track(await startConnectProxy());
    const target = track(await startHttpIntake(() => ({ status: 200 })));
    track({ stop: () => vi.unstubAllEnvs() });
    vi.stubEnv('HTTPS_PROXY', proxy.url);
    vi.stubEnv('NO_PROXY', '');
    let relay = track(await startRelay(httpYaml(target.url).replace('      proxy: none\n', '      proxy: env\n')));
    await sendTcp(relay.port('h', 'tcp/0'), lines(50));
    await vi.waitFor(() => expect(target.accepted).toHaveLength(50), { timeout: 10_000 });
    expect(proxy.tunnels).toEqual([`127.0.0.1:${target.port}`]);
    await relay.stop();

    vi.stubEnv('NO_PROXY', '127.0.0.1');
    relay = track(await startRelay(httpYaml(target.url).replace('      proxy: none\n', '      proxy: env\n')));
    await sendTcp(relay.port('h', 'tcp/0'), lines(50, 'direct'));
    await vi.waitFor(() => expect(target.accepted).toHaveLength(100), { timeout: 10_000 });
    expect(proxy.tunnels).toHaveLength(1);
  });

  it('goes through a CONNECT proxy when one is configured', async () => {
    const proxy = track(await startConnectProxy());
    const target = track(await startHttpIntake(() => ({ status: 200 })));
    const relay = track(await startRelay(httpYaml(target.url).replace('      proxy: none\n', `      proxy: ${proxy.url}\n`)));
    await sendTcp(relay.port('h', 'tcp/0'), lines(100));
    await vi.waitFor(() => expect(target.accepted).toHaveLength(100), { timeout: 10_000 });
    expect(proxy.tunnels).toContain(`127.0.0.1:${target.port}`);
  });

  it('speaks HTTP/1.1 to an intake that also offers HTTP/2, directly and through a CONNECT proxy', async () => {
    // undici offers HTTP/2 by default; the output is built for one request per connection, and
    // frees a body once answered, which an HTTP/2 stream may still be sending.
    const versions: string[] = [];
    let events = 0;
    const h2 = http2.createSecureServer({ allowHTTP1: true, cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`) }, (req, res) => {
      versions.push(req.httpVersion);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        events += (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { events: string[] }).events.length;
        res.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((resolve) => h2.listen(0, '127.0.0.1', () => resolve()));
    const sockets = new Set<import('node:net').Socket>();
    h2.on('secureConnection', (c: import('node:net').Socket) => sockets.add(c));
    track({ stop: () => new Promise<void>((resolve) => { for (const c of sockets) c.destroy(); h2.close(() => resolve()); }) });
    const url = `https://127.0.0.1:${(h2.address() as AddressInfo).port}`;
    const direct = track(await startRelay(httpYaml(url)));
    await sendTcp(direct.port('h', 'tcp/0'), lines(50));
    await vi.waitFor(() => expect(events).toBe(50), { timeout: 10_000 });
    await direct.stop();
    const proxy = track(await startConnectProxy());
    const viaProxy = track(await startRelay(httpYaml(url).replace('      proxy: none\n', `      proxy: ${proxy.url}\n`)));
    await sendTcp(viaProxy.port('h', 'tcp/0'), lines(50, 'p'));
    await vi.waitFor(() => expect(events).toBe(100), { timeout: 10_000 });
    expect(proxy.tunnels).toContain(`127.0.0.1:${(h2.address() as AddressInfo).port}`);
    expect(new Set(versions)).toEqual(new Set(['1.1']));
  });

  it('frees a body as soon as the intake accepted it over HTTPS, and only then: not one refused, not over plain HTTP', async () => {
    // Bodies of ~7 KB (json-body.ts gives each its own memory, which src/core/free-now.ts needs).
    const freed: number[] = [];
    const transfer = ArrayBuffer.prototype.transfer;
    const spy = vi.spyOn(ArrayBuffer.prototype, 'transfer').mockImplementation(function (this: ArrayBuffer, n?: number) {
      if (n === 0 && this.byteLength > 0) freed.push(this.byteLength);
      return transfer.call(this, n);
    });
    track({ stop: async () => spy.mockRestore() });
    const tag = 'x'.repeat(60);
    const { intake, relay } = await run(300, (_r, k) => (k === 2 ? { status: 500 } : { status: 200 }), '', lines(300, tag));
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(300), { timeout: 10_000 });
    once(intake.accepted);
    // Intact: a body freed too soon would have gone out empty or garbled.
    expect(new Set(intake.accepted)).toEqual(new Set(Array.from({ length: 300 }, (_, i) => `${tag} ${i}`)));
    const ok = intake.requests.filter((_r, i) => i !== 1);
    // The second request refused; batches may be cut smaller than 100 on a busy machine (linger).
    expect(intake.requests.length).toBeGreaterThanOrEqual(4);
    expect(freed.sort((a, b) => a - b)).toEqual(ok.map((r) => r.bodyBytes).sort((a, b) => a - b));
    await vi.waitFor(async () => expect(await books(relay, 'h')).toMatchObject({ received: 300, sent: 300, dropped: 0, balanced: true }));

    // Plain HTTP: a socket still writing a body reads it in place, so none is freed.
    freed.length = 0;
    const bodies: number[] = [];
    const plain = http.createServer((req, res) => {
      let n = 0;
      req.on('data', (c: Buffer) => (n += c.length));
      req.on('end', () => {
        bodies.push(n);
        res.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', () => resolve()));
    track({ stop: () => new Promise<void>((resolve) => plain.close(() => resolve())) });
    const plainRelay = track(await startRelay(httpYaml(`http://127.0.0.1:${(plain.address() as AddressInfo).port}`)));
    await sendTcp(plainRelay.port('h', 'tcp/0'), lines(300, tag));
    await vi.waitFor(async () => expect(await books(plainRelay, 'h')).toMatchObject({ received: 300, sent: 300, balanced: true }), { timeout: 10_000 });
    expect(bodies.length).toBeGreaterThanOrEqual(3);
    expect(freed).toEqual([]);
  });
});

describe('HTTP output: what the intake says never carries the key', () => {
  const b64 = (t: string): string => Buffer.from(t).toString('base64');
  /** The key in each form a test must not find: raw, URL-encoded, the Basic credential, base64, padded or not. */
  const leaks = (text: string): string[] =>
    [TEST_KEY, encodeURIComponent(TEST_KEY), b64(`:${TEST_KEY}`), b64(TEST_KEY), Buffer.from(`:${TEST_KEY}`).toString('base64url'), Buffer.from(TEST_KEY).toString('base64url')]
      .flatMap((f) => [f, f.replace(/=+$/, '')])
      .filter((f) => text.includes(f));
  // An intake, an API gateway and a proxy that echo what they were sent, each its own way.
  const bodies: Record<number, { body: (auth: string) => string; rest: string[] }> = {
    401: { body: (auth) => JSON.stringify({ message: 'bad credentials', request_id: 'req-401', echo: { authorization: auth } }), rest: ['bad credentials', 'req-401'] },
    400: { body: (auth) => `invalid event (request req-400): key ${TEST_KEY} (${b64(TEST_KEY)}), header ${auth}`, rest: ['invalid event (request req-400): key', 'header'] },
    500: { body: (auth) => `<html><h1>Proxy error req-500</h1>\n<pre>Authorization: ${auth}\nX-Key: ${b64(TEST_KEY)}</pre></html>`, rest: ['Proxy error req-500', 'X-Key'] },
  };

  it.each([401, 400, 500])('%i echoing the Authorization header and the key: logs, /status, /readyz and send explain it without the key', async (status) => {
    const { body, rest } = bodies[status]!;
    const intake = track(await startHttpIntake((r) => ({ status, body: body(String(r.headers.authorization)) })));
    const yaml = httpYaml(intake.url, '      key_retry_ms: 200').replace('metrics: { enabled: false }', 'metrics: { address: 127.0.0.1, port: 0, stall_timeout_ms: 200 }');
    const relay = track(await startRelay(yaml));
    await sendTcp(relay.port('h', 'tcp/0'), lines(20));
    // The stand-in really echoes the credential it was sent.
    await vi.waitFor(() => expect(intake.requests.length).toBeGreaterThan(0));
    expect(body(String(intake.requests[0]!.headers.authorization))).toContain(b64(`:${TEST_KEY}`));
    await vi.waitFor(() => expect(relay.logs.some((l) => errText(l).includes(`HTTP ${status}`))).toBe(true), { timeout: 10_000 });
    const ops = `http://127.0.0.1:${relay.daemon.opsPort}`;
    const statusText = await (await fetch(`${ops}/status`)).text();
    const readyText = await (await fetch(`${ops}/readyz`)).text();
    const lastError = String((JSON.parse(statusText) as { intakes: { last_error: string }[] }).intakes[0]!.last_error);
    const logged = errText(relay.logs.find((l) => errText(l).includes(`HTTP ${status}`)));
    for (const explained of [lastError, logged]) {
      expect(explained).toContain(`HTTP ${status} from 127.0.0.1:${intake.port}`);
      for (const r of rest) expect(explained).toContain(r);
      expect(explained).toContain('[redacted]');
    }
    expect(leaks(relay.logText())).toEqual([]);
    expect(leaks(statusText)).toEqual([]);
    expect(leaks(readyText)).toEqual([]);

    const sent = await sendTest(parseConfig(yaml, 'send.yaml', {}), 'h', ['hello'], 10_000);
    expect(sent.ok).toBe(false);
    expect(sent.detail).toContain(`HTTP ${status} from 127.0.0.1:${intake.port}`);
    for (const r of rest) expect(sent.detail).toContain(r);
    expect(leaks(sent.detail)).toEqual([]);
  });

  it('an answer longer than what is read is cut, the key at the cut included, and the connection still serves the next request', async () => {
    let n = 0;
    const intake = track(await startHttpIntake(() => (++n === 1 ? { status: 500, body: `${' '.repeat(16 * 1024 - 10)}${TEST_KEY}${'x'.repeat(100_000)}` } : { status: 200 })));
    const relay = track(await startRelay(httpYaml(intake.url)));
    await sendTcp(relay.port('h', 'tcp/0'), lines(10));
    await vi.waitFor(() => expect(intake.accepted).toHaveLength(10), { timeout: 10_000 });
    const logged = errText(relay.logs.find((l) => errText(l).includes('HTTP 500')));
    expect(logged).toMatch(/HTTP 500 from 127\.0\.0\.1:\d+: \[redacted\]\)\.$/);
    expect(relay.logText()).not.toContain(TEST_KEY.slice(0, 6));
    await vi.waitFor(async () => expect(await books(relay, 'h')).toMatchObject({ received: 10, sent: 10, dropped: 0, balanced: true }));
  });
});
