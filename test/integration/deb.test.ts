// The Debian package as a user gets it: the single executable built by `npm run package`, the .deb
// built from it by `npm run deb`, then installed with `dpkg --root` into a temporary root with its own
// dpkg database (never the machine's), run from there with no Node on PATH, its unit verified, its
// man page and completion used, and removed and purged.
import { execFileSync, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { debianVersion } from '../../scripts/deb/control.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** Node 24 (the one running the tests) first, for npm's scripts. */
const PATH24 = `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/usr/sbin:/bin:/sbin`;
const CONFIG = '/etc/intake-relay/intake-relay.yaml';
const ENV_FILE = '/etc/intake-relay/intake-relay.env';

let dir: string;
let deb: string;
/** The temporary root dpkg installs into. */
let root: string;

function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = { PATH: PATH24 }, input?: Buffer): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env, input, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  if (r.error) throw new Error(`${cmd} could not run (scripts/install-test-peers.sh installs it): ${r.error.message}`);
  return r;
}

/**
 * dpkg on the temporary root; scripts run outside a chroot (the root has no shell) with $DPKG_ROOT
 * set. Container images' dpkg configuration drops /usr/share/man and doc: the test needs them.
 */
function dpkg(...args: string[]): SpawnSyncReturns<string> {
  return run('dpkg', [`--root=${root}`, '--force-script-chrootless', '--path-include=*', ...args]);
}

function ok(r: SpawnSyncReturns<string>): string {
  expect(r.stderr, r.stdout).toBe('');
  expect(r.status).toBe(0);
  return r.stdout;
}

/** The packages a Depends field names, without versions or alternatives. */
const dependsNames = (depends: string): string[] => depends.split(',').map((d) => d.trim().split(/[\s(|]/)[0]!);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'deb-package-'));
  const build = join(dir, 'build');
  const env = { ...process.env, PATH: PATH24, npm_config_update_notifier: 'false' };
  // Its own output directory: another test may be building build/ meanwhile.
  execFileSync('npm', ['run', '--silent', 'package', '--', '--arch', process.arch, '--out', build], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  // gzip: xz (the default) takes a minute on a 2-core machine for the same package.
  const out = execFileSync('npm', ['run', '--silent', 'deb', '--', '--binary', join(build, `intake-relay-linux-${process.arch}`), '--out', dir, '--compression', 'gzip'], { cwd: ROOT, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  deb = out.trim().split('\n').pop()!;

  // A private dpkg database. The libraries the binary depends on are taken from the machine's, so
  // that dpkg checks the package's Depends against what this Debian really has.
  root = join(dir, 'root');
  const admin = join(root, 'var/lib/dpkg');
  for (const d of ['info', 'updates']) mkdirSync(join(admin, d), { recursive: true });
  const names = new Set(dependsNames(ok(run('dpkg-deb', ['--field', deb, 'Depends']))));
  const stanzas = readFileSync('/var/lib/dpkg/status', 'utf8').split('\n\n').filter((s) => {
    const name = /^Package: (\S+)$/m.exec(s)?.[1];
    return name !== undefined && names.has(name) && /^Status: install ok installed$/m.test(s) && !/^Architecture: (?!all|amd64|arm64)/m.test(s);
  });
  writeFileSync(join(admin, 'status'), `${stanzas.join('\n\n')}\n\n`);
  for (const s of stanzas) {
    const name = /^Package: (\S+)$/m.exec(s)![1]!;
    const arch = /^Architecture: (\S+)$/m.exec(s)?.[1];
    writeFileSync(join(admin, 'info', `${name}${arch && arch !== 'all' ? `:${arch}` : ''}.list`), '');
  }
}, 300_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('Debian package', () => {
  it('is named for its version and architecture, and declares what it needs', () => {
    const arch = process.arch === 'x64' ? 'amd64' : 'arm64';
    expect(deb).toBe(join(dir, `intake-relay_${debianVersion(VERSION)}_${arch}.deb`));
    const field = (name: string): string => ok(run('dpkg-deb', ['--field', deb, name])).trim();
    expect(field('Package')).toBe('intake-relay');
    expect(field('Version')).toBe(debianVersion(VERSION));
    expect(field('Architecture')).toBe(arch);
    expect(field('Maintainer')).toMatch(/^.+ <[^>]+@[^>]+>$/);
    // Every library the binary loads belongs to a package it depends on.
    const depends = dependsNames(field('Depends'));
    expect(depends).toContain('libc6');
    const extracted = join(dir, 'extracted');
    ok(run('dpkg-deb', ['-x', deb, extracted]));
    const libs = [...ok(run('ldd', [join(extracted, 'usr/bin/intake-relay')])).matchAll(/=> (\/\S+)/g)].map((m) => realpathSync(m[1]!));
    expect(libs.length).toBeGreaterThan(0);
    for (const lib of libs) {
      // usrmerge: dpkg knows a library under /lib or /usr/lib, whichever its package ships.
      const owner = [lib, lib.replace(/^\/usr/, '')].map((p) => run('dpkg-query', ['-S', p])).find((r) => r.status === 0);
      expect(owner, lib).toBeDefined();
      expect(depends, lib).toContain(owner!.stdout.split(':')[0]);
    }
  });

  it('holds the binary, unit, sample configuration, man page, completion, copyright and changelog, with their modes', () => {
    const listing = ok(run('dpkg-deb', ['--contents', deb]));
    const files = new Map(listing.trim().split('\n').map((l) => {
      const [mode, owner, , , , path] = l.split(/\s+/);
      return [path!.replace(/^\./, ''), `${mode} ${owner}`];
    }));
    expect(Object.fromEntries([...files].filter(([p]) => !p.endsWith('/')))).toEqual({
      '/usr/bin/intake-relay': '-rwxr-xr-x root/root',
      '/lib/systemd/system/intake-relay.service': '-rw-r--r-- root/root',
      [CONFIG]: '-rw-r--r-- root/root',
      [ENV_FILE]: '-rw------- root/root',
      '/usr/share/man/man1/intake-relay.1.gz': '-rw-r--r-- root/root',
      '/usr/share/bash-completion/completions/intake-relay': '-rw-r--r-- root/root',
      '/usr/share/doc/intake-relay/copyright': '-rw-r--r-- root/root',
      '/usr/share/doc/intake-relay/README.md.gz': '-rw-r--r-- root/root',
      '/usr/share/doc/intake-relay/changelog.gz': '-rw-r--r-- root/root',
      '/usr/share/lintian/overrides/intake-relay': '-rw-r--r-- root/root',
    });
    for (const [path, mode] of files) if (path.endsWith('/')) expect(mode, path).toBe('drwxr-xr-x root/root');
    const control = join(dir, 'control');
    ok(run('dpkg-deb', ['--control', deb, control]));
    expect(readFileSync(join(control, 'conffiles'), 'utf8')).toBe(`${CONFIG}\n${ENV_FILE}\n`);
    expect(readdirSync(control).sort()).toEqual(['conffiles', 'control', 'md5sums', 'postinst', 'postrm', 'prerm']);
    const info = ok(run('dpkg-deb', ['--info', deb]));
    for (const script of ['postinst', 'prerm', 'postrm']) expect(info).toMatch(new RegExp(`\\d+ lines\\s+\\*\\s+${script}\\s+#!/bin/sh`));
    const copyright = readFileSync(join(dir, 'extracted/usr/share/doc/intake-relay/copyright'), 'utf8');
    expect(copyright).toMatch(/^Files: \*\nCopyright: .+\nLicense: Apache-2\.0$/m);
    // The notices of what the binary bundles (MIT requires them with every copy).
    for (const bundled of ['undici', 'pino', 'yaml', 'zod', 'Node.js']) expect(copyright).toContain(` ${bundled} `);
  });

  it('holds a changelog for its version that dpkg reads, compressed as policy and lintian want, dated by the commit', () => {
    // Extracted by the test above.
    const file = join(dir, 'extracted/usr/share/doc/intake-relay/changelog.gz');
    const gz = readFileSync(file);
    // The gzip header (RFC 1952): no file name and no time (gzip -n: reproducible), and XFL 2,
    // "maximum compression" (gzip -9: lintian's changelog-not-compressed-with-max-compression).
    expect([gz[0], gz[1]]).toEqual([0x1f, 0x8b]);
    expect(gz[3]! & 0x08).toBe(0);
    expect(gz.readUInt32LE(4)).toBe(0);
    expect(gz[8]).toBe(2);
    const fields = ok(run('dpkg-parsechangelog', ['-l', '-', '--format', 'dpkg'], { PATH: PATH24 }, gunzipSync(gz)));
    const field = (name: string): string | undefined => new RegExp(`^${name}: (.*)$`, 'm').exec(fields)?.[1];
    expect(field('Source')).toBe('intake-relay');
    expect(field('Version')).toBe(debianVersion(VERSION));
    expect(field('Distribution')).toBe('unstable');
    expect(field('Maintainer')).toBe(ok(run('dpkg-deb', ['--field', deb, 'Maintainer'])).trim());
    // The package's build time is its commit's (scripts/deb.ts), so that a rebuild gives the same bytes.
    const epoch = process.env.SOURCE_DATE_EPOCH || execFileSync('git', ['log', '-1', '--format=%ct'], { cwd: ROOT, encoding: 'utf8' }).trim();
    expect(field('Timestamp')).toBe(epoch);
  });

  it('installs with dpkg into a temporary root; the binary runs there with no Node on PATH', () => {
    const r = dpkg('--install', deb);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(ok(run('dpkg-query', [`--admindir=${root}/var/lib/dpkg`, '--show', '--showformat=${Status}', 'intake-relay']))).toBe('install ok installed');
    // Every installed file is the one the package holds.
    ok(dpkg('--verify', 'intake-relay'));
    const path = join(root, 'usr/bin');
    expect(readdirSync(path)).toEqual(['intake-relay']);
    const v = run('intake-relay', ['--version'], { PATH: path });
    expect(v.stderr).toBe('');
    expect(v.stdout).toMatch(new RegExp(`^intake-relay ${VERSION.replaceAll('.', '\\.')} \\(commit \\w+, Node\\.js v24\\.\\d+\\.\\d+, single executable\\)\\n$`));
    expect(v.status).toBe(0);
  });

  it('installs a unit that systemd-analyze verify accepts, with the hardening and the restart policy', () => {
    const unit = readFileSync(join(root, 'lib/systemd/system/intake-relay.service'), 'utf8');
    for (const line of [
      `ExecStartPre=/usr/bin/intake-relay validate -c ${CONFIG}`,
      `ExecStart=/usr/bin/intake-relay run -c ${CONFIG}`,
      'ExecReload=/bin/kill -HUP $MAINPID',
      'DynamicUser=yes',
      'StateDirectory=intake-relay',
      'ConfigurationDirectory=intake-relay',
      `EnvironmentFile=-${ENV_FILE}`,
      'RestartPreventExitStatus=78 73',
      // Without a key the service refuses, whatever the configuration's emulator default.
      'Environment=INTAKE_RELAY_EMULATOR=never',
      'ProtectSystem=strict',
      'NoNewPrivileges=yes',
      'CapabilityBoundingSet=CAP_NET_BIND_SERVICE',
      'SystemCallFilter=@system-service',
      'Documentation=man:intake-relay(1)',
    ]) expect(unit.split('\n')).toContain(line);
    expect(unit).not.toMatch(/\/usr\/bin\/node|\/opt\/intake-relay/);
    // verify checks that the programs exist (here, under the temporary root) and that the man page
    // Documentation= names is found (MANPATH: the installed one).
    const file = join(dir, 'intake-relay.service');
    writeFileSync(file, unit.replaceAll('/usr/bin/intake-relay', join(root, 'usr/bin/intake-relay')));
    ok(run('systemd-analyze', ['verify', file], { PATH: PATH24, MANPATH: join(root, 'usr/share/man') }));
  });

  it('installs a sample configuration that is valid once INTAKE_KEY is set, and refused without it', () => {
    const binary = join(root, 'usr/bin/intake-relay');
    const config = join(root, CONFIG);
    const valid = run(binary, ['validate', '-c', config], { PATH: '/nonexistent', INTAKE_KEY: 'AbC123dEf456' });
    expect(valid.stderr).toBe('');
    expect(valid.stdout).toContain(`${config}: valid`);
    expect(valid.stdout).toContain('key: set (12 characters');
    expect(valid.status).toBe(0);
    // The key is in the environment file, commented out until the user sets it.
    expect(readFileSync(join(root, ENV_FILE), 'utf8')).toMatch(/^#INTAKE_KEY=/m);
    // The service's environment (the unit sets INTAKE_RELAY_EMULATOR=never): refused, saying both ways out.
    const refused = run(binary, ['validate', '-c', config], { PATH: '/nonexistent', INTAKE_RELAY_EMULATOR: 'never' });
    expect(refused.stderr).toContain('INTAKE_KEY is not set or empty): set it, or INTAKE_RELAY_EMULATOR=no_intake_key');
    expect(refused.status).toBe(78);
    // The switch the env file offers sends the intake to the local emulator instead.
    expect(readFileSync(join(root, ENV_FILE), 'utf8')).toMatch(/^#INTAKE_RELAY_EMULATOR=no_intake_key$/m);
    const trial = run(binary, ['validate', '-c', config], { PATH: '/nonexistent', INTAKE_RELAY_EMULATOR: 'no_intake_key' });
    expect(trial.stdout).toMatch(/emulator/i);
    expect(trial.status).toBe(0);
  });

  it('installs a man page that man renders without a warning', () => {
    const r = run('man', ['--warnings=all', '-l', join(root, 'usr/share/man/man1/intake-relay.1.gz')], { PATH: PATH24, LANG: 'C.UTF-8', MANWIDTH: '100', MANPAGER: 'cat', PAGER: 'cat' });
    const page = ok(r);
    expect(page).toMatch(/^NAME\n\s+intake-relay - forwards syslog/m);
    for (const text of ['rules push [-c FILE]', '-c, --config FILE', 'intakes[].inputs[].port (integer 0..65535; required)', 'intakes[].queue with type: disk', 'EXIT STATUS', '78', `intake-relay ${VERSION}`]) {
      expect(page).toContain(text);
    }
    // No Markdown code or roff escape left unrendered.
    expect(page).not.toMatch(/`|\\f|\\e/);
  });

  it('installs bash completion for the subcommands and their options', () => {
    const completion = join(root, 'usr/share/bash-completion/completions/intake-relay');
    const complete = (line: string): string[] => {
      const script = `source "$1"; spec=$(complete -p intake-relay) || exit 3; fn=\${spec#*-F }; fn=\${fn%% *}
read -ra COMP_WORDS <<<"$2"; [[ $2 == *' ' ]] && COMP_WORDS+=(''); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1))
"$fn"; printf '%s\\n' "\${COMPREPLY[@]}"`;
      const r = run('bash', ['--norc', '--noprofile', '-c', script, 'bash', completion, line], { PATH: PATH24 });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      return r.stdout.split('\n').filter(Boolean);
    };
    // Every command src/main.ts dispatches.
    const dispatched = [...readFileSync(join(ROOT, 'src/main.ts'), 'utf8').matchAll(/^\s*case '([a-z][\w-]*)':/gm)].map((m) => m[1]!);
    expect(dispatched).toContain('validate');
    expect(complete('intake-relay ').sort()).toEqual(dispatched.sort());
    expect(complete('intake-relay va')).toEqual(['validate']);
    expect(complete('intake-relay rules ')).toEqual(['push']);
    expect(complete('intake-relay rules push --d')).toEqual(['--dry-run']);
    expect(complete('intake-relay run --')).toEqual(['--config', '--watch-config', '--help']);
    expect(complete('intake-relay -c /etc/x validate --')).toEqual(['--config', '--print', '--help']);
    // A file after -c.
    expect(complete(`intake-relay validate -c ${join(root, 'etc/intake-relay/intake-relay.y')}`)).toEqual([join(root, CONFIG)]);
  });

  it('keeps edited configuration on reinstall and remove, and the state on remove; purge deletes both', () => {
    appendFileSync(join(root, CONFIG), '# edited by the operator\n');
    appendFileSync(join(root, ENV_FILE), 'INTAKE_KEY=AbC123dEf456\n');
    // The state as systemd lays it out for DynamicUser: a link to /var/lib/private.
    const state = join(root, 'var/lib/private/intake-relay');
    mkdirSync(join(state, 'queues'), { recursive: true });
    writeFileSync(join(state, 'queues/segment-1'), 'queued');
    execFileSync('ln', ['-s', 'private/intake-relay', join(root, 'var/lib/intake-relay')]);

    // Reinstalling (as an upgrade does) keeps the edits and asks nothing: the package's copy did not change.
    const again = dpkg('--install', deb);
    expect(again.stderr).toBe('');
    expect(again.status).toBe(0);
    expect(readFileSync(join(root, CONFIG), 'utf8')).toContain('# edited by the operator');

    ok(dpkg('--remove', 'intake-relay'));
    expect(existsSync(join(root, 'usr/bin/intake-relay'))).toBe(false);
    expect(existsSync(join(root, 'lib/systemd/system/intake-relay.service'))).toBe(false);
    expect(readFileSync(join(root, CONFIG), 'utf8')).toContain('# edited by the operator');
    expect(readFileSync(join(root, ENV_FILE), 'utf8')).toContain('INTAKE_KEY=AbC123dEf456');
    expect(readFileSync(join(root, 'var/lib/intake-relay/queues/segment-1'), 'utf8')).toBe('queued');

    ok(dpkg('--purge', 'intake-relay'));
    expect(existsSync(join(root, 'etc/intake-relay'))).toBe(false);
    expect(existsSync(join(root, 'var/lib/intake-relay'))).toBe(false);
    expect(existsSync(state)).toBe(false);
    expect(run('dpkg-query', [`--admindir=${root}/var/lib/dpkg`, '--show', 'intake-relay']).status).not.toBe(0);
  });
});
