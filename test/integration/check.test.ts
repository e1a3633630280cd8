// `intake-relay check` against real loopback peers: a good intake, a certificate for another name,
// an expired certificate, a refusing port; and GET /v1/me on a REST API stand-in.
import { createPrivateKey } from 'node:crypto';
import http from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IntakeEmulator } from '../../src/emulator/intake-emulator.ts';
import { selfSignedCertificate } from '../../src/emulator/self-signed.ts';
import { freePort } from '../helpers/peers.ts';
import { TLS } from '../helpers/relay.ts';
import { tempDir, track, trackServer } from '../helpers/cleanup.ts';
import { runCli } from '../helpers/process.ts';

const API_KEY = 'api-key-for-check-0123456789';

async function intake(cert: string | Buffer, key: string | Buffer): Promise<number> {
  const e = track(new IntakeEmulator({ port: 0, cert, key }));
  await e.start();
  return e.port;
}

describe('intake-relay check', () => {
  it('reports each step, ok or with the precise failure, and exits 1 on any failure', async () => {
    const good = await intake(readFileSync(`${TLS}server.crt`), readFileSync(`${TLS}server.key`));
    const wrong = await intake(readFileSync(`${TLS}wrong-name.crt`), readFileSync(`${TLS}wrong-name.key`));
    const day = 86_400_000;
    // An expired certificate from the test CA (an expired CA in ca_file is refused at load: exit 78).
    const caKey = createPrivateKey(readFileSync(`${TLS}ca.key`));
    const expired = selfSignedCertificate('localhost', 0, Date.now() - 10 * day, Date.now() - day, { commonName: 'intake-relay test CA', key: caKey });
    const old = await intake(expired.cert, expired.key);
    const refusing = await freePort();
    const dir = tempDir('check-');
    const out = (port: number, ca: string) => `    output: { type: syslog, host: localhost, port: ${port}, ca_file: ${ca} }`;
    writeFileSync(
      join(dir, 'relay.yaml'),
      `intakes:
  - name: good
    intake_key: AbC1
${out(good, `${TLS}ca.crt`)}
  - name: wrong-name
    intake_key: AbC2
${out(wrong, `${TLS}ca.crt`)}
  - name: expired
    intake_key: AbC3
${out(old, `${TLS}ca.crt`)}
  - name: refusing
    intake_key: AbC4
${out(refusing, `${TLS}ca.crt`)}
`,
    );
    const r = await runCli(['check', '-c', join(dir, 'relay.yaml')]);
    expect(r.code, r.out).toBe(1);
    const section = (name: string) => r.out.slice(r.out.indexOf(`intake "${name}"`)).split('\nintake ')[0]!;
    expect(section('good')).toMatch(/ok +dns: .*127\.0\.0\.1/);
    expect(section('good')).toMatch(/ok +tcp: connected/);
    expect(section('good')).toMatch(/ok +tls: TLSv1\.[23], certificate for localhost issued by intake-relay test CA, valid until/);
    expect(section('wrong-name')).toMatch(/FAILED tls: TLS certificate of localhost:\d+ does not match the host name/);
    expect(section('expired')).toMatch(/FAILED tls: TLS certificate of localhost:\d+ was not accepted \(CERT_HAS_EXPIRED\)/);
    expect(section('refusing')).toMatch(/FAILED tcp: Connection to localhost:\d+ refused/);
  });

  it('with an API key, calls GET /v1/me and explains 401, 403 and 429', async () => {
    let answer = 200;
    const seen: (string | undefined)[] = [];
    const api = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      if (req.url !== '/v1/me') return void res.writeHead(404).end();
      res.writeHead(answer, { 'content-type': 'application/json' }).end(JSON.stringify({ uuid: 'u', email: 'soc@example.com', firstname: 'S', lastname: 'O' }));
    });
    trackServer(api);
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', () => r()));
    const dir = tempDir('check-');
    writeFileSync(join(dir, 'r.yaml'), `emulator: { when: no_intake_key }\nendpoints: { api_url: "http://127.0.0.1:${(api.address() as AddressInfo).port}" }\nintakes:\n  - name: a\n    intake_key: ""\n`);
    const ok = await runCli(['check', '-c', join(dir, 'r.yaml')], { INTAKE_RELAY_API_KEY: API_KEY });
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('ok     api key: valid (user soc@example.com)');
    expect(seen[0]).toBe(`Bearer ${API_KEY}`);
    answer = 401;
    const bad = await runCli(['check', '-c', join(dir, 'r.yaml'), '--api-key', API_KEY]);
    expect(bad.code).toBe(1);
    expect(bad.out).toContain('FAILED api key: HTTP 401: the API key is missing, expired or invalid');
    answer = 403;
    const forbidden = await runCli(['check', '-c', join(dir, 'r.yaml'), '--api-key', API_KEY]);
    expect(forbidden.code).toBe(1);
    expect(forbidden.out).toContain('FAILED api key: HTTP 403: the key lacks a permission');
    answer = 429;
    const limited = await runCli(['check', '-c', join(dir, 'r.yaml'), '--api-key', API_KEY]);
    expect(limited.code).toBe(1);
    expect(limited.out).toContain('FAILED api key: HTTP 429: rate limited');
    expect(ok.out + bad.out + forbidden.out + limited.out).not.toContain(API_KEY);
  });
});

describe('intake-relay check: what the REST API says never carries the key', () => {
  it('prints an answer echoing the Authorization header and the key with the key redacted', async () => {
    const b64 = (t: string): string => Buffer.from(t).toString('base64');
    // A gateway that reflects the caller into the user, a captive page, and an error that echoes.
    const answers: ((auth: string) => { status: number; body: string })[] = [
      (auth) => ({ status: 200, body: JSON.stringify({ uuid: 'u', email: auth }) }),
      (auth) => ({ status: 200, body: `${auth} is not allowed through this proxy (${b64(API_KEY)})` }),
      (auth) => ({ status: 500, body: JSON.stringify({ message: 'internal error, ref err-55', headers: { authorization: auth }, key: API_KEY }) }),
    ];
    let k = 0;
    const api = http.createServer((req, res) => {
      const a = answers[k++]!(req.headers.authorization ?? '');
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body);
    });
    trackServer(api);
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', () => r()));
    const dir = tempDir('check-');
    writeFileSync(join(dir, 'r.yaml'), `emulator: { when: no_intake_key }\nendpoints: { api_url: "http://127.0.0.1:${(api.address() as AddressInfo).port}" }\nintakes:\n  - name: a\n    intake_key: ""\n`);
    const outs: string[] = [];
    for (let i = 0; i < answers.length; i++) outs.push((await runCli(['check', '-c', join(dir, 'r.yaml'), '--api-key', API_KEY])).out);
    expect(outs[0]).toContain('ok     api key: valid (user Bearer [redacted])');
    expect(outs[1]).toContain('FAILED api key: HTTP 200, but not the answer of GET /v1/me');
    expect(outs[1]).toContain('Bearer [redacted] is not allowed through this proxy ([redacted])');
    expect(outs[2]).toMatch(/FAILED api key: HTTP 500: .*internal error, ref err-55.*\[redacted\]/);
    for (const out of outs) {
      for (const form of [API_KEY, b64(API_KEY).replace(/=+$/, ''), b64(`:${API_KEY}`).replace(/=+$/, '')]) expect(out).not.toContain(form);
      // Not even the start of it: the old message quoted the first characters of a non-JSON answer.
      expect(out).not.toMatch(/Bearer (?!\[redacted\])/);
    }
  });
});

describe('intake-relay send', () => {
  it('sends test events through the real syslog path and waits for the intake to confirm', async () => {
    const received: string[] = [];
    const keys: string[] = [];
    const e = track(new IntakeEmulator({ port: 0, cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`), onMessage: (m) => { received.push(m.message); keys.push(m.intakeKey); } }));
    await e.start();
    const refusing = await freePort();
    const dir = tempDir('send-');
    writeFileSync(join(dir, 'r.yaml'), `intakes:
  - name: fw
    intake_key: SendKey123
    output: { type: syslog, host: 127.0.0.1, port: ${e.port}, server_name: localhost, ca_file: ${TLS}ca.crt }
  - name: down
    intake_key: SendKey456
    output: { type: syslog, host: 127.0.0.1, port: ${refusing}, server_name: localhost, ca_file: ${TLS}ca.crt }
`);
    const ok = await runCli(['send', '-c', join(dir, 'r.yaml'), '--intake', 'fw', 'hello', 'wörld']);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain(`ok: 2 events delivered to intake "fw" at 127.0.0.1:${e.port} (syslog)`);
    expect(received).toEqual(['hello', 'wörld']);
    expect(keys).toEqual(['SendKey123', 'SendKey123']);
    expect(ok.out).not.toContain('SendKey123');
    const down = await runCli(['send', '-c', join(dir, 'r.yaml'), '--intake', 'down', 'x']);
    expect(down.code).toBe(1);
    expect(down.out).toMatch(/FAILED: not delivered to 127\.0\.0\.1:\d+: Connection to 127\.0\.0\.1:\d+ refused/);
    expect((await runCli(['send', '-c', join(dir, 'r.yaml'), '--intake', 'nope', 'x'])).out).toContain('no intake is named "nope"');
    expect((await runCli(['send', '-c', join(dir, 'r.yaml')])).code).toBe(64);
  });
});

/** A TLS RELP server with the test certificate that answers the open with `answer` (then closes). */
async function relpServer(answer: string): Promise<number> {
  const tls = await import('node:tls');
  const server = trackServer(
    tls.createServer({ cert: readFileSync(`${TLS}server.crt`), key: readFileSync(`${TLS}server.key`) }, (s) => {
      s.once('data', () => s.end(`1 rsp ${Buffer.byteLength(answer)} ${answer}\n`));
      s.on('error', () => {});
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

describe('intake-relay check, RELP output', () => {
  it('opens a RELP session after TLS and says what the server answered; a refused open fails the check', async () => {
    const good = await relpServer('200 OK\nrelp_version=0\nrelp_software=test-relp,1\ncommands=syslog');
    const refusing = await relpServer('500 required command not supported by client');
    const dir = tempDir('check-relp-');
    const out = (port: number) => `    output: { type: relp, host: localhost, port: ${port}, ca_file: ${TLS}ca.crt }`;
    writeFileSync(join(dir, 'relay.yaml'), `intakes:\n  - name: good\n    intake_key: AbC1\n${out(good)}\n  - name: refusing\n    intake_key: AbC2\n${out(refusing)}\n`);
    const r = await runCli(['check', '-c', join(dir, 'relay.yaml')]);
    expect(r.code, r.out).toBe(1);
    const section = (name: string) => r.out.slice(r.out.indexOf(`intake "${name}"`)).split('\nintake ')[0]!;
    expect(section('good')).toMatch(/relp localhost:\d+/);
    expect(section('good')).toMatch(/ok +tls: /);
    expect(section('good')).toMatch(/ok +handshake: RELP session opened \(server test-relp\), syslog command accepted/);
    expect(section('refusing')).toMatch(/FAILED handshake: RELP server localhost:\d+ refused the session: 500 required command not supported by client/);
    expect(r.out).not.toContain('AbC1');
  });
});
