// The official forwarder's environment on its intakes.yaml: REGION (OTHER with ENDPOINT), ENDPOINT,
// RELP_OUTPUT, DISK_SPACE and MEMORY_MESSAGES, each applied or a problem naming the variable.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/load.ts';
import { parseSize } from '../../src/config/legacy-env.ts';
import type { Config } from '../../src/config/resolve.ts';
import { summarize } from '../../src/cli/summary.ts';
import { runCliSync } from '../helpers/process.ts';

const KEY = 'AbCdEfGh0123456789IjKlMnOpQrStUv';
const GiB = 1024 ** 3;
const dir = mkdtempSync(join(tmpdir(), 'legacy-env-'));
const state = join(dir, 'state');

const INTAKES = `---
intakes:
- name: Techno1
  protocol: tcp
  port: 20516
  intake_key: ${KEY}
- name: Techno2
  protocol: udp
  port: 20517
  intake_key: ${KEY}
- name: Techno3
  protocol: tcp
  port: 20518
  intake_key: ${KEY}
  queue_size: 5000
- name: Monitoring
  stats: true
  intake_key: ${KEY}
`;

/** Loads INTAKES with `env`; disk queues (the default) under a writable STATE_DIRECTORY unless `env` says otherwise. */
function load(env: NodeJS.ProcessEnv): Config {
  return parseConfig(INTAKES, 'intakes.yaml', { STATE_DIRECTORY: state, ...env });
}

function problems(env: NodeJS.ProcessEnv): string[] {
  try {
    load(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const p of err.problems) expect(p).not.toContain(KEY);
      return [...err.problems];
    }
    throw err;
  }
  throw new Error('expected a configuration error');
}

const outputs = (c: Config) => c.intakes.map((i) => ({ type: i.output.type, host: 'host' in i.output ? i.output.host : '', port: 'port' in i.output ? i.output.port : 0 }));

describe('REGION and ENDPOINT', () => {
  it('REGION=OTHER sends syslog to ENDPOINT (default port 10514), and takes https://ENDPOINT as the HTTP intake', () => {
    const c = load({ REGION: 'OTHER', ENDPOINT: 'localhost', DISK_SPACE: '0' });
    expect(c.region).toBe('fra1');
    expect(c.endpoints).toEqual({ syslog_host: 'localhost', relp_host: 'localhost', http_url: 'https://localhost' });
    expect(outputs(c)).toEqual(Array(4).fill({ type: 'syslog', host: 'localhost', port: 10514 }));
    expect(c.warnings).toEqual([]);
    expect(summarize(c)).toContain('region: fra1 (intake host set by endpoints: localhost)');
  });

  it('REGION=other with a port, and with a bracketed IPv6 address', () => {
    expect(outputs(load({ REGION: 'other', ENDPOINT: 'relay.example:6514', DISK_SPACE: '0' }))[0]).toEqual({ type: 'syslog', host: 'relay.example', port: 6514 });
    const v6 = load({ REGION: 'Other', ENDPOINT: '[::1]:6514', DISK_SPACE: '0' });
    expect(outputs(v6)[0]).toEqual({ type: 'syslog', host: '::1', port: 6514 });
    expect(v6.endpoints.http_url).toBe('https://[::1]');
  });

  it('REGION=OTHER with a region\'s own intake host is that region (its HTTP and API endpoints too)', () => {
    const c = load({ REGION: 'OTHER', ENDPOINT: 'intake.sgp1.sekoia.io', DISK_SPACE: '0' });
    expect(c.region).toBe('sgp1');
    expect(c.endpoints).toEqual({});
    expect(outputs(c)[0]).toEqual({ type: 'syslog', host: 'intake.sgp1.sekoia.io', port: 10514 });
  });

  it('REGION=OTHER without ENDPOINT is an error naming ENDPOINT', () => {
    expect(problems({ REGION: 'OTHER' })).toEqual([
      'intakes.yaml: environment ENDPOINT: not set, and REGION=OTHER needs it: the intake host, as host or host:port (e.g. ENDPOINT=intake.sgp1.sekoia.io)',
    ]);
    expect(problems({ REGION: 'other', ENDPOINT: '' })).toHaveLength(1);
  });

  it('region names in any case; an unknown one is an error', () => {
    expect(load({ REGION: 'uSa1', DISK_SPACE: '0' }).region).toBe('usa1');
    expect(outputs(load({ REGION: 'uSa1', DISK_SPACE: '0' }))[0]).toEqual({ type: 'syslog', host: 'intake.usa1.sekoia.io', port: 10514 });
    expect(problems({ REGION: 'sgp2' })).toEqual(['intakes.yaml: environment REGION: unknown region "sgp2": expected one of fra1, fra2, mco1, uae1, usa1, sgp1, or OTHER with ENDPOINT']);
  });

  it.each(['https://intake.example', 'intake.example/path', 'intake.example:0', 'intake.example:65536', 'intake.example:', 'two words', '[::1', '[intake.example]:1', '-intake.example', 'intake.example\nREGION=fra1'])(
    'ENDPOINT=%j is an error naming ENDPOINT',
    (endpoint) => {
      expect(problems({ REGION: 'OTHER', ENDPOINT: endpoint, DISK_SPACE: '0' })).toEqual([
        `intakes.yaml: environment ENDPOINT: ${JSON.stringify(endpoint)} is not a host or host:port (e.g. intake.sgp1.sekoia.io or relay.example:10514; no scheme, no path)`,
      ]);
    },
  );
});

describe('RELP_OUTPUT', () => {
  it('any value makes every output RELP to the region\'s intake host on 11514', () => {
    const c = load({ REGION: 'fra2', RELP_OUTPUT: 'True', DISK_SPACE: '0' });
    expect(outputs(c)).toEqual(Array(4).fill({ type: 'relp', host: 'intake.fra2.sekoia.io', port: 11514 }));
    expect(c.warnings).toEqual([]);
  });

  it('with ENDPOINT, RELP goes to ENDPOINT, and its port is the RELP port', () => {
    expect(outputs(load({ REGION: 'OTHER', ENDPOINT: 'relay.example', RELP_OUTPUT: '1', DISK_SPACE: '0' }))[0]).toEqual({ type: 'relp', host: 'relay.example', port: 11514 });
    const c = load({ REGION: 'OTHER', ENDPOINT: 'relay.example:2514', RELP_OUTPUT: '1', DISK_SPACE: '0' });
    expect(outputs(c)[0]).toEqual({ type: 'relp', host: 'relay.example', port: 2514 });
    expect(c.endpoints).toEqual({ syslog_host: 'relay.example', relp_host: 'relay.example', relp_port: 2514, http_url: 'https://relay.example' });
  });

  it('empty is unset; "false" still switches to RELP, as with the forwarder, with a warning', () => {
    expect(outputs(load({ RELP_OUTPUT: '', DISK_SPACE: '0' }))[0]?.type).toBe('syslog');
    const c = load({ RELP_OUTPUT: 'false', DISK_SPACE: '0' });
    expect(outputs(c)[0]?.type).toBe('relp');
    expect(c.warnings).toEqual(['environment RELP_OUTPUT="false": any value that is set switches every output to RELP, as with the official forwarder; unset RELP_OUTPUT to keep syslog.']);
  });
});

describe('DISK_SPACE', () => {
  it('unset: the forwarder\'s 32g, split over the intakes that receive, in <data dir>/queues', () => {
    const c = load({});
    expect(c.intakes.map((i) => [i.name, i.queue.type, i.queue.max_bytes, i.queue.type === 'disk' ? i.queue.path : ''])).toEqual([
      ['Techno1', 'disk', Math.floor((32 * GiB) / 3), join(state, 'queues', 'Techno1')],
      ['Techno2', 'disk', Math.floor((32 * GiB) / 3), join(state, 'queues', 'Techno2')],
      ['Techno3', 'disk', Math.floor((32 * GiB) / 3), join(state, 'queues', 'Techno3')],
      // The statistics intake receives nothing from outside: a memory queue, a quarter of its share
      // of the default memory_bytes (128 MiB less the runtime's 32, over 4 intakes).
      ['Monitoring', 'memory', 6 * 1024 * 1024, ''],
    ]);
  });

  it('a set size is split the same way; 0 keeps memory queues', () => {
    expect(load({ DISK_SPACE: '3g' }).intakes.map((i) => i.queue.max_bytes).slice(0, 3)).toEqual([GiB, GiB, GiB]);
    expect(load({ DISK_SPACE: '0' }).intakes.map((i) => i.queue.type)).toEqual(['memory', 'memory', 'memory', 'memory']);
  });

  it.each([
    ['32g', 32 * GiB], ['32G', 32 * GiB], ['32gb', 32 * GiB], ['32 GB', 32 * GiB], ['512m', 512 * 1024 ** 2], ['512MB', 512 * 1024 ** 2],
    ['2048k', 2048 * 1024], ['1t', 1024 ** 4], ['1Tb', 1024 ** 4], ['1048576', 1048576], ['1048576b', 1048576], ['0', 0],
  ])('%j is %d bytes', (s, bytes) => {
    expect(parseSize(s)).toBe(bytes);
  });

  it.each(['32x', '1.5g', '-1g', 'g', '32gib', '32 g b', 'lots', '99999999999t'])('DISK_SPACE=%j is an error naming DISK_SPACE', (v) => {
    expect(problems({ DISK_SPACE: v })).toEqual([
      `intakes.yaml: environment DISK_SPACE: "${v}" is not a size: a whole number with k, m, g or t (KiB to TiB, "b" optional, any case), e.g. 32g; 0 for memory queues only`,
    ]);
  });

  it('a share under 1 MiB per intake is an error', () => {
    expect(problems({ DISK_SPACE: '2m' })).toEqual(['intakes.yaml: environment DISK_SPACE: "2m" over 3 intakes is under 1 MiB each: give at least 3m, or 0 for memory queues only']);
  });

  it('a data directory that cannot be created is an error naming DISK_SPACE, with the default or a set size', () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    expect(problems({ STATE_DIRECTORY: join(file, 'state') })).toEqual([
      `intakes.yaml: environment DISK_SPACE: the disk queues (32g, the official forwarder's default) go to ${join(file, 'state', 'queues')}, but ${file} is not a directory: set STATE_DIRECTORY to a writable directory, or DISK_SPACE=0 for memory queues only`,
    ]);
    expect(problems({ STATE_DIRECTORY: join(file, 'state'), DISK_SPACE: '8g' })[0]).toContain('environment DISK_SPACE: the disk queues (8g) go to');
    // Memory queues need no directory.
    expect(load({ STATE_DIRECTORY: join(file, 'state'), DISK_SPACE: '0' }).intakes[0]?.queue.type).toBe('memory');
  });

  it.skipIf(process.getuid?.() === 0)('a data directory without write permission is an error naming DISK_SPACE (not as root)', () => {
    const ro = join(dir, 'read-only');
    mkdirSync(ro);
    chmodSync(ro, 0o555);
    expect(problems({ STATE_DIRECTORY: join(ro, 'state') })).toEqual([
      `intakes.yaml: environment DISK_SPACE: the disk queues (32g, the official forwarder's default) go to ${join(ro, 'state', 'queues')}, which cannot be created: ${ro} is not writable (EACCES): set STATE_DIRECTORY to a writable directory, or DISK_SPACE=0 for memory queues only`,
    ]);
  });

  it('more than the file system has free is a warning, not silent', () => {
    const c = load({ DISK_SPACE: '1000t' });
    expect(c.warnings).toHaveLength(1);
    expect(c.warnings[0]).toMatch(new RegExp(`^environment DISK_SPACE: the disk queues \\(1000t\\) go to ${join(state, 'queues')}, whose file system has [\\d.]+ GiB free: they count as full once the disk is\\. Set DISK_SPACE to what this disk can spare\\.$`));
  });
});

describe('MEMORY_MESSAGES', () => {
  it('is split over the receiving intakes, and the byte limit grows with the count (2 KiB a message)', () => {
    const c = load({ MEMORY_MESSAGES: '300000', DISK_SPACE: '0' });
    expect(c.intakes.map((i) => (i.queue.type === 'memory' ? [i.queue.max_events, i.queue.max_bytes] : []))).toEqual([
      [100_000, 100_000 * 2048],
      [100_000, 100_000 * 2048],
      // queue_size wins, and scales the bytes the same way.
      [5_000, 5_000 * 2048],
      [100_000, 100_000 * 2048],
    ]);
  });

  it('with disk queues, sizes their memory stage', () => {
    const c = load({ MEMORY_MESSAGES: '30000', DISK_SPACE: '3g' });
    expect(c.intakes.map((i) => (i.queue.type === 'disk' ? [i.queue.memory_events, i.queue.memory_bytes, i.queue.max_bytes] : [i.queue.type]))).toEqual([
      [10_000, 10_000 * 2048, GiB],
      [10_000, 10_000 * 2048, GiB],
      [5_000, 5_000 * 2048, GiB],
      ['memory'],
    ]);
  });

  it.each(['1e5', '0', '-5', '100k', 'lots', '1000000001', '2.5'])('MEMORY_MESSAGES=%j is an error naming MEMORY_MESSAGES', (v) => {
    expect(problems({ MEMORY_MESSAGES: v, DISK_SPACE: '0' })).toEqual([`intakes.yaml: environment MEMORY_MESSAGES: "${v}" is not a whole number of messages from 1 to 1000000000`]);
  });
});

describe('intake-relay validate on intakes.yaml', () => {
  const file = join(dir, 'intakes.yaml');
  writeFileSync(file, INTAKES);

  it('every bad variable at once, exit 78', () => {
    const r = runCliSync(['validate', '-c', file], { REGION: 'OTHER', ENDPOINT: 'https://x', RELP_OUTPUT: '1', DISK_SPACE: 'big', MEMORY_MESSAGES: 'many', STATE_DIRECTORY: state });
    expect(r.code).toBe(78);
    for (const v of ['ENDPOINT', 'DISK_SPACE', 'MEMORY_MESSAGES']) expect(r.stderr).toContain(`${file}: environment ${v}: `);
    expect(r.stdout + r.stderr).not.toContain(KEY);
  });

  it('--print shows the effective result, keys redacted', () => {
    const r = runCliSync(['validate', '--print', '-c', file], { REGION: 'OTHER', ENDPOINT: 'relay.example:2514', RELP_OUTPUT: '1', DISK_SPACE: '3g', MEMORY_MESSAGES: '30000', STATE_DIRECTORY: state });
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).not.toContain(KEY);
    expect(r.stdout).toContain('intake_key: "[redacted]"');
    const again = parseConfig(r.stdout.replaceAll('"[redacted]"', KEY), 'printed.yaml', {});
    expect(again.endpoints).toEqual({ syslog_host: 'relay.example', relp_host: 'relay.example', relp_port: 2514, http_url: 'https://relay.example' });
    expect(outputs(again)[0]).toEqual({ type: 'relp', host: 'relay.example', port: 2514 });
    expect(again.intakes[0]?.queue).toMatchObject({ type: 'disk', max_bytes: GiB, memory_events: 10_000, path: join(state, 'queues', 'Techno1') });
  });
});

describe('METRICS_ADDRESS and METRICS_PORT', () => {
  it('set the metrics server of an intakes.yaml (which has no metrics section), for run and for healthcheck/tap', async () => {
    const c = load({ METRICS_ADDRESS: '0.0.0.0', METRICS_PORT: '19750' });
    expect([c.metrics.address, c.metrics.port]).toEqual(['0.0.0.0', 19750]);
    const { loadMetricsSettings } = await import('../../src/config/load.ts');
    const file = join(dir, 'intakes-metrics.yaml');
    writeFileSync(file, INTAKES);
    const m = loadMetricsSettings(file, { METRICS_ADDRESS: '::', METRICS_PORT: '9999' });
    expect([m.address, m.port]).toEqual(['::', 9999]);
    expect(loadMetricsSettings(file, {}).port).toBe(9750);
  });

  it('a bad value is an error naming the variable', () => {
    expect(problems({ METRICS_PORT: '70000' }).join('\n')).toMatch(/environment METRICS_PORT: "70000" is not a port from 1 to 65535/);
    expect(problems({ METRICS_ADDRESS: 'http://x/' }).join('\n')).toMatch(/environment METRICS_ADDRESS: .* is not an address/);
  });
});
