// The shipped systemd unit passes systemd-analyze verify (with stand-ins for the installed paths).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('deploy/intake-relay.service', () => {
  it('passes systemd-analyze verify', () => {
    const dir = mkdtempSync(join(tmpdir(), 'unit-'));
    // verify checks that ExecStart binaries exist: point them at a stand-in (the real executable, at
    // the path the unit names: test/integration/packaging-binary.test.ts).
    const exe = join(dir, 'intake-relay');
    writeFileSync(exe, '#!/bin/sh\nexit 0\n');
    chmodSync(exe, 0o755);
    const unit = readFileSync(new URL('../../deploy/intake-relay.service', import.meta.url), 'utf8').replaceAll('/usr/local/bin/intake-relay', exe);
    const file = join(dir, 'intake-relay.service');
    writeFileSync(file, unit);
    const r = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
    if (r.error) throw new Error('systemd-analyze is not installed: run scripts/install-test-peers.sh');
    expect(r.stderr.trim()).toBe('');
    expect(r.status).toBe(0);
  });

  it('gives SIGTERM longer than the default drain timeout, and keeps config errors from looping', () => {
    const unit = readFileSync(new URL('../../deploy/intake-relay.service', import.meta.url), 'utf8');
    expect(Number(/TimeoutStopSec=(\d+)s/.exec(unit)?.[1])).toBeGreaterThan(30);
    expect(unit).toContain('RestartPreventExitStatus=78 73');
    expect(unit).toMatch(/CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n/);
  });
});

describe('deploy examples', () => {
  it('are valid YAML, and the sidecar configuration is a valid intake-relay configuration', async () => {
    const { parseAllDocuments } = await import('yaml');
    const { parseConfig } = await import('../../src/config/load.ts');
    for (const f of ['docker-compose.yml', 'kubernetes/sidecar.yaml', 'kubernetes/collector.yaml']) {
      const docs = parseAllDocuments(readFileSync(new URL(`../../deploy/${f}`, import.meta.url), 'utf8'));
      for (const d of Array.isArray(docs) ? docs : [docs]) expect(d.errors, f).toEqual([]);
    }
    const sidecar = readFileSync(new URL('../../deploy/sidecar.yaml', import.meta.url), 'utf8');
    const c = parseConfig(sidecar, 'deploy/sidecar.yaml', { INTAKE_KEY: 'AbC123' });
    expect(c.intakes[0]!.inputs.every((i) => i.type === 'file' || i.address === '127.0.0.1')).toBe(true);
    const collector = parseConfig(readFileSync(new URL('../../deploy/collector.yaml', import.meta.url), 'utf8'), 'deploy/collector.yaml', { FIREWALL_KEY: 'AbC123', PROXY_KEY: 'DeF456' });
    expect(collector.intakes.map((i) => [i.queue.type, i.queue.type === 'disk' ? i.queue.path : ''])).toEqual([
      ['disk', '/var/lib/intake-relay/queues/firewalls'],
      ['disk', '/var/lib/intake-relay/queues/proxies'],
    ]);
  });
});
