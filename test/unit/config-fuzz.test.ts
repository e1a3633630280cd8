// A seeded fuzz of the configuration loader: thousands of mutations (byte flips, YAML
// metacharacters, tokens deleted or doubled, lines swapped, truncations) of realistic files holding
// an intake key, a key from ${ENV}, a key file and a bearer token. Each must load, or fail as a
// ConfigError whose every problem names the file, and no message may carry a secret.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.ts';
import { prng } from '../helpers/prng.ts';

const KEY = 'AbCdEfGh0123456789IjKlMnOpQrStUv';
const ENV_KEY = 'Zy98XwVu76TsRq54PoNm32LkJi10HgFe';
const FILE_KEY = 'Qw3rTy7uIo1pAs5dFg9hJk2lZx6cVb4n';
const TOKEN = 'tok3n-Of-The-Ingest-Listener-9f8e7d6c5b4a';
const SECRETS = [KEY, ENV_KEY, FILE_KEY, TOKEN].flatMap((s) => [s, Buffer.from(s).toString('base64').replace(/=+$/, '')]);
const TLS = new URL('../fixtures/tls/', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'cfg-fuzz-'));
const FILE = join(dir, 'relay.yaml');
writeFileSync(join(dir, 'intake.key'), `${FILE_KEY}\n`);
// STATE_DIRECTORY: the official intakes.yaml gets disk queues by default, in a directory that must be writable.
const ENV = { FW_KEY: ENV_KEY, CERTS_DIR: TLS.replace(/\/$/, ''), STATE_DIRECTORY: join(dir, 'state') };

const NATIVE = `# intake-relay: firewall, proxy and application logs
region: fra1
log_level: info
metrics: { enabled: false }
data_dir: ${dir}/state
intakes:
  - name: firewall
    intake_key: ${KEY}
    inputs:
      - { type: udp, address: 127.0.0.1, port: 1514 }
      - type: tcp
        port: \${PORT:-1515}
        tls: { cert_file: ${TLS}server.crt, key_file: ${TLS}server.key }
    output:
      type: syslog
      host: intake.example
      port: 10514
      ca_file: ${TLS}ca.crt
      backoff: &backoff { initial_ms: 100, max_ms: 5000 }
    queue: { max_events: 5000, when_full: drop_newest }
    filters:
      - description: noisy cron
        filters:
          - { field: app_name, operator: in, value: [cron, "systemd"] }
  - name: proxy
    intake_key: \${FW_KEY}
    output: { type: http, url: "https://intake.example", gzip: true, backoff: *backoff }
  - name: 'apps'
    intake_key_file: intake.key
    inputs:
      - type: file
        paths: [ /var/log/app/*.log ]
        multiline: { start_pattern: '^\\d{4}-' }
listeners:
  - type: http
    port: 8080
    paths:
      - { path: /ingest/app, intake: apps, bearer_token: "${TOKEN}" }
  - type: udp
    port: 5514
    routes:
      - match: { hostname: "fw-*", severity: [err, crit] }
        intake: firewall
      - match: { message: "/debug/i" }
        drop: true
    default: proxy
stats: { intake: firewall, interval_ms: 60000 }
`;

const LEGACY = `---
intakes:
- name: Techno1
  protocol: tcp
  port: 20516
  intake_key: ${KEY}
- name: Techno2
  protocol: UDP
  port: 20517
  intake_key: ${ENV_KEY}
  queue_size: 5000
- name: Techno3
  protocol: tls
  port: 20518
  intake_key: "${FILE_KEY}"
- name: Monitoring
  stats: True
  intake_key: ${KEY}
`;


const META = [':', ': ', '-', '- ', '[', ']', '{', '}', ',', '#', '&', '*', '*a', '&a ', '*backoff', '!', '!!binary ', '!!str ', '|', '>', "'", '"', '%', '@', '`', '?', '? ', '\n', '\n  ', '\t', ' ', '${', '$${', '\\', '<<: ', '\n---\n', '\n...\n', 'é', '\0', '\r'];
const TOKEN_RE = /[^\s:,[\]{}]+|[:,[\]{}]/g;

function mutate(src: Buffer, rnd: () => number, anchors: number[]): { bytes: Buffer; ops: string[] } {
  let b = src;
  const ops: string[] = [];
  const pick = (n: number): number => Math.floor(rnd() * n);
  // Half of the positions fall next to a secret, where a parser's message would quote it.
  const where = (): number => {
    if (b.length === 0) return 0;
    if (rnd() < 0.5 && anchors.length > 0) return Math.max(0, Math.min(b.length - 1, (anchors[pick(anchors.length)] as number) + pick(80) - 40));
    return pick(b.length);
  };
  for (let n = 1 + pick(3); n > 0; n--) {
    const op = pick(7);
    if (op === 0) {
      const i = where();
      const v = rnd() < 0.5 ? pick(256) : (b[i] ?? 0) ^ (1 << pick(8));
      b = Buffer.concat([b.subarray(0, i), Buffer.from([v]), b.subarray(i + 1)]);
      ops.push(`flip@${i}=${v}`);
    } else if (op === 1 || op === 2) {
      const i = where();
      const m = META[pick(META.length)] as string;
      b = Buffer.concat([b.subarray(0, i), Buffer.from(m), b.subarray(i)]);
      ops.push(`insert@${i}=${JSON.stringify(m)}`);
    } else if (op === 3 || op === 4) {
      const text = b.toString('latin1');
      const tokens = [...text.matchAll(TOKEN_RE)];
      if (tokens.length === 0) continue;
      const near = where();
      const t = rnd() < 0.5 ? tokens.reduce((best, x) => (Math.abs(x.index - near) < Math.abs(best.index - near) ? x : best)) : (tokens[pick(tokens.length)] as RegExpExecArray);
      const end = t.index + t[0].length;
      const dup = op === 4;
      b = Buffer.concat([b.subarray(0, dup ? end : t.index), dup ? Buffer.from(rnd() < 0.5 ? ` ${t[0]}` : t[0], 'latin1') : Buffer.alloc(0), b.subarray(end)]);
      ops.push(`${dup ? 'dup' : 'del'}@${t.index}=${JSON.stringify(t[0])}`);
    } else if (op === 5) {
      const lines = b.toString('latin1').split('\n');
      const i = pick(lines.length);
      const j = rnd() < 0.5 ? Math.min(lines.length - 1, i + 1) : pick(lines.length);
      [lines[i], lines[j]] = [lines[j] as string, lines[i] as string];
      b = Buffer.from(lines.join('\n'), 'latin1');
      ops.push(`swap lines ${i + 1},${j + 1}`);
    } else {
      const i = where();
      b = b.subarray(0, i);
      ops.push(`truncate@${i}`);
    }
  }
  return { bytes: b, ops };
}

interface Outcome {
  valid: number;
  invalid: number;
  failures: string[];
}

function fuzz(base: string, seed: number, count: number): Outcome {
  const src = Buffer.from(base);
  const anchors = [KEY, ENV_KEY, FILE_KEY, TOKEN, 'FW_KEY', 'intake.key'].flatMap((s) => [...base.matchAll(new RegExp(s.replace(/[.$]/g, '\\$&'), 'g'))].map((m) => m.index));
  const rnd = prng(seed);
  const prefix = new RegExp(`^${FILE.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(:\\d+:\\d+)?: `);
  const out: Outcome = { valid: 0, invalid: 0, failures: [] };
  for (let n = 0; n < count; n++) {
    const { bytes, ops } = mutate(src, rnd, anchors);
    writeFileSync(FILE, bytes);
    const fail = (why: string): void => void out.failures.push(`#${n} [${ops.join('; ')}]: ${why}`);
    try {
      const cfg = loadConfig(FILE, ENV);
      out.valid++;
      const said = cfg.warnings.join('\n');
      for (const s of SECRETS) if (said.includes(s)) fail(`a warning holds a secret: ${said}`);
    } catch (err) {
      if (!(err instanceof ConfigError)) {
        fail(`not a ConfigError: ${err instanceof Error ? `${err.name}: ${err.message.split('\n')[0]}` : String(err)}`);
        continue;
      }
      out.invalid++;
      for (const p of err.problems) {
        if (!prefix.test(p)) fail(`a problem without the file's name: ${p}`);
        if (p.includes('internal error')) fail(`a loader bug: ${p}`);
      }
      const said = `${err.message}\n${err.problems.join('\n')}`;
      for (const s of SECRETS) if (said.includes(s)) fail(`a message holds a secret: ${said}`);
    }
  }
  return out;
}

describe('configuration loader fuzz', () => {
  it('the base files are valid (so mutations start from a real configuration)', () => {
    writeFileSync(FILE, NATIVE);
    expect(loadConfig(FILE, ENV).intakes.map((i) => i.intakeKey)).toEqual([KEY, ENV_KEY, FILE_KEY]);
    writeFileSync(FILE, LEGACY);
    expect(loadConfig(FILE, ENV).format).toBe('official-intakes-yaml');
  });

  it.each([
    ['native', NATIVE, 0x5eed, 2000],
    ['official intakes.yaml', LEGACY, 0xf00d, 800],
  ] as const)('%s: every mutation loads or is a ConfigError naming the file, and no secret is printed', (_name, base, seed, count) => {
    const r = fuzz(base, seed, count);
    expect(r.failures.slice(0, 10), `${r.failures.length} of ${count} mutations failed`).toEqual([]);
    // Both outcomes are exercised: the fuzz is neither all syntax errors nor all harmless.
    expect(r.valid).toBeGreaterThan(count / 20);
    expect(r.invalid).toBeGreaterThan(count / 4);
  });
});
