// `intake-relay rules push` against a REST API stand-in on loopback: the request shape of the
// platform's spec, the Bearer key, 429 waited out, 401 and 403 explained, the key never printed.
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir, trackServer } from '../helpers/cleanup.ts';
import { runCli, type CliResult } from '../helpers/process.ts';

const API_KEY = 'api-key-secret-value-0123456789';
const COMMUNITY = '11111111-1111-4111-8111-111111111111';
const FORMAT = '250e4095-fa08-4101-bb02-e72f870fcbd1';
const INTAKE_UUID = '22222222-2222-4222-8222-222222222222';

interface Seen { auth: string | undefined; body: Record<string, unknown> }

/** `body`: the answer's body, given the Authorization header the stand-in received. */
async function standIn(answers: { status: number; headers?: Record<string, string>; body?: (auth: string) => string }[]): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      if (req.url !== '/v1/sic/conf/intakes/optimization_rules/' || req.method !== 'POST') {
        res.writeHead(404).end();
        return;
      }
      seen.push({ auth: req.headers.authorization, body: JSON.parse(raw) as Record<string, unknown> });
      const a = answers[seen.length - 1] ?? { status: 500 };
      res.writeHead(a.status, { 'content-type': 'application/json', ...(a.headers ?? {}) }).end(a.body ? a.body(req.headers.authorization ?? '') : '{}');
    });
  });
  trackServer(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function config(): string {
  const dir = tempDir('rules-');
  const file = join(dir, 'relay.yaml');
  writeFileSync(
    file,
    `intakes:
  - name: endpoints
    intake_key: AbCd1234
    platform: { community_uuid: ${COMMUNITY}, format_uuid: ${FORMAT}, intake_uuid: ${INTAKE_UUID} }
    filters:
      - description: browser file events
        filters:
          - { field: process.name, operator: in, value: [chrome.exe, firefox.exe] }
          - { field: action.name, operator: "==", value: file-created }
      - description: off for now
        enabled: false
        filters: [{ field: process.name, operator: "==", value: x }]
      - description: dns results
        filters: [{ field: action.name, operator: "==", value: dns-query-result }]
  - name: firewall
    intake_key: EfGh5678
    platform: { community_uuid: ${COMMUNITY}, format_uuid: ${FORMAT} }
    filters:
      - description: heartbeats
        filters: [{ field: app_name, operator: "==", value: heartbeat }]
`,
  );
  return file;
}

const cli = (args: string[]): Promise<CliResult> => runCli(args, { INTAKE_RELAY_API_KEY: API_KEY });

describe('intake-relay rules push', () => {
  it('creates each enabled rule in the spec\'s shape, waits out 429, explains 403', async () => {
    const api = await standIn([{ status: 201 }, { status: 429, headers: { 'retry-after': '0' } }, { status: 201 }, { status: 403 }]);
    const r = await cli(['rules', 'push', '-c', config(), '--api-url', api.url]);
    expect(r.code).toBe(1);
    expect(api.seen).toHaveLength(4);
    for (const s of api.seen) expect(s.auth).toBe(`Bearer ${API_KEY}`);
    expect(api.seen[0]!.body).toEqual({
      format_uuid: FORMAT,
      community_uuid: COMMUNITY,
      intake_uuid: INTAKE_UUID,
      description: 'browser file events',
      action: 1,
      enabled: true,
      filters: [
        { field: 'process.name', operator: 'in', value: ['chrome.exe', 'firefox.exe'] },
        { field: 'action.name', operator: '==', value: 'file-created' },
      ],
    });
    expect(api.seen[2]!.body.description).toBe('dns results');
    expect(api.seen[3]!.body).not.toHaveProperty('intake_uuid');
    expect(r.out).toContain('ok     intake "endpoints", rule "browser file events": created (HTTP 201)');
    expect(r.out).toContain('ok     intake "endpoints", rule "dns results": created (HTTP 201)');
    expect(r.out).toContain('FAILED intake "firewall", rule "heartbeats": HTTP 403: the API key lacks the permission SIC_WRITE_CONF_INTAKES');
    expect(r.out).not.toContain('off for now');
    expect(r.out).not.toContain(API_KEY);
  });

  it('explains 401, and --intake narrows to one intake', async () => {
    const api = await standIn([{ status: 401 }]);
    const r = await cli(['rules', 'push', '-c', config(), '--api-url', api.url, '--intake', 'firewall']);
    expect(r.code).toBe(1);
    expect(api.seen).toHaveLength(1);
    expect(r.out).toContain('HTTP 401: the API key is missing, expired or invalid');
    expect(r.out).not.toContain(API_KEY);
  });

  it('an error body echoing the Authorization header and the key is explained without the key', async () => {
    const b64 = (t: string): string => Buffer.from(t).toString('base64');
    const api = await standIn([
      { status: 400, body: (auth) => JSON.stringify({ message: 'invalid filter operator', echo: { authorization: auth }, key: API_KEY }) },
      { status: 502, body: (auth) => `Bad gateway (proxy gw-7): ${auth} / ${b64(API_KEY)}` },
    ]);
    const r = await cli(['rules', 'push', '-c', config(), '--api-url', api.url, '--intake', 'endpoints']);
    expect(r.code).toBe(1);
    expect(api.seen.map((s) => s.auth)).toEqual([`Bearer ${API_KEY}`, `Bearer ${API_KEY}`]);
    expect(r.out).toMatch(/rule "browser file events": HTTP 400: .*invalid filter operator.*\[redacted\]/);
    expect(r.out).toMatch(/rule "dns results": HTTP 502: Bad gateway \(proxy gw-7\): Bearer \[redacted\] \/ \[redacted\]/);
    for (const form of [API_KEY, b64(API_KEY).replace(/=+$/, ''), encodeURIComponent(API_KEY)]) expect(r.out).not.toContain(form);
  });

  it('--dry-run shows what it would send without a key', async () => {
    const r = await runCli(['rules', 'push', '-c', config(), '--dry-run'], { INTAKE_RELAY_API_KEY: '' });
    expect(r.code).toBe(0);
    expect(r.out).toContain('would POST https://api.sekoia.io/v1/sic/conf/intakes/optimization_rules/');
  });
});
