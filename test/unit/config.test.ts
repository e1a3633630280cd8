import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadMetricsSettings, parseConfig } from '../../src/config/load.ts';
import { effectiveYaml, summarize } from '../../src/cli/summary.ts';
import { TLS } from '../helpers/relay.ts';
import { unreadCapacityBytes } from '../../src/outputs/syslog/tcp-buffers.ts';
import { configJsonSchema } from '../../src/config/json-schema.ts';
import { configReference } from '../../src/config/reference.ts';
import { configurationPage } from '../../scripts/docs/configuration-page.ts';
import { runCliSync } from '../helpers/process.ts';

const KEY = 'AbCdEfGh0123456789IjKlMnOpQrStUv';
const dir = mkdtempSync(join(tmpdir(), 'cfg-test-'));

function problems(yaml: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(yaml, 'relay.yaml', env);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
  throw new Error('expected a configuration error');
}

describe('configuration', () => {
  it('fills defaults and resolves the region', () => {
    const c = parseConfig(`region: USA1\nintakes:\n  - name: fw\n    intake_key: ${KEY}\n    inputs: [{ type: udp, port: 514 }]\n`, 'x.yaml', {});
    expect(c.region).toBe('usa1');
    const i = c.intakes[0]!;
    expect(i.output).toMatchObject({ type: 'syslog', host: 'intake.usa1.sekoia.io', port: 10514, timestamp: 'received' });
    expect(i.inputs[0]).toMatchObject({ type: 'udp', address: '0.0.0.0', port: 514, max_message_bytes: 256000, oversize: 'drop', label: 'udp/514' });
    expect(i.queue).toEqual({ type: 'memory', max_events: 100000, max_bytes: 25165824, when_full: 'block' });
    expect(Object.isFrozen(i.output)).toBe(true);
  });

  it('resolves the resend window and the proof distance from the TCP buffers, and warns about settings that cannot keep their promise', () => {
    const base = `intakes:\n  - name: fw\n    intake_key: ${KEY}\n    inputs: [{ type: udp, port: 514 }]\n`;
    const dflt = parseConfig(base, 'x.yaml', {});
    expect(dflt.intakes[0]!.output).toMatchObject({ resend_window_bytes: 8 * 1024 * 1024, windowBytes: 8 * 1024 * 1024, proofBytes: unreadCapacityBytes() });
    expect(dflt.warnings).toEqual([]);
    // auto: as much as the proof by volume needs, plus the headroom (the previous default).
    const auto = parseConfig(`${base}    output: { type: syslog, resend_window_bytes: auto }\n`, 'x.yaml', {});
    expect(auto.intakes[0]!.output).toMatchObject({ windowBytes: unreadCapacityBytes() + 8 * 1024 * 1024, proofBytes: unreadCapacityBytes() });
    // A small window no longer weakens the proof: it costs connections, not the guarantee.
    const low = parseConfig(`${base}    output: { type: syslog, resend_window_bytes: 1048576 }\n`, 'x.yaml', {});
    expect(low.intakes[0]!.output).toMatchObject({ windowBytes: 1048576, proofBytes: unreadCapacityBytes() });
    expect(low.warnings).toEqual([]);
    // The intake's receive buffer, when it is known to be larger than this host's.
    const big = parseConfig(`${base}    output: { type: syslog, intake_receive_buffer_bytes: 67108864 }\n`, 'x.yaml', {});
    expect(big.intakes[0]!.output).toMatchObject({ proofBytes: unreadCapacityBytes(undefined, 67108864) });
    expect((big.intakes[0]!.output as { proofBytes: number }).proofBytes).toBeGreaterThan(64 * 1024 * 1024);
    // A large window, as the previous release's advice for intakes with larger buffers: it sets memory now.
    const raised = parseConfig(`${base}    output: { type: syslog, resend_window_bytes: 268435456 }\n`, 'x.yaml', {});
    expect(raised.warnings).toEqual([expect.stringMatching(/^intakes\[0\]\.output\.resend_window_bytes \(268435456\) bounds the memory .* set intake_receive_buffer_bytes\.$/)]);
    expect(parseConfig(`${base}    output: { type: syslog, resend_window_bytes: 268435456, intake_receive_buffer_bytes: 134217728 }\n`, 'x.yaml', {}).warnings).toEqual([]);
    const http = parseConfig(`${base}listeners:\n  - { type: http, port: 8080, max_inflight_bytes: 1048576 }\n`, 'x.yaml', {});
    expect(http.warnings).toEqual([expect.stringMatching(/^listeners\[0\]\.max_inflight_bytes \(1048576\) cannot hold one JSON body/)]);
  });

  it('reports every problem at once, with file, line, column and key path', () => {
    const p = problems(
      [
        'region: fra9', //                                  1
        'log_level: loud', //                               2
        'intakes:', //                                      3
        '  - name: fw', //                                  4
        '    intake_key: ${FW_KEY}', //                      5
        '    inputs:', //                                   6
        '      - type: udp', //                             7
        '        port: 70000', //                           8
        '        colour: blue', //                          9
        '      - type: smtp', //                            10
        '        port: 25', //                              11
      ].join('\n'),
    );
    expect(p).toEqual([
      'relay.yaml:5:17: intakes[0].intake_key: environment variable FW_KEY is not set',
      expect.stringMatching(/^relay\.yaml:1:9: region: unknown region "fra9": expected one of fra1, fra2, mco1, uae1, usa1, sgp1$/),
      expect.stringMatching(/^relay\.yaml:2:12: log_level: /),
      expect.stringMatching(/^relay\.yaml:8:15: intakes\[0\]\.inputs\[0\]\.port: .*65535/),
      'relay.yaml:9:9: intakes[0].inputs[0].colour: unknown key "colour"',
      expect.stringMatching(/^relay\.yaml:10:15: intakes\[0\]\.inputs\[1\]\.type: /),
    ]);
  });

  it('rejects duplicate names, shared ports, bad keys, unreadable files; never prints the key', () => {
    const badKey = 'Secret-Key-With-Dash-1234567890ab';
    const p = problems(`
intakes:
  - name: fw
    intake_key: ${badKey}
    inputs:
      - { type: tcp, port: 6514, tls: { cert_file: /nonexistent.crt, key_file: /nonexistent.key } }
  - name: FW
    intake_key_file: /nonexistent/key
    inputs:
      - { type: tcp, port: 6514, address: 127.0.0.1 }
      - { type: udp, port: 6514 }
`);
    expect(p).toEqual([
      'relay.yaml:7:11: intakes[1].name: duplicate intake name "FW" (also intakes[0])',
      'relay.yaml:10:28: intakes[1].inputs[0].port: tcp port 6514 is already used by intakes[0].inputs[0] (intake "fw")',
      expect.stringMatching(/^relay\.yaml:4:17: intakes\[0\]\.intake_key: the intake key of "fw" must be letters and digits only/),
      'relay.yaml:6:52: intakes[0].inputs[0].tls.cert_file: cannot read cert_file "/nonexistent.crt": ENOENT',
      'relay.yaml:6:80: intakes[0].inputs[0].tls.key_file: cannot read key_file "/nonexistent.key": ENOENT',
      'relay.yaml:8:22: intakes[1].intake_key_file: cannot read intake_key_file "/nonexistent/key": ENOENT',
    ]);
    expect(p.join('\n')).not.toContain(badKey);
  });

  it('reads keys from ${ENV}, ${ENV:-default} and key files, and types substituted numbers', () => {
    const keyFile = join(dir, 'key');
    writeFileSync(keyFile, `${KEY}\n`);
    const c = parseConfig(
      // In flow style ({ }) a reference must be quoted (YAML's rule), which keeps it a string: block style here.
      `intakes:\n  - name: a\n    intake_key: \${A_KEY}\n    inputs:\n      - type: udp\n        port: \${PORT:-1514}\n  - name: b\n    intake_key_file: ${keyFile}\n`,
      'x.yaml',
      { A_KEY: KEY },
    );
    expect(c.intakes.map((i) => i.intakeKey)).toEqual([KEY, KEY]);
    expect(c.intakes[0]!.inputs[0]).toMatchObject({ port: 1514 });
    expect(c.warnings).toEqual(['intake "b" has no inputs.']);
  });


  it('keeps a substituted value as text where a number would not write back the same: leading zeros, long digit keys', () => {
    const yaml = 'intakes:\n  - name: a\n    intake_key: ${A_KEY}\n    inputs:\n      - type: udp\n        port: ${PORT}\n';
    const digits = '01234567890123456789012345678901';
    expect(parseConfig(yaml, 'x.yaml', { A_KEY: digits, PORT: '1514' }).intakes[0]!.intakeKey).toBe(digits);
    expect(parseConfig(yaml, 'x.yaml', { A_KEY: digits.replace('0', '9'), PORT: '1514' }).intakes[0]!.intakeKey).toBe(digits.replace('0', '9'));
    // A port written 01514 is text, refused at its place as such rather than a crash of the loader.
    expect(() => parseConfig(yaml, 'x.yaml', { A_KEY: KEY, PORT: '01514' })).toThrow(/x\.yaml:6:15: intakes\[0\]\.inputs\[0\]\.port: /);
  });
  it('reads only metrics: for the commands that ask the running daemon (no keys, no TLS files needed)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'metrics-only-'));
    const file = join(dir, 'relay.yaml');
    writeFileSync(file, 'metrics:\n  port: ${PORT:-9751}\n  tap: any\nintakes:\n  - name: a\n    intake_key: ${UNSET_KEY}\n    output: { type: syslog, ca_file: /nonexistent }\n');
    expect(loadMetricsSettings(file, {})).toMatchObject({ enabled: true, address: '127.0.0.1', port: 9751, tap: 'any' });
    expect(loadMetricsSettings(file, { PORT: '9999' }).port).toBe(9999);
    writeFileSync(file, 'metrics:\n  port: 99999\nintakes: []\n');
    expect(() => loadMetricsSettings(file, {})).toThrow(/^.*relay\.yaml:2:9: metrics\.port: /);
    writeFileSync(file, 'intakes:\n  - intake_name: a\n    intake_key: k\n');
    expect(loadMetricsSettings(file, {}).port).toBe(9750);
  });

  it('refuses senders settings that could never report a silent sender, at their place', () => {
    const y = (s: string) => `intakes:\n  - name: a\n    intake_key: AbC1\n    senders: ${s}\n`;
    expect(problems(y('{ silent_after_ms: 60000, known_within_ms: 1000 }'))).toEqual([
      'relay.yaml:4:57: intakes[0].senders.known_within_ms: must be more than silent_after_ms (60000): a sender is forgotten after known_within_ms, before it could be reported silent',
    ]);
    expect(parseConfig(y('{ silent_after_ms: 0, known_within_ms: 1000 }'), 'relay.yaml', {}).intakes[0]!.senders.known_within_ms).toBe(1000);
  });

  it('refuses an empty key unless the emulator is asked for', () => {
    const y = 'intakes:\n  - name: a\n    intake_key: ${K:-}\n';
    expect(problems(y)).toEqual(['relay.yaml:3:17: intakes[0].intake_key: intake "a" has no key (environment variable K is not set or empty): set it, or "emulator: { when: no_intake_key }" to forward to a local intake emulator instead']);
    expect(problems('intakes:\n  - name: a\n    intake_key: ""\n')[0]).toContain('intake "a" has no key (intake_key is empty): set it, or');
    // ${K} without a default, unset: the same one problem, not also "K is not set" (the Debian sample)...
    expect(problems('intakes:\n  - name: a\n    intake_key: ${K}\n')).toEqual(problems(y));
    // ... unless the file has other problems, which stop it before the keys are checked.
    expect(problems('log_level: loud\nintakes:\n  - name: a\n    intake_key: ${K}\n')).toEqual([
      'relay.yaml:4:17: intakes[0].intake_key: environment variable K is not set',
      expect.stringMatching(/^relay\.yaml:1:12: log_level: /),
    ]);
    expect(parseConfig('emulator: { when: no_intake_key }\nintakes:\n  - name: a\n    intake_key: ${K}\n', 'x', {}).intakes[0]!.toEmulator).toBe(true);
    expect(parseConfig(`emulator: { when: no_intake_key }\n${y}`, 'x', {}).intakes[0]!.toEmulator).toBe(true);
    // The switch named when it comes from the environment (the Docker image's configuration).
    const image = `emulator:\n  when: \${SWITCH:-never}\n${y}`;
    expect(problems(image)[0]).toMatch(/has no key \(environment variable K is not set or empty\): set it, or SWITCH=no_intake_key to forward/);
    expect(parseConfig(image, 'x', { SWITCH: 'no_intake_key' }).intakes[0]!.toEmulator).toBe(true);
    // One problem, one line: no header before it.
    expect(() => parseConfig(image, 'x', {})).toThrow(/^x:5:17: intakes\[0\]\.intake_key: [^\n]+$/);
  });

  it('reports YAML syntax errors and duplicate keys with their position', () => {
    expect(problems('intakes:\n  - name: a\n    name: b\n')[0]).toMatch(/^relay\.yaml:3:5: YAML: Map keys must be unique/);
    expect(problems('intakes: [\n')[0]).toMatch(/^relay\.yaml:\d+:\d+: YAML: /);
  });

  it('an HTTP output\'s proxy credentials never show in validate\'s summary or effective configuration', () => {
    const secret = 'Sup3rS3cretPw';
    const c = parseConfig(`intakes:\n  - name: h\n    intake_key: ${KEY}\n    inputs: [{ type: tcp, port: 5140 }]\n    output: { type: http, proxy: "http://relay:${secret}@proxy.example:3128" }\n`, 'x.yaml', {});
    const printed = `${summarize(c)}\n${effectiveYaml(c)}`;
    expect(printed).not.toContain(secret);
    expect(printed).not.toContain('relay:');
    expect(summarize(c)).toContain('proxy http://[redacted]@proxy.example:3128');
    expect(effectiveYaml(c)).toContain('proxy: http://[redacted]@proxy.example:3128');
  });

  it('file inputs: defaults, paths resolved against the configuration file, data_dir from systemd, bad patterns reported', () => {
    const yaml = `intakes:\n  - name: app\n    intake_key: ${KEY}\n    inputs:\n      - { type: file, paths: [logs/*.log], exclude: ["*.gz", "logs/old/**"] }\n`;
    const c = parseConfig(yaml, '/etc/intake-relay/relay.yaml', { STATE_DIRECTORY: '/var/lib/intake-relay:/other' });
    expect(c.dataDir).toBe('/var/lib/intake-relay');
    expect(c.intakes[0]!.inputs[0]).toMatchObject({
      type: 'file', label: 'file:logs/*.log', paths: ['/etc/intake-relay/logs/*.log'], exclude: ['*.gz', '/etc/intake-relay/logs/old/**'],
      read_from: 'end', new_files_from: 'beginning', syslog_header: 'ignore', max_line_bytes: 256_000, oversize: 'split', partial_line_timeout_ms: 5_000,
    });
    expect(parseConfig(`data_dir: state\n${yaml}`, '/srv/relay.yaml', {}).dataDir).toBe('/srv/state');
    expect(parseConfig(yaml, '/srv/relay.yaml', {}).dataDir).toBe('/var/lib/intake-relay');
    expect(summarize(c)).toContain('input file:logs/*.log: lines of /etc/intake-relay/logs/*.log except *.gz, /etc/intake-relay/logs/old/**');
    expect(problems(`intakes:\n  - name: app\n    intake_key: ${KEY}\n    inputs:\n      - type: file\n        paths: []\n        multiline: { start_pattern: "([" }\n        oversize: truncate\n`)).toEqual([
      expect.stringMatching(/^relay\.yaml:6:16: intakes\[0\]\.inputs\[0\]\.paths: needs at least one path/),
      expect.stringMatching(/^relay\.yaml:8:19: intakes\[0\]\.inputs\[0\]\.oversize: .*"split".*"drop"/),
    ]);
    expect(problems(`intakes:\n  - name: app\n    intake_key: ${KEY}\n    inputs:\n      - type: file\n        paths: [a.log]\n        multiline: { start_pattern: "([" }\n`)).toEqual([
      expect.stringMatching(/^relay\.yaml:7:\d+: intakes\[0\]\.inputs\[0\]\.multiline\.start_pattern: not a valid regular expression/),
    ]);
  });
});

describe("the official forwarder's intakes.yaml", () => {
  const legacy = `---
intakes:
- name: Techno1
  protocol: tcp
  port: 20516
  intake_key: ${KEY}
- name: Techno2
  protocol: UDP
  port: 20517
  intake_key: ${KEY}
  queue_size: 5000
- name: Techno3
  protocol: tls
  port: 20518
  intake_key: ${KEY}
- name: Monitoring
  stats: True
  intake_key: ${KEY}
`;

  it('is accepted as it is, with REGION, ENDPOINT and MEMORY_MESSAGES', () => {
    const certs = join(dir, 'certs');
    spawnSync('mkdir', ['-p', certs]);
    writeFileSync(join(certs, 'server.crt'), readFileSync(new URL('../fixtures/tls/server.crt', import.meta.url)));
    writeFileSync(join(certs, 'server.key'), readFileSync(new URL('../fixtures/tls/server.key', import.meta.url)));
    const c = parseConfig(legacy, 'intakes.yaml', { REGION: 'FRA2', MEMORY_MESSAGES: '300000', CERTS_DIR: certs, ENDPOINT: 'relay.example:6514', DISK_SPACE: '0' });
    expect(c.format).toBe('official-intakes-yaml');
    expect(c.region).toBe('fra2');
    expect(c.intakes.map((i) => [i.name, i.inputs[0]?.label, i.queue.type === 'memory' ? i.queue.max_events : 0, i.output.type === 'syslog' ? i.output.host : '', i.output.type === 'syslog' ? i.output.port : 0])).toEqual([
      ['Techno1', 'tcp/20516', 100000, 'relay.example', 6514],
      ['Techno2', 'udp/20517', 5000, 'relay.example', 6514],
      ['Techno3', 'tls/20518', 100000, 'relay.example', 6514],
      ['Monitoring', undefined, 100000, 'relay.example', 6514],
    ]);
    // The "stats: true" entry receives the forwarder's statistics.
    expect(c.stats).toEqual({ intake: 'Monitoring', interval_ms: 300_000 });
    expect(c.warnings).toEqual([]);
  });

  it('reports an unknown REGION instead of falling back to fra1, and a bad key at its line', () => {
    const p = problems(legacy.replace(`port: 20517\n  intake_key: ${KEY}`, 'port: 20517\n  intake_key: bad key!'), { REGION: 'eu1', CERTS_DIR: '/nonexistent' });
    expect(p).toContain('relay.yaml: environment REGION: unknown region "eu1": expected one of fra1, fra2, mco1, uae1, usa1, sgp1, or OTHER with ENDPOINT');
    expect(p).toContainEqual(expect.stringMatching(/^relay\.yaml:10:15: intakes\[1\]\.intake_key: the intake key of "Techno2"/));
    expect(p).toContainEqual(expect.stringMatching(/^relay\.yaml:12:3: intakes\[2\]\.tls_cert_name: cannot read cert_file "\/nonexistent\/server\.crt"/));
    expect(p).toContainEqual(expect.stringMatching(/^relay\.yaml:12:3: intakes\[2\]\.tls_key_name: cannot read key_file "\/nonexistent\/server\.key"/));
  });
});

describe('intake-relay validate', () => {
  it('prints a redacted summary and exits 0 for a valid file', () => {
    const f = join(dir, 'ok.yaml');
    writeFileSync(f, `intakes:\n  - name: fw\n    intake_key: \${K}\n    inputs: [{ type: udp, port: 514 }]\n`);
    const r = runCliSync(['validate', '-c', f], { K: KEY });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('key: set (32 characters, from intake_key)');
    expect(r.stdout).toContain('input udp/514: udp on 0.0.0.0:514');
    expect(r.stdout + r.stderr).not.toContain(KEY);
  });

  it('exits 78 with every problem, never the key', () => {
    const f = join(dir, 'bad.yaml');
    writeFileSync(f, `intakes:\n  - name: fw\n    intake_key: ${KEY}x-\n    unknown: 1\n`);
    const r = runCliSync(['validate', '-c', f]);
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(`${f}:4:5: intakes[0].unknown: unknown key "unknown"`);
    expect(r.stdout + r.stderr).not.toContain(KEY);
  });

  it('run exits 78 before opening any port', () => {
    const f = join(dir, 'bad-run.yaml');
    writeFileSync(f, 'intakes:\n  - name: fw\n    intake_key: ${NOPE}\n    inputs: [{ type: udp, port: 0 }]\n');
    const r = runCliSync(['run', '-c', f]);
    expect(r.code).toBe(78);
    expect(r.stderr).toContain('environment variable NOPE is not set');
  });

  it('--print shows the effective configuration, keys redacted, loadable again', () => {
    const f = join(dir, 'print.yaml');
    writeFileSync(f, `intakes:\n  - name: fw\n    intake_key: \${K}\n    inputs: [{ type: udp, port: 514 }]\n    output: { type: http, gzip: true }\n`);
    const r = runCliSync(['validate', '--print', '-c', f], { K: KEY });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain(KEY);
    expect(r.stdout).toContain('intake_key: "[redacted]"');
    expect(r.stdout).toContain('url: https://intake.sekoia.io');
    expect(r.stdout).toContain('max_events: 100000');
    const again = parseConfig(r.stdout.replace('"[redacted]"', KEY), 'printed.yaml', {});
    expect(again.intakes[0]!.output).toMatchObject({ type: 'http', gzip: true, endpoint: 'https://intake.sekoia.io/jsons?path=%24.events&status_code=200' });
  });

  it('--print of a syslog output is loadable again too (no internal keys)', () => {
    const f = join(dir, 'print-syslog.yaml');
    writeFileSync(f, `intakes:\n  - name: fw\n    intake_key: \${K}\n    inputs: [{ type: tcp, port: 514 }]\n`);
    const r = runCliSync(['validate', '--print', '-c', f], { K: KEY });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/proofBytes|windowBytes|caPem|label:/);
    const again = parseConfig(r.stdout.replace('"[redacted]"', KEY), 'printed.yaml', {});
    expect(again.intakes[0]!.output).toMatchObject({ type: 'syslog', host: 'intake.sekoia.io', port: 10514, resend_window_bytes: 8388608, intake_receive_buffer_bytes: 'auto' });
  });

  it('--print of every input and listener type is loadable again, to the same configuration', () => {
    const f = join(dir, 'print-all.yaml');
    writeFileSync(f, `data_dir: ${dir}
intakes:
  - name: fw
    intake_key: \${K}
    inputs:
      - { type: udp, port: 514 }
      - { type: tcp, port: 6514, tls: { cert_file: ${TLS}server.crt, key_file: ${TLS}server.key } }
      - { type: file, paths: [${dir}/*.log], multiline: { start_pattern: "^\\\\d" } }
listeners:
  - { type: tcp, port: 1514, routes: [{ match: { app_name: x }, intake: fw }] }
  - { type: http, port: 8080, paths: [{ path: /in, intake: fw }] }
`);
    const r = runCliSync(['validate', '--print', '-c', f], { K: KEY });
    expect(r.code).toBe(0);
    const printed = join(dir, 'printed-all.yaml');
    writeFileSync(printed, r.stdout.replace('"[redacted]"', KEY));
    const again = parseConfig(readFileSync(printed), printed, {});
    const first = parseConfig(readFileSync(f, 'utf8').replace('\${K}', KEY), f, {});
    expect(JSON.stringify(again.intakes[0]!.inputs)).toBe(JSON.stringify(first.intakes[0]!.inputs));
    expect(JSON.stringify(again.listeners)).toBe(JSON.stringify(first.listeners));
  });

  it('exits 64 on a usage error', () => {
    expect(runCliSync(['frobnicate']).code).toBe(64);
    expect(runCliSync(['--version']).stdout).toMatch(/^intake-relay \d+\.\d+\.\d+/);
  });
});

describe('JSON Schema', () => {
  it('is generated from the zod schema and committed up to date (npm run docs)', () => {
    const committed = readFileSync(new URL('../../config/intake-relay.schema.json', import.meta.url), 'utf8');
    expect(committed).toBe(configJsonSchema());
    expect(JSON.parse(committed).properties.intakes.items.additionalProperties).toBe(false);
  });

  it('gives docs/reference/configuration.md its configuration reference, committed up to date (npm run docs)', () => {
    const page = readFileSync(new URL('../../docs/reference/configuration.md', import.meta.url), 'utf8');
    const reference = configReference(JSON.parse(configJsonSchema()));
    expect(page, 'stale: run npm run docs').toBe(configurationPage(configJsonSchema()));
    expect(page).toContain(reference);
    expect(reference).toContain('| `intakes[].queue.when_full` |');
    expect(reference).toContain('**`intakes[].inputs[]` with `type: tcp`**');
  });
});
