// The HTTP input under abuse, with real clients: bodies nested deep, clients that go away
// mid-body, a memory budget shared by concurrent requests (429 + Retry-After, /readyz), and the
// whole mix (gzip bombs, JSON that parses into much more memory than it takes on the wire, large
// bodies, aborts) from several clients at once at a relay run as its own process, its RSS sampled.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { books, startRelay, TLS, type RunningRelay } from '../helpers/relay.ts';
import { freePort, startTestIntake, waitListening, type TestIntake } from '../helpers/peers.ts';
import { exited, launcherNodeFlags, runRelayProcess, type RelayProcess } from '../helpers/process.ts';

const KEY = 'AAAAaaaa0000111122223333444455556';
const MiB = 1024 * 1024;

let relay: RunningRelay | undefined;
let intake: TestIntake | undefined;
let proc: RelayProcess | undefined;
afterEach(async () => {
  await relay?.stop();
  relay = undefined;
  if (proc) {
    proc.proc.kill('SIGKILL');
    await exited(proc.proc);
    proc = undefined;
  }
  await intake?.stop();
  intake = undefined;
});

function yaml(intakePort: number, listener = '', top = 'metrics: { enabled: false }'): string {
  return `log_level: info
${top}
shutdown_timeout_ms: 2000
intakes:
  - name: a
    intake_key: ${KEY}
    output: { type: syslog, host: 127.0.0.1, port: ${intakePort}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_bytes: 1048576, backoff: { initial_ms: 50, max_ms: 200 } }
    queue: { max_bytes: 16777216 }
listeners:
  - type: http
    name: api
    address: 127.0.0.1
    port: 0
    respond_when: queued
    paths:
      - { path: /nd, intake: a, format: ndjson }
${listener}`;
}

const basic = `Basic ${Buffer.from(`:${KEY}`).toString('base64')}`;

async function post(url: string, body: string | Buffer, headers: Record<string, string> = {}) {
  const res = await request(url, { method: 'POST', body, headers: { 'content-type': 'application/json', authorization: basic, ...headers } });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

const nested = (depth: number, inner = '"x"'): string => '['.repeat(depth) + inner + ']'.repeat(depth);

describe('HTTP input: JSON nested deep', () => {
  it('a body nested past max_depth (128 by default) gets 400 too_deep, counted, on every JSON path; one at the limit goes through', async () => {
    intake = await startTestIntake();
    relay = await startRelay(yaml(intake.port));
    const base = `http://127.0.0.1:${relay.daemon.topology.listenerPort('api')}`;
    const deep = nested(50_000);
    const refusals = [
      await post(`${base}/jsons`, deep),
      await post(`${base}/jsons?path=%24.a.b`, `{"a":{"b":[${deep}]}}`),
      await post(`${base}/batch`, `{"intake_key":"${KEY}","jsons":[${deep}]}`),
      await post(`${base}/array`, `[{"intake_key":"${KEY}","json":${deep}}]`),
      await post(`${base}/nd`, `"fine"\n${deep}\n`),
      await post(`${base}/jsons`, nested(129)), // the body's own list is one level
      await post(`${base}/jsons`, gzipSync(deep), { 'content-encoding': 'gzip' }),
    ];
    for (const r of refusals) {
      expect(r.status).toBe(400);
      expect(JSON.parse(r.text)).toMatchObject({ reason: 'too_deep', error: expect.stringContaining('128') });
    }
    expect(await relay.metric('intake_relay_http_input_refused_total', { reason: 'too_deep' })).toBe(refusals.length);
    // Brackets inside strings are text, not nesting.
    const ok = await post(`${base}/jsons`, `[${nested(127)}, "${'['.repeat(200)}", {"k": "${'{'.repeat(200)}\\"["}]`);
    expect(ok.status).toBe(200);
    await vi.waitFor(() => expect(intake!.received).toHaveLength(3), { timeout: 10_000 });
    expect(intake.received[0]?.message).toBe(nested(127));
    expect(await relay.metric('intake_relay_http_input_refused_total')).toBe(refusals.length);
    await vi.waitFor(async () => expect(await books(relay!, 'a')).toMatchObject({ received: 3, sent: 3, balanced: true }), { timeout: 10_000 });
  });

  it('max_depth is the user\'s to set, up to 1000, where events are still written back as text without overflowing', async () => {
    intake = await startTestIntake();
    relay = await startRelay(yaml(intake.port, '    max_depth: 1000'));
    const base = `http://127.0.0.1:${relay.daemon.topology.listenerPort('api')}`;
    expect((await post(`${base}/jsons`, nested(1000))).status).toBe(200);
    expect((await post(`${base}/array`, `[{"intake_key":"${KEY}","json":${nested(998)}}]`)).status).toBe(200); // list, object, 998
    const r = await post(`${base}/jsons`, nested(1001));
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({ reason: 'too_deep', error: 'The body nests deeper than 1000 levels (max_depth).' });
    await vi.waitFor(() => expect(intake!.received.map((m) => m.message)).toEqual([nested(999), nested(998)]), { timeout: 10_000 });
  });
});

describe('HTTP input: clients that go away mid-body', () => {
  it('each is counted as client_closed and logged at info, rate-limited, without a stack trace', async () => {
    intake = await startTestIntake();
    relay = await startRelay(yaml(intake.port));
    const port = relay.daemon.topology.listenerPort('api')!;
    const clients = 200;
    const abort = (gzip: boolean): Promise<void> =>
      new Promise((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => {
          s.write(`POST /plain/batch HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic}\r\nContent-Length: 100000\r\n${gzip ? 'Content-Encoding: gzip\r\n' : ''}\r\n`);
          // Half the body, then gone (cut in its headers or in its body, it counts the same).
          s.write(Buffer.alloc(50_000, 0x61), () => setTimeout(() => s.destroy(), 20));
        });
        s.on('error', () => {});
        s.on('close', () => resolve());
      });
    const started = Date.now();
    for (let i = 0; i < clients; i += 20) await Promise.all(Array.from({ length: 20 }, (_, j) => abort((i + j) % 2 === 0)));
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_http_input_refused_total', { reason: 'client_closed' })).toBe(clients), { timeout: 10_000 });
    expect(await relay.metric('intake_relay_http_input_refused_total')).toBe(clients);
    const lines = relay.logs.filter((l) => l.listener === 'api');
    expect(lines.length).toBeGreaterThanOrEqual(1);
    // One per 10 s, however many clients.
    expect(lines.length).toBeLessThanOrEqual(1 + Math.ceil((Date.now() - started) / 10_000));
    for (const l of lines) {
      expect(l.level).toBe('info');
      expect(JSON.stringify(l)).not.toMatch(/stack|at .*\.ts:\d+/);
    }
    // (The one warning expected: this file's resend_window_bytes, pinned low for the RSS test.)
    expect(relay.logs.filter((l) => (l.level === 'error' || l.level === 'warn') && !String(l.msg).includes('resend_window_bytes'))).toEqual([]);
    expect(await relay.metric('intake_relay_events_received_total')).toBe(0);
  });
});

describe('HTTP input: request targets that are no URL', () => {
  it('get 400 bad_request, counted, and the relay keeps serving', async () => {
    intake = await startTestIntake();
    relay = await startRelay(yaml(intake.port));
    const port = relay.daemon.topology.listenerPort('api')!;
    const raw = (target: string): Promise<string> =>
      new Promise((resolve) => {
        let got = '';
        const s = net.connect(port, '127.0.0.1', () => s.write(`POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`));
        s.on('data', (d: Buffer) => (got += d.toString()));
        s.on('error', () => {});
        s.on('close', () => resolve(got));
      });
    for (const target of ['//[', '//a:b@[::1', 'http://[x']) expect(await raw(target)).toMatch(/^HTTP\/1\.1 400 /);
    expect(await relay.metric('intake_relay_http_input_refused_total', { reason: 'bad_request' })).toBe(3);
    const base = `http://127.0.0.1:${port}`;
    expect((await post(`${base}/plain`, 'still here', { 'content-type': 'text/plain' })).status).toBe(200);
    await vi.waitFor(() => expect(intake!.received.map((m) => m.message)).toEqual(['still here']), { timeout: 10_000 });
  });
});

describe('HTTP input: a malformed request that carries credentials', () => {
  it('gets 400, and neither its key nor its Authorization reaches the log (Node hands the raw bytes with the error)', async () => {
    intake = await startTestIntake();
    relay = await startRelay(yaml(intake.port));
    const port = relay.daemon.topology.listenerPort('api')!;
    const key = 'LeakedKey0123456789abcdefLEAKED01';
    const basic = Buffer.from(`user:${key}`).toString('base64');
    const got = await new Promise<string>((resolve) => {
      let text = '';
      const s = net.connect(port, '127.0.0.1', () =>
        s.write(`POST /plain HTTP/1.1\r\nHost: x\r\nX-SEKOIAIO-INTAKE-KEY: ${key}\r\nAuthorization: Basic ${basic}\r\nContent-Length: 1\r\nBad Header\r\n\r\nx`),
      );
      s.on('data', (d: Buffer) => (text += d.toString()));
      s.on('error', () => {});
      s.on('close', () => resolve(text));
    });
    expect(got).toMatch(/^HTTP\/1\.1 400 /);
    await vi.waitFor(() => expect(relay!.logs.some((l) => l.msg === 'Malformed HTTP request.')).toBe(true), { timeout: 10_000 });
    const text = JSON.stringify(relay.logs);
    expect(text).not.toContain(key);
    expect(text).not.toContain(basic);
    // Nor as the bytes of a serialized Buffer.
    expect(text).not.toContain(JSON.stringify([...Buffer.from(key.slice(0, 12))]).slice(1, -1));
    expect(text).not.toContain('rawPacket');
  });
});

describe('HTTP input: the memory budget shared by concurrent requests', () => {
  it('a request that does not fit gets 429 + Retry-After before its body is read, /readyz says so, and it fits again once the others finish', async () => {
    intake = await startTestIntake();
    const top = 'metrics: { enabled: true, address: 127.0.0.1, port: 0 }';
    relay = await startRelay(yaml(intake.port, '    max_inflight_bytes: 1048576', top), {});
    const port = relay.daemon.topology.listenerPort('api')!;
    const base = `http://127.0.0.1:${port}`;
    const ops = `http://127.0.0.1:${relay.daemon.opsPort}`;
    const readyz = async () => {
      const r = await request(`${ops}/readyz`);
      return { status: r.statusCode, json: (await r.body.json()) as { ready: boolean; listeners?: { name: string; saturated: boolean }[] } };
    };
    expect((await readyz()).status).toBe(200);

    // Two uploads of 400 KB stop after 350 KB each: 700 KB of the 1 MiB budget held.
    const line = `${'x'.repeat(99)}\n`;
    const body = Buffer.from(line.repeat(4000));
    const slow = [0, 1].map(() => {
      const s = net.connect(port, '127.0.0.1');
      let answer = '';
      s.on('data', (d: Buffer) => (answer += d.toString()));
      const closed = new Promise<void>((r) => s.on('close', () => r()));
      s.write(`POST /plain/batch HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
      s.write(body.subarray(0, 350_000));
      return { s, answer: () => answer, closed };
    });
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_http_input_inflight_bytes')).toBe(700_000), { timeout: 10_000 });

    // 400 KB more does not fit: refused at once, from its Content-Length, before the body is sent.
    const declared = await post(`${base}/plain/batch`, body, { 'content-type': 'text/plain' });
    expect(declared.status).toBe(429);
    expect(Number(declared.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(declared.text)).toMatchObject({ reason: 'over_budget' });
    // Chunked (no Content-Length): refused once what came no longer fits.
    const chunked = await post(`${base}/plain/batch`, (async function* () {
      for (let i = 0; i < 4; i++) yield body.subarray(i * 100_000, (i + 1) * 100_000);
    })() as unknown as Buffer, { 'content-type': 'text/plain' });
    expect(chunked.status).toBe(429);
    expect(await relay.metric('intake_relay_http_input_refused_total', { reason: 'over_budget' })).toBe(2);
    let ready = await readyz();
    expect(ready.status).toBe(503);
    expect(ready.json.listeners).toEqual([expect.objectContaining({ name: 'api', saturated: true })]);

    // The held uploads finish: their events are accepted and the budget is free again.
    for (const c of slow) c.s.end(body.subarray(350_000));
    await Promise.all(slow.map((c) => c.closed));
    for (const c of slow) expect(c.answer()).toMatch(/^HTTP\/1\.1 200 /);
    await vi.waitFor(async () => expect(await relay!.metric('intake_relay_http_input_inflight_bytes')).toBe(0));
    ready = await readyz();
    expect(ready.status).toBe(200);
    expect((await post(`${base}/plain/batch`, body, { 'content-type': 'text/plain' })).status).toBe(200);
    // More than the whole budget could ever hold: 413, not a 429 to retry forever.
    const never = await post(`${base}/plain/batch`, Buffer.concat([body, body, body]), { 'content-type': 'text/plain' });
    expect(never.status).toBe(413);
    expect(JSON.parse(never.text)).toMatchObject({ reason: 'body_too_large' });
    await vi.waitFor(() => expect(intake!.received).toHaveLength(12_000), { timeout: 20_000 });
    await vi.waitFor(async () => expect(await books(relay!, 'a')).toMatchObject({ received: 12_000, sent: 12_000, balanced: true }), { timeout: 10_000 });
  });
});

/** Peak and current resident memory of a process, in bytes (Linux). */
function rss(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { peak: kb('VmHWM'), now: kb('VmRSS') };
}

describe('HTTP input: the abuse mix from several clients at once', () => {
  it('keeps the relay\'s memory within its budget and answers every request (no 500, no hang)', async () => {
    intake = await startTestIntake();
    const dir = mkdtempSync(join(tmpdir(), 'http-abuse-'));
    const port = await freePort();
    const file = join(dir, 'config.yaml');
    // Defaults for every limit (10 MiB bodies, 16 MiB inflated, a 64 MiB budget), and Node's
    // flags as the launchers give them.
    writeFileSync(file, yaml(intake.port).replace('port: 0', `port: ${port}`));
    proc = runRelayProcess(file, ['sh', '-c', `exec "$0" ${launcherNodeFlags().join(' ')} "$@"`]);
    const pid = proc.proc.pid!;
    await waitListening(port, 20_000);
    const base = `http://127.0.0.1:${port}`;
    const idle = rss(pid).now;

    const bomb = gzipSync(Buffer.alloc(200 * MiB)); // 200 MiB of zeros in ~200 KB
    // 45 MiB of `{},`: under max_decompressed_bytes, but JSON.parse makes ~1 GB of objects of it.
    const jsonBomb = gzipSync(`[${'{},'.repeat(15 * MiB)}{}]`);
    const lines = Buffer.from(`${'l'.repeat(199)}\n`.repeat(45_000)); // 9 MB, 45,000 events
    const strings = JSON.stringify({ events: Array.from({ length: 40_000 }, (_, i) => `event ${i} ${'s'.repeat(200)}`) }); // 9 MB
    const deep = nested(200_000);
    const shots: [string, string | Buffer, Record<string, string>][] = [
      ['/plain', bomb, { 'content-encoding': 'gzip' }],
      ['/jsons', jsonBomb, { 'content-encoding': 'gzip' }],
      ['/plain/batch', lines, { 'content-type': 'text/plain' }],
      ['/jsons?path=%24.events', strings, {}],
      ['/jsons', deep, {}],
      ['/jsons', bomb, { 'content-encoding': 'gzip' }],
    ];
    const statuses = new Map<number, number>();
    const failures: string[] = [];
    let peakSampled = 0;
    const sampler = setInterval(() => (peakSampled = Math.max(peakSampled, rss(pid).now)), 20);
    const client = async (c: number): Promise<void> => {
      for (let round = 0; round < 3; round++) {
        for (let k = 0; k < shots.length; k++) {
          const [path, body, headers] = shots[(k + c) % shots.length]!;
          try {
            const r = await post(`${base}${path}`, body, headers);
            statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
            if (![200, 400, 413, 429].includes(r.status)) failures.push(`${path}: ${r.status} ${r.text}`);
            if (r.status === 429 && !(Number(r.headers['retry-after']) >= 1)) failures.push(`${path}: 429 without Retry-After`);
          } catch (err) {
            failures.push(`${path}: no answer (${(err as Error).message})`);
          }
        }
        // And one that goes away mid-body.
        await new Promise<void>((resolve) => {
          const s = net.connect(port, '127.0.0.1', () => {
            s.write(`POST /plain/batch HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic}\r\nContent-Length: ${lines.length}\r\n\r\n`);
            s.write(lines.subarray(0, 4 * MiB), () => s.destroy());
          });
          s.on('error', () => {});
          s.on('close', () => resolve());
        });
      }
    };
    try {
      await Promise.all(Array.from({ length: 6 }, (_, c) => client(c)));
    } finally {
      clearInterval(sampler);
    }
    const { peak } = rss(pid);
    const mb = (n: number): string => `${(n / MiB).toFixed(0)} MiB`;
    process.stdout.write(`HTTP abuse mix: relay RSS idle ${mb(idle)}, peak ${mb(peak)} (VmHWM; sampled ${mb(peakSampled)}), answers ${JSON.stringify([...statuses])}\n`);
    expect(failures).toEqual([]);
    expect(statuses.get(200)).toBeGreaterThan(0);
    // Live: the budget's 64 MiB of bodies, inflated bytes and parses in flight (briefly twice
    // that while a body is joined or a parse is turned into events), the queue's 16 MiB and the
    // output's 1 MiB window, with their events' objects. Then what the collector has not reclaimed
    // yet: V8 lets off-heap buffers grow by tens of MiB between collections. 8 times the budget is
    // generous (measured: 290 to 400 MiB); without it the relay went past 3.5 GiB.
    expect(peak - idle).toBeLessThan(8 * 64 * MiB);
    expect(proc.output()).not.toMatch(/"level":"(error|fatal)"/);
  }, 180_000);
});
