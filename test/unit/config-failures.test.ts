// Every way a configuration file can be broken is a ConfigError whose problems each name the file
// (and its line and column where there is one), never an exception, and never carry a secret: not
// from the file, not from the environment, not from a key file.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseConfig } from '../../src/config/load.ts';
import { runCliSync, type CliResult } from '../helpers/process.ts';

const KEY = 'AbCdEfGh0123456789IjKlMnOpQrStUv';
const b64 = (s: string): string => Buffer.from(s).toString('base64').replace(/=+$/, '');
const dir = mkdtempSync(join(tmpdir(), 'cfg-fail-'));

/** The problems of a file that must fail; each checked to name the file and to hold no secret. */
function problems(input: string | Uint8Array, env: NodeJS.ProcessEnv = {}, secrets: string[] = [KEY], file = 'relay.yaml'): string[] {
  let err: unknown;
  try {
    parseConfig(input, file, env);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ConfigError);
  const p = [...(err as ConfigError).problems];
  expect(p.length).toBeGreaterThan(0);
  for (const line of p) expect(line.startsWith(`${file}:`) || line.startsWith(`${file} `)).toBe(true);
  const text = `${(err as Error).message}\n${p.join('\n')}`;
  for (const s of secrets) {
    expect(text).not.toContain(s);
    expect(text).not.toContain(b64(s));
  }
  return p;
}

function fileProblems(path: string): string[] {
  try {
    loadConfig(path, {});
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return [...(err as ConfigError).problems];
  }
  throw new Error('expected a configuration error');
}

describe('YAML errors are reported by position and kind, never by the text they stopped at', () => {
  it('a syntax error next to the intake key does not print the key', () => {
    // The yaml library's own message was: Unexpected scalar token in YAML stream: "<the key>".
    const y = `intakes:\n  - name: fw\n    inputs: [{ type: udp, port: 514 }]]\n    intake_key: ${KEY}\n`;
    const p = problems(y);
    expect(p[0]).toBe('relay.yaml:3:39: YAML: unexpected text here (a missing ":", quote or indentation?) (UNEXPECTED_TOKEN)');
    for (const line of p) expect(line).toMatch(/^relay\.yaml:\d+:\d+: YAML: .* \([A-Z_]+\)$/);
    // The same for the official forwarder's intakes.yaml, and for a stray line that is the key.
    problems(`intakes:\n- name: fw\n  protocol: tcp\n  port: 20516\n  intake_key: ${KEY}\n]\n${KEY}\n`);
    problems(`intakes:\n  - { name: fw, intake_key: x }}${KEY}\n`);
  });

  it('an undefined alias is a problem at its position, not an exception', () => {
    expect(problems(`log_level: *a\nintakes:\n  - name: fw\n    intake_key: ${KEY}\n`)).toEqual([
      'relay.yaml:1:12: YAML: this alias (*) names no anchor (&) set before it (UNDEFINED_ALIAS)',
    ]);
    // An anchor defined after its alias is no anchor for it (YAML's rule).
    expect(problems(`log_level: *lvl\nx: &lvl info\n`)).toEqual([
      'relay.yaml:1:12: YAML: this alias (*) names no anchor (&) set before it (UNDEFINED_ALIAS)',
    ]);
  });

  it('an alias bomb ("billion laughs") stops at the alias limit', () => {
    const lol = ['a: &a [x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++) lol.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9).fill(`*${String.fromCharCode(96 + i)}`).join(', ')}]`);
    expect(problems(`${lol.join('\n')}\nintakes: []\n`)).toEqual([
      expect.stringMatching(/^relay\.yaml:2:\d+: YAML: aliases \(\*\) expand to more than 100 copies \(RESOURCE_EXHAUSTION\)$/),
    ]);
  });

  it('documents nested too deeply, too large, or with a huge mapping', () => {
    expect(problems('['.repeat(100_000))[0]).toMatch(/^relay\.yaml:1:\d+: YAML: the document is nested too deeply \(RESOURCE_EXHAUSTION\)$/);
    expect(problems(`${'- '.repeat(50_000)}x`)).toEqual([expect.stringMatching(/^relay\.yaml:1:\d+: YAML: the document is nested too deeply \(RESOURCE_EXHAUSTION\)$/)]);
    expect(problems(`# ${'x'.repeat(4 * 1024 * 1024)}\n`)).toEqual(['relay.yaml: the file is larger than 4 MiB: not a configuration file']);
    // Duplicate keys are found in linear time: the library's own check is quadratic (100,000 keys:
    // minutes), which is what this test would time out on.
    const keys = (n: number): string => `intakes:\n  - name: fw\n    intake_key: ${KEY}\n${Array.from({ length: n }, (_, i) => `k${i}: 1`).join('\n')}\n`;
    expect(problems(`${keys(100_000)}k7: 2\n`)).toEqual(['relay.yaml:100004:1: YAML: Map keys must be unique: this key is already set in the same mapping (DUPLICATE_KEY)']);
    // A flood of unknown keys is reported in part (locating each one scans its mapping).
    const unknown = problems(keys(300));
    expect(unknown).toHaveLength(101);
    expect(unknown[0]).toBe('relay.yaml:4:1: k0: unknown key "k0"');
    expect(unknown[100]).toBe('relay.yaml: 200 more problems after these');
  });

  it('a top level that is not a mapping, an empty file, binary garbage', () => {
    expect(problems('- name: fw\n')).toEqual(['relay.yaml:1:1: the top level must be a mapping of keys such as "intakes:", not a list']);
    expect(problems(KEY)).toEqual(['relay.yaml:1:1: the top level must be a mapping of keys such as "intakes:", not a single value']);
    expect(problems('')).toEqual(['relay.yaml:1:1: the file holds no configuration (it is empty or only comments): it needs an "intakes:" list']);
    expect(problems('# only a comment\n\n')).toHaveLength(1);
    let seed = 7;
    for (let n = 0; n < 50; n++) {
      const bytes = Buffer.alloc(200, 0).map(() => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 0xff);
      problems(bytes);
    }
  });

  it('invalid UTF-8 is refused at its line and column', () => {
    const f = join(dir, 'latin1.yaml');
    writeFileSync(f, Buffer.concat([Buffer.from(`intakes:\n  - name: caf`), Buffer.from([0xe9]), Buffer.from(`\n    intake_key: ${KEY}\n`)]));
    expect(fileProblems(f)).toEqual([`${f}:2:14: the file is not UTF-8 (byte 0xe9): save it as UTF-8`]);
    // A valid multi-byte character before the bad byte counts as one column; an overlong encoding is invalid.
    expect(problems(Buffer.from([...Buffer.from('é: '), 0xc0, 0xaf]))).toEqual(['relay.yaml:1:4: the file is not UTF-8 (byte 0xc0): save it as UTF-8']);
  });

  it('a directory, a missing file, an unreadable file: the file named, exit code kept', () => {
    expect(fileProblems(dir)).toEqual([`${dir}: cannot read the file (EISDIR: it is a directory)`]);
    expect(fileProblems(join(dir, 'nope.yaml'))).toEqual([`${join(dir, 'nope.yaml')}: cannot read the file (ENOENT: no such file)`]);
    expect(fileProblems(join(dir, 'latin1.yaml', 'x'))).toEqual([`${join(dir, 'latin1.yaml', 'x')}: cannot read the file (ENOTDIR)`]);
  });

  it.skipIf(process.getuid?.() === 0)('a file without read permission (not testable as root)', () => {
    const f = join(dir, 'secret.yaml');
    writeFileSync(f, 'intakes: []\n');
    chmodSync(f, 0o000);
    expect(fileProblems(f)).toEqual([`${f}: cannot read the file (EACCES: permission denied)`]);
  });
});

describe('the PROXY protocol settings', () => {
  const listener = (extra: string, type = 'tcp'): string =>
    `intakes:\n  - name: fw\n    intake_key: ${KEY}\nlisteners:\n  - type: ${type}\n    port: 1514\n${type === 'http' ? '' : '    routes: [{ match: { app_name: x }, intake: fw }]\n'}${extra}`;

  it('proxy_protocol needs trusted_proxies, each an address or CIDR; trusted_proxies needs proxy_protocol', () => {
    expect(problems(listener('    proxy_protocol: v2\n'))).toEqual([
      expect.stringMatching(/^relay\.yaml:\d+:\d+: listeners\[0\]\.trusted_proxies: is required with proxy_protocol: v2/),
    ]);
    expect(problems(listener('    proxy_protocol: auto\n    trusted_proxies: [10.0.0.0/8, 10.1.2.3/40, lb.example]\n', 'relp'))).toEqual([
      'relay.yaml:9:35: listeners[0].trusted_proxies[1]: "10.1.2.3/40" is not an IP address or CIDR',
      'relay.yaml:9:48: listeners[0].trusted_proxies[2]: "lb.example" is not an IP address or CIDR',
    ]);
    expect(problems(listener('    trusted_proxies: 10.0.0.0/8\n', 'http'))).toEqual([
      expect.stringMatching(/listeners\[0\]\.trusted_proxies: is set but proxy_protocol is off/),
    ]);
    expect(problems(listener('    proxy_protocol: v3\n    trusted_proxies: 10.0.0.0/8\n'))[0]).toMatch(/listeners\[0\]\.proxy_protocol: .*"off".*"v1".*"v2".*"auto"/);
  });

  it('a good one loads', () => {
    expect(() => parseConfig(listener('    proxy_protocol: v1\n    trusted_proxies: [10.0.0.0/8, "2001:db8::/32", 192.0.2.7]\n'), 'relay.yaml', {})).not.toThrow();
  });
});

describe('secrets in problems and warnings', () => {
  it('a key misplaced under another field, or given as a file name, is not printed', () => {
    const p = problems(`region: ${KEY}\nintakes:\n  - name: fw\n    intake_key_file: ${KEY}\n  - name: b\n    intake_key: \${${KEY}}\n`);
    expect(p).toEqual([
      'relay.yaml:6:17: intakes[1].intake_key: environment variable [redacted] is not set',
      'relay.yaml:1:9: region: unknown region "[redacted]": expected one of fra1, fra2, mco1, uae1, usa1, sgp1',
    ]);
    expect(problems(`intakes:\n  - name: fw\n    intake_key_file: ${KEY}\n`)).toEqual([
      'relay.yaml:3:22: intakes[0].intake_key_file: cannot read intake_key_file "[redacted]": ENOENT',
    ]);
    // As an unknown key (a line whose "intake_key:" was lost); a key name no schema has (too long,
    // spaces, quotes: a mangled line) is not echoed at all.
    expect(problems(`intakes:\n  - name: fw\n    ${KEY}: 1\n    ${b64(KEY)}: 2\n    bearer_token "x-${KEY}-y": 3\n`)).toEqual([
      'relay.yaml:3:5: intakes[0].[redacted]: unknown key "[redacted]"',
      'relay.yaml:4:5: intakes[0]: an unknown key (not shown: it looks like a value, not a key name)',
      'relay.yaml:5:5: intakes[0]: an unknown key (not shown: it looks like a value, not a key name)',
    ]);
  });

  it('known secrets are scrubbed even when they look like ordinary words: from ${VAR}, key files, bearer tokens', () => {
    // Letters of one case only: not credential-shaped, so only knowing the secret can remove it.
    const envKey = 'lowercaseonlyintakekeyfromtheenv';
    const fileKey = 'lowercaseonlyintakekeyfromafile';
    const token = 'lowercasebearertokenofthelistener';
    const keyFile = join(dir, 'key');
    writeFileSync(keyFile, `${fileKey}\n`);
    const y = `stats: { intake: "\${INTAKE_KEY}" }
intakes:
  - name: a
    intake_key: \${INTAKE_KEY}
  - name: b
    intake_key_file: ${keyFile}
listeners:
  - type: http
    port: 0
    intakes: [${fileKey}]
    paths:
      - { path: /a, intake: ${token}, bearer_token: ${token} }
`;
    const p = problems(y, { INTAKE_KEY: envKey }, [envKey, fileKey, token]);
    expect(p).toEqual([
      'relay.yaml:10:15: listeners[0].intakes[0]: no intake is named "[redacted]"',
      'relay.yaml:12:29: listeners[0].paths[0].intake: no intake is named "[redacted]"',
      'relay.yaml:1:18: stats.intake: no intake is named "[redacted]"',
    ]);
  });

  it('warnings carry no key either', () => {
    const c = parseConfig(`intakes:\n- name: ${KEY}\n  protocol: tcp\n  port: 20516\n  intake_key: ${KEY}\n  debug: true\n`, 'intakes.yaml', { DISK_SPACE: '0' });
    expect(c.warnings).toEqual(['intake "[redacted]": "debug" is ignored (it would print intake keys); use log_level: debug.']);
  });
});

describe('intake-relay validate and run, as processes', () => {
  const cli = (args: string[]): CliResult => runCliSync(args, { INTAKE_KEY: KEY });

  it('exit 78 with the position, no stack trace and no key: an undefined alias, a syntax error next to the key', () => {
    const sub = join(dir, 'cli');
    mkdirSync(sub);
    const alias = join(sub, 'alias.yaml');
    writeFileSync(alias, `log_level: *a\nintakes:\n  - name: fw\n    intake_key: ${KEY}\n`);
    const syntax = join(sub, 'syntax.yaml');
    writeFileSync(syntax, `intakes:\n  - name: fw\n    inputs: [{ type: udp, port: 0 }]]\n    intake_key: ${KEY}\n`);
    const env = join(sub, 'env.yaml');
    writeFileSync(env, 'intakes:\n  - name: fw\n    inputs: [{ type: udp, port: 0 }]]\n    intake_key: ${INTAKE_KEY}\n');
    for (const [args, where] of [
      [['validate', '-c', alias], `${alias}:1:12: YAML: `],
      [['validate', '-c', syntax], `${syntax}:3:37: YAML: `],
      [['run', '-c', syntax], `${syntax}:3:37: YAML: `],
      [['run', '-c', env], `${env}:3:37: YAML: `],
    ] as const) {
      const r = cli([...args]);
      expect(r.code, r.stderr).toBe(78);
      expect(r.stderr).toContain(where);
      expect(r.stderr).not.toMatch(/^\s+at /m);
      expect(r.stdout + r.stderr).not.toContain(KEY);
    }
  });
});

describe('problems in our words', () => {
  const intake = (body: string): string => `intakes:\n  - name: a\n    intake_key: ${KEY}\n${body}`;
  // A misspelt key in each section, and the key it was meant to be.
  const misspelt: [string, string, string][] = [
    ['top level', 'shutdown_timout_ms: 5\n' + intake(''), 'shutdown_timeout_ms'],
    ['metrics', 'metrics: { adress: 127.0.0.1 }\n' + intake(''), 'address'],
    ['emulator', 'emulator: { wen: never }\n' + intake(''), 'when'],
    ['endpoints', 'endpoints: { syslog_hots: x }\n' + intake(''), 'syslog_host'],
    ['stats', intake('') + 'stats: { intake: a, interval: 60000 }\n', 'interval_ms'],
    ['an intake', intake('    filtres: []\n'), 'filters'],
    ['a queue', intake('    queue: { max_event: 5 }\n'), 'max_events'],
    ['a batch', intake('    batch: { max_event: 5 }\n'), 'max_events'],
    ['a udp input', intake('    inputs: [{ type: udp, port: 1514, recieve_buffer_bytes: 1 }]\n'), 'receive_buffer_bytes'],
    ['a tcp input', intake('    inputs: [{ type: tcp, port: 1514, max_conections: 1 }]\n'), 'max_connections'],
    ['a file input', intake('    inputs: [{ type: file, paths: [/x.log], red_from: beginning }]\n'), 'read_from'],
    ['an http listener', intake('') + 'listeners:\n  - { type: http, port: 8080, respond_wen: queued }\n', 'respond_when'],
    ['a relp input', intake('    inputs: [{ type: relp, port: 2514, respond_wen: queued }]\n'), 'respond_when'],
    ['a syslog output', intake('    output: { type: syslog, resend_window_m: 5 }\n'), 'resend_window_ms'],
    ['an http output', intake('    output: { type: http, gzipp: true }\n'), 'gzip'],
    ['a relp output', intake('    output: { type: relp, windw: 5 }\n'), 'window'],
    ['senders', intake('    senders: { silent_after: 5 }\n'), 'silent_after_ms'],
    ['a listener', intake('') + 'listeners:\n  - { type: tcp, port: 1514, default: a, routes: [{ match: { app_nam: x }, intake: a }] }\n', 'app_name'],
  ];
  for (const [where, yaml, meant] of misspelt) {
    it(`a misspelt key in ${where}: "did you mean ${meant}"`, () => {
      const p = problems(yaml);
      expect(p.join('\n')).toMatch(new RegExp(`unknown key "[a-z_]+" \\(did you mean "${meant}"\\?\\)`));
    });
  }

  it('a wrong type, an out-of-range value and a bad choice say what is allowed, never in the schema library\'s words', () => {
    const p = problems(intake('    queue: { max_events: lots, when_full: nope }\n    inputs: [{ type: udp, port: 99999 }]\n    output: { type: syslog, resend_window_ms: -5 }\n') + 'workers: 0\nlog_level: loud\n');
    expect(p).toEqual(expect.arrayContaining([
      expect.stringMatching(/intakes\[0\]\.queue\.max_events: must be a (whole )?number$/),
      expect.stringMatching(/intakes\[0\]\.queue\.when_full: must be one of "block", "drop_newest"$/),
      expect.stringMatching(/intakes\[0\]\.inputs\[0\]\.port: must be at most 65535$/),
      expect.stringMatching(/intakes\[0\]\.output\.resend_window_ms: must be (at least|more than) \d+ ms$/),
      expect.stringMatching(/log_level: must be one of "fatal", "error", "warn", "info", "debug", "trace"$/),
    ]));
    expect(p.join('\n')).not.toMatch(/Invalid input|Invalid option|Too (big|small)|expected (number|string)|received/);
    // A type no input has: the types it may be.
    expect(problems(intake('    inputs: [{ type: htp, port: 1 }]\n'))).toEqual([expect.stringMatching(/intakes\[0\]\.inputs\[0\].type: must be one of "udp", "tcp", "file", "relp"$/)]);
  });
});
