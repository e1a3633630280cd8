// The Debian package's maintainer scripts (deploy/debian/) on a machine that runs systemd, which the
// package test's `dpkg --root` install never is: each runs in a private mount namespace whose /run
// says systemd runs, whose /var/lib and /etc/systemd are empty tmpfs (the machine's stay untouched),
// with systemctl and deb-systemd-invoke replaced by recorders.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/cleanup.ts';

const SCRIPTS = new URL('../../deploy/debian/', import.meta.url).pathname;
const canUnshare = spawnSync('unshare', ['-m', 'true']).status === 0 && existsSync('/etc/systemd');

interface Outcome {
  /** The systemctl and deb-systemd-invoke calls, one a line. */
  readonly calls: string[];
  /** What `after` printed, inside the namespace. */
  readonly after: string;
}

function maintainerScript(script: string, args: string[], o: { systemd?: boolean; dpkgRoot?: string; before?: string; after?: string } = {}): Outcome {
  const dir = tempDir('maint-');
  const log = join(dir, 'calls');
  writeFileSync(log, '');
  for (const tool of ['systemctl', 'deb-systemd-invoke']) {
    writeFileSync(join(dir, tool), `#!/bin/sh\necho "${tool} $*" >> "${log}"\n`);
    chmodSync(join(dir, tool), 0o755);
  }
  const setup = [
    'set -e',
    'mount -t tmpfs none /run',
    o.systemd === false ? '' : 'mkdir -p /run/systemd/system',
    'mount -t tmpfs none /var/lib',
    'mount -t tmpfs none /etc/systemd',
    o.before ?? '',
    `sh "${join(SCRIPTS, script)}" "$@"`,
    o.after ?? '',
  ].filter(Boolean).join('\n');
  const env: NodeJS.ProcessEnv = { PATH: `${dir}:/usr/sbin:/usr/bin:/sbin:/bin`, ...(o.dpkgRoot === undefined ? {} : { DPKG_ROOT: o.dpkgRoot }) };
  const r = spawnSync('unshare', ['-m', 'sh', '-c', setup, 'sh', ...args], { encoding: 'utf8', env });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return { calls: readFileSync(log, 'utf8').split('\n').filter(Boolean), after: r.stdout };
}

describe.skipIf(!canUnshare)('maintainer scripts under systemd', () => {
  it('postinst reloads systemd on install, and also restarts the service on upgrade', () => {
    expect(maintainerScript('postinst', ['configure', '']).calls).toEqual(['systemctl --system daemon-reload']);
    expect(maintainerScript('postinst', ['configure', '0.0.9']).calls).toEqual([
      'systemctl --system daemon-reload',
      'deb-systemd-invoke try-restart intake-relay.service',
    ]);
  });

  it('postinst leaves systemd alone under dpkg --root, and where systemd does not run', () => {
    expect(maintainerScript('postinst', ['configure', '0.0.9'], { dpkgRoot: '/srv/root' }).calls).toEqual([]);
    expect(maintainerScript('postinst', ['configure', '0.0.9'], { systemd: false }).calls).toEqual([]);
  });

  it('prerm stops the service on remove, not on upgrade', () => {
    expect(maintainerScript('prerm', ['remove']).calls).toEqual(['deb-systemd-invoke stop intake-relay.service']);
    expect(maintainerScript('prerm', ['upgrade', '0.2.0']).calls).toEqual([]);
  });

  const state = [
    'mkdir -p /var/lib/private/intake-relay/queues /etc/systemd/system/multi-user.target.wants',
    'ln -s private/intake-relay /var/lib/intake-relay',
    'echo queued > /var/lib/intake-relay/queues/segment-1',
    'ln -s /lib/systemd/system/intake-relay.service /etc/systemd/system/multi-user.target.wants/intake-relay.service',
  ].join('\n');
  const listing = 'find /var/lib /etc/systemd -mindepth 1 | sort';

  it('postrm remove keeps the state and the enablement; purge deletes them', () => {
    const removed = maintainerScript('postrm', ['remove'], { before: state, after: listing });
    expect(removed.calls).toEqual(['systemctl --system daemon-reload']);
    expect(removed.after.split('\n')).toEqual(expect.arrayContaining(['/var/lib/intake-relay', '/var/lib/private/intake-relay/queues/segment-1', '/etc/systemd/system/multi-user.target.wants/intake-relay.service']));
    const purged = maintainerScript('postrm', ['purge'], { before: state, after: listing });
    expect(purged.calls).toEqual(['systemctl --system daemon-reload']);
    expect(purged.after.split('\n').filter(Boolean)).toEqual(['/etc/systemd/system', '/etc/systemd/system/multi-user.target.wants', '/var/lib/private']);
  });
});
