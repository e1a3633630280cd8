import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../src/core/rate-limiter.ts';
import { parseConfig } from '../../src/config/load.ts';
import { summarize } from '../../src/cli/summary.ts';
import { readFileSync } from 'node:fs';

describe('RateLimiter', () => {
  it('lets one line per key through per interval and reports how many it held back', () => {
    const r = new RateLimiter(1000);
    expect(r.allow('a', 0)).toBe(0);
    expect(r.allow('a', 10)).toBeUndefined();
    expect(r.allow('a', 20)).toBeUndefined();
    expect(r.allow('b', 30)).toBe(0);
    expect(r.allow('a', 1001)).toBe(2);
    expect(r.allow('a', 1002)).toBeUndefined();
  });
});

describe('the shipped config/intake-relay.yaml', () => {
  const text = readFileSync(new URL('../../config/intake-relay.yaml', import.meta.url), 'utf8');
  it('without INTAKE_KEY forwards to the local emulator, on loopback only', () => {
    const c = parseConfig(text, 'config/intake-relay.yaml', {});
    expect(c.intakes[0]).toMatchObject({ toEmulator: true });
    expect(c.intakes[0]!.inputs.map((i) => (i.type === 'file' ? i.label : `${i.type} ${i.address}:${i.port}`))).toEqual(['udp 127.0.0.1:1514', 'tcp 127.0.0.1:1514']);
    expect(summarize(c)).toContain('output: syslog over TLS to the local intake emulator (no key set)');
  });
  it('with INTAKE_KEY and REGION forwards to that region', () => {
    const c = parseConfig(text, 'config/intake-relay.yaml', { INTAKE_KEY: 'AbCdEfGh0123456789IjKlMnOpQrStUv', REGION: 'UAE1', LISTEN_ADDRESS: '0.0.0.0' });
    expect(c.intakes[0]).toMatchObject({ toEmulator: false, output: { host: 'intake.uae1.sekoia.io', port: 10514 } });
    expect(c.intakes[0]!.inputs[0]).toMatchObject({ address: '0.0.0.0' });
  });
});
