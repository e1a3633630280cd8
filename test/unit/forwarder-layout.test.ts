// The official forwarder's container layout (config/forwarder-layout.ts), its extended_conf recipe
// translated into shared listeners (config/extended-conf.ts), and the privilege steps of a start as
// root (platform/privileges.ts): ownership of the relay's own state only, private copies of the TLS
// files its user cannot read, and the drop, checked in a child process.
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';
import { translateExtendedConf } from '../../src/config/extended-conf.ts';
import { forwarderLayout } from '../../src/config/forwarder-layout.ts';
import { parseRunAs, privateCopy, takeOwnership } from '../../src/platform/privileges.ts';
import { compileRoutes } from '../../src/routing/router.ts';
import type { RouteConfig } from '../../src/routing/schema.ts';
import { parseSyslog } from '../../src/syslog/parse.ts';
import { tempDir } from '../helpers/cleanup.ts';

const FIXTURES = new URL('../fixtures/forwarder/', import.meta.url).pathname;
const TLS = new URL('../fixtures/tls/', import.meta.url).pathname;
const ROOT_RUNS = process.getuid?.() === 0;
const USER = { uid: 10001, gid: 10001 };

describe('the official forwarder\'s layout', () => {
  it('applies in the image (auto) when /intakes.yaml is there and no configuration was given', () => {
    const root = tempDir('layout-');
    const env = { INTAKE_RELAY_FORWARDER_LAYOUT: 'auto' };
    expect(forwarderLayout(env, false, root)).toBeUndefined();
    writeFileSync(join(root, 'intakes.yaml'), 'intakes: []\n');
    expect(forwarderLayout(env, false, root)).toMatchObject({ config: join(root, 'intakes.yaml'), env: {} });
    mkdirSync(join(root, 'var/spool/rsyslog'), { recursive: true });
    mkdirSync(join(root, 'certs'));
    mkdirSync(join(root, 'extended_conf'));
    const l = forwarderLayout(env, false, root)!;
    expect(l.env).toEqual({ STATE_DIRECTORY: join(root, 'var/spool/rsyslog'), CERTS_DIR: join(root, 'certs') });
    expect(l.extendedConf).toBe(join(root, 'extended_conf'));
    expect(l.found).toHaveLength(3);
    // A configuration given wins, and so do the variables the user set; outside the image, nothing.
    expect(forwarderLayout(env, true, root)).toBeUndefined();
    expect(forwarderLayout({ ...env, INTAKE_RELAY_CONFIG: '/etc/x.yaml' }, false, root)).toBeUndefined();
    expect(forwarderLayout({ ...env, STATE_DIRECTORY: '/data' }, false, root)!.env).not.toHaveProperty('STATE_DIRECTORY');
    expect(forwarderLayout({}, false, root)).toBeUndefined();
  });
});

describe('extended_conf', () => {
  const [conf] = translateExtendedConf(FIXTURES);

  it('translates the documented port-514 recipe into shared listeners with routes, keys left in the file', () => {
    expect(conf).toMatchObject({ file: 'port514.conf', untranslated: [] });
    expect(conf!.keys.map((k) => [k.intake, k.variable, k.template])).toEqual([
      ['paloalto', 'PALOALTO_INTAKE_KEY', 'Tmpl_PaloAlto'],
      ['ciscoasa', 'CISCOASA_INTAKE_KEY', 'Tmpl_CiscoASA'],
      ['catchall', 'CATCHALL_INTAKE_KEY', 'Tmpl_CatchAll'],
      ['ciscoswitch', 'CISCOSWITCH_INTAKE_KEY', 'Tmpl_CiscoSwitch'],
    ]);
    // The keys in the file are never written out.
    expect(conf!.equivalent).not.toMatch(/Key0000/);
  });

  it('is a valid configuration that routes as the rsyslog rules did', () => {
    const env = Object.fromEntries(conf!.keys.map((k, i) => [k.variable, `ExtendedConfKey${String(i).padStart(17, '0')}`]));
    const c = parseConfig(`metrics: { enabled: false }\n${conf!.equivalent!}`, 'port514', env);
    expect(c.listeners.map((l) => [l.type, l.port])).toEqual([['tcp', 514], ['udp', 514]]);
    const names = c.intakes.map((i) => i.name);
    type Routed = { readonly routes: RouteConfig[]; readonly default: string };
    const to = (l: (typeof c.listeners)[number], line: string, sender: string): string => {
      const { router } = compileRoutes((l as unknown as Routed).routes, (l as unknown as Routed).default, (n) => names.indexOf(n));
      const b = Buffer.from(line);
      return names[router.route(parseSyslog(b, 0, b.length, 0, sender, { pri: 13, hostname: '', appName: '', procId: '' }))] ?? 'none';
    };
    const [tcp, udp] = c.listeners as [(typeof c.listeners)[number], (typeof c.listeners)[number]];
    expect(to(tcp, '<14>Nov 28 10:00:00 pa-fw1 PAN: traffic', '192.168.10.5')).toBe('paloalto');
    expect(to(tcp, '<166>Nov 28 10:00:00 asa1 %ASA-4-106023: Deny tcp', '192.168.10.9')).toBe('ciscoasa');
    expect(to(tcp, '<14>Nov 28 10:00:00 other app: x', '192.168.10.9')).toBe('catchall');
    expect(to(udp, '<14>Nov 28 10:00:00 sw-core-1 LINK: up', '10.0.0.2')).toBe('ciscoswitch');
    expect(to(udp, '<14>Nov 28 10:00:00 router-1 LINK: up', '10.0.0.2')).toBe('catchall');
  });

  it('lists what it does not translate, by line, rather than dropping it', () => {
    const dir = tempDir('extended-');
    writeFileSync(join(dir, 'a.conf'), [
      'template(name="T" type="string" string="<%pri%>1 [SEKOIA@53288 intake_key=\\"K\\"] %msg%")',
      '$ActionQueueType LinkedList',
      'input(type="imtcp" port="1514" ruleset="r")',
      'ruleset(name="r") {',
      '  if ($fromhost-ip startswith "10.") or ($hostname isequal "h") then { action(type="omfwd" Template="T") stop }',
      '  if $programname isequal "app" then { action(type="omfwd" Template="T") }',
      '  action(type="omfwd" Template="T")',
      '}',
    ].join('\n'));
    writeFileSync(join(dir, 'b.conf'), 'module(load="imfile")\ninput(type="imfile" File="/var/log/x.log" Tag="x")\n');
    writeFileSync(join(dir, 'ignored.txt'), 'not a .conf');
    const [a, b] = translateExtendedConf(dir);
    expect(a!.untranslated).toEqual([
      'line 2: $ActionQueueType LinkedList',
      'line 5: an if with "or" (write one route per alternative)',
      'line 6: an if without "stop" (rsyslog goes on to the next rules; a route stops at the first match)',
    ]);
    expect(a!.equivalent).toContain('- { match: { app_name: app }, intake: t }');
    expect(b).toMatchObject({ file: 'b.conf', untranslated: ['line 2: input(type="imfile") without a ruleset in this file'] });
    expect(b!.equivalent).toBeUndefined();
  });
});

describe('a start as root', () => {
  it('reads INTAKE_RELAY_USER as a numeric uid:gid, never root', () => {
    expect(parseRunAs('10001:10001')).toEqual(USER);
    expect(parseRunAs('2000')).toEqual({ uid: 2000, gid: 2000 });
    expect(parseRunAs('')).toBeUndefined();
    expect(() => parseRunAs('relay')).toThrow(/numeric uid:gid/);
    expect(() => parseRunAs('0:0')).toThrow(/root/);
  });

  it.runIf(ROOT_RUNS)('gives the user its own state in a root-owned directory, and nothing else there', () => {
    const spool = tempDir('spool-');
    // What the official forwarder left there: rsyslog's own queue files, root's.
    writeFileSync(join(spool, 'sekoia_techno1_queue.00000001'), 'rsyslog');
    mkdirSync(join(spool, 'queues/old'), { recursive: true });
    writeFileSync(join(spool, 'queues/old/segment'), 'x');
    const changed = takeOwnership([{ dir: spool, ours: ['files', 'queues', 'intake-relay.lock'] }, { dir: join(spool, 'queues/techno1') }], USER);
    const owner = (p: string): number => statSync(join(spool, p)).uid;
    expect([owner(''), owner('queues'), owner('queues/old/segment'), owner('queues/techno1')]).toEqual([10001, 10001, 10001, 10001]);
    expect(owner('sekoia_techno1_queue.00000001')).toBe(0);
    expect(changed).toContain(spool);
    expect(takeOwnership([{ dir: spool, ours: ['files', 'queues', 'intake-relay.lock'] }, { dir: join(spool, 'queues/techno1') }], USER)).toEqual([]);
    // A queue directory made inside data_dir by this very call is the user's too, parents included.
    const fresh = tempDir('spool-');
    takeOwnership([{ dir: fresh, ours: ['files', 'queues', 'intake-relay.lock'] }, { dir: join(fresh, 'queues/techno2') }], USER);
    expect([statSync(join(fresh, 'queues')).uid, statSync(join(fresh, 'queues/techno2')).uid]).toEqual([10001, 10001]);
  });

  it.runIf(ROOT_RUNS)('copies the TLS files the user cannot read into a private directory; none when it can read them all', () => {
    const certs = tempDir('certs-');
    cpSync(`${TLS}server.crt`, join(certs, 'server.crt'));
    cpSync(`${TLS}server.key`, join(certs, 'server.key'));
    chmodSync(join(certs, 'server.crt'), 0o644);
    chmodSync(join(certs, 'server.key'), 0o644);
    chownSync(certs, 0, 0);
    const into = join(tempDir('private-'), 'certs');
    expect(privateCopy(certs, into, USER)).toBeUndefined();
    chmodSync(join(certs, 'server.key'), 0o600);
    const copy = privateCopy(certs, into, USER)!;
    expect(copy).toEqual({ dir: into, copied: ['server.key'] });
    expect(statSync(into).mode & 0o777).toBe(0o700);
    expect(statSync(join(into, 'server.key'))).toMatchObject({ uid: 10001, gid: 10001 });
    expect(readFileSync(join(into, 'server.key'), 'utf8')).toBe(readFileSync(`${TLS}server.key`, 'utf8'));
  });

  it.runIf(ROOT_RUNS)('drops to the user for good, every thread, no other group', () => {
    const script = `import { dropTo } from ${JSON.stringify(new URL('../../src/platform/privileges.ts', import.meta.url).pathname)};
import { Worker } from 'node:worker_threads';
dropTo({ uid: 10001, gid: 10001 });
const w = new Worker('process.stdout.write(String(process.getuid()))', { eval: true });
w.on('exit', () => { console.log(' ' + process.getuid() + ' ' + process.getegid() + ' ' + process.getgroups().join(',')); try { process.setuid(0); console.log('regained'); } catch { console.log('final'); } });`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n')).toEqual(['10001 10001 10001 10001', 'final']);
  });
});
