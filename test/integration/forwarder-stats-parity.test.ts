// The forwarder statistics beside the official forwarder's, record by record. The same intakes.yaml
// (test/fixtures/forwarder/stats-rsyslog: a TCP intake whose name has a space, a UDP intake and a
// statistics intake) through the rsyslog configuration the forwarder's own generator made from it
// (fixture files, run by the local rsyslogd with impstats every 2 s), and through intake-relay;
// the same traffic (100 events over TCP, 40 over UDP) to the same ports, one after the other.
// Compared: the record names, each record's fields, and the counters the traffic moves (summed
// over the reports: impstats resets them at each). Not compared: records of modules the relay
// does not have (imuxsock, imudp's worker, the empty dynstats and percentile globals, the IPv6
// socket of a UDP input bound to every address), and amounts that depend on timing or formatting
// (bytes.sent, size, maxqsize, resource-usage, the statistics queue's own counts).
import { createSocket } from 'node:dgram';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { freePort, sendTcp, startRsyslog, startTestIntake } from '../helpers/peers.ts';
import { startRelay, TLS } from '../helpers/relay.ts';
import { tempDir, track } from '../helpers/cleanup.ts';

const FIXTURE = new URL('../fixtures/forwarder/stats-rsyslog/', import.meta.url).pathname;
const KEYS = { web: 'AbCdEfGh0123456789IjKlMnOpQrSt', fw: 'ZyXwVuTs9876543210RqPoNmLkJiHg', stats: 'StAtSkEy0123456789FoRwArDeRlOg' };
type Rec = Record<string, unknown> & { name: string };

/** The generated configuration, made to run here: paths in `dir`, impstats every 2 s to a file, the intake on `intakePort`, the inputs on the given ports. Every name stays. */
function adapted(dir: string, ports: { web: number; fw: number; intake: number }): string {
  const conf = (f: string): string => readFileSync(join(FIXTURE, f), 'utf8');
  const outputs = (text: string): string => text
    .replaceAll('target="intake.sekoia.io"', 'target="127.0.0.1"')
    .replaceAll('port="10514"', `port="${ports.intake}"`)
    .replaceAll('StreamDriverPermittedPeers="intake.sekoia.io"', 'StreamDriverPermittedPeers="localhost"');
  const main = conf('rsyslog.conf')
    .replace('defaultNetstreamDriverCAFile="/SEKOIA-IO-intake.pem"', `defaultNetstreamDriverCAFile="${TLS}ca.crt"`)
    .replace(/\n\s*workDirectory="\/var\/spool\/rsyslog"/, '')
    .replace('log.file="/var/log/rsyslog-stats.log"', `log.file="${dir}/stats.log" interval="2"`)
    .replace('module(load="imuxsock")', `module(load="imuxsock" SysSock.Name="${dir}/dev-log")`)
    .replace(/module\(\s*load="builtin:omfile"[^)]*\)/s, '')
    .replace('include(file="/etc/rsyslog.d/*.conf")', readdirSync(join(FIXTURE, 'rsyslog.d')).sort().map((f) => outputs(conf(`rsyslog.d/${f}`))).join('\n'))
    .replace('include(file="/extended_conf/*.conf")', '');
  return main.replace('port="20516"', `port="${ports.web}"`).replace('port="20517"', `port="${ports.fw}"`);
}

/** impstats' log file: one record per line after `ctime(): `. */
function impstatsRecords(file: string): Rec[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l.slice(l.indexOf('{'))) as Rec);
}

async function traffic(ports: { web: number; fw: number }): Promise<void> {
  await sendTcp(ports.web, Array.from({ length: 100 }, (_, i) => `<14>Nov 28 10:00:00 host app: web ${i}\n`).join(''));
  const udp = createSocket('udp4');
  for (let i = 0; i < 40; i++) await new Promise<void>((resolve) => udp.send(`<14>Nov 28 10:00:00 host fw: fw ${i}`, ports.fw, '127.0.0.1', () => resolve()));
  udp.close();
}

const SKIPPED = (name: string): boolean => /^(imuxsock|imudp\(w\d+\)|global)$/.test(name) || name.endsWith('/IPv6)');
const RESETTABLE = ['submitted', 'processed', 'failed', 'suspended', 'resumed', 'enqueued', 'full', 'discarded.full', 'discarded.nf', 'disallowed'];

/** Each record name's fields, and its resettable counters summed over every report. */
function summary(records: Rec[]): Map<string, { fields: string[]; sums: Record<string, number> }> {
  const out = new Map<string, { fields: string[]; sums: Record<string, number> }>();
  for (const r of records) {
    if (SKIPPED(r.name)) continue;
    const s = out.get(r.name) ?? { fields: Object.keys(r).sort(), sums: {} };
    for (const f of RESETTABLE) if (typeof r[f] === 'number') s.sums[f] = (s.sums[f] ?? 0) + (r[f] as number);
    out.set(r.name, s);
  }
  return out;
}

describe('forwarder statistics beside the official forwarder\'s (rsyslog impstats)', () => {
  it('the same records, fields and counts for the same intakes.yaml and traffic', async () => {
    const dir = tempDir('stats-parity-');
    const intake = track(await startTestIntake());
    const ports = { web: await freePort(), fw: await freePort(), intake: intake.port };

    // The official forwarder's configuration, in rsyslog.
    mkdirSync(join(dir, 'rsyslog'));
    const rsyslog = startRsyslog(() => adapted(join(dir, 'rsyslog'), ports), join(dir, 'rsyslog'));
    await rsyslog.listening(ports.web);
    await traffic(ports);
    const statsFile = join(dir, 'rsyslog', 'stats.log');
    const moved = (recs: Rec[], name: string, field: string): number => recs.filter((r) => r.name === name).reduce((n, r) => n + Number(r[field] ?? 0), 0);
    await vi.waitFor(() => {
      const recs = impstatsRecords(statsFile);
      expect(moved(recs, 'output-web_proxies', 'processed')).toBe(100);
      expect(moved(recs, 'output-fw', 'processed')).toBe(40);
    }, { timeout: 20_000, interval: 200 });
    await rsyslog.stop();
    const theirs = impstatsRecords(statsFile);

    // The same intakes, in intake-relay, on the same ports.
    const output = `{ type: syslog, host: 127.0.0.1, port: ${ports.intake}, server_name: localhost, ca_file: ${TLS}ca.crt, resend_window_ms: 100 }`;
    const relay = track(await startRelay(`log_level: info
metrics: { enabled: false }
shutdown_timeout_ms: 2000
stats: { intake: Forwarder, interval_ms: 2000 }
intakes:
  - { name: Web Proxies, intake_key: ${KEYS.web}, inputs: [{ type: tcp, port: ${ports.web} }], output: ${output} }
  - { name: fw, intake_key: ${KEYS.fw}, inputs: [{ type: udp, port: ${ports.fw} }], output: ${output} }
  - { name: Forwarder, intake_key: ${KEYS.stats}, output: ${output} }
`));
    await traffic(ports);
    const ours = (): Rec[] => intake.received.filter((m) => m.intakeKey === KEYS.stats && m.appName === 'rsyslogd-pstats').map((m) => JSON.parse(m.message) as Rec);
    await vi.waitFor(() => {
      expect(moved(ours(), 'output-web_proxies', 'processed')).toBe(100);
      expect(moved(ours(), 'output-fw', 'processed')).toBe(40);
    }, { timeout: 20_000, interval: 200 });
    await relay.stop();

    const a = summary(theirs);
    const b = summary(ours());
    const rows = (m: typeof a): string[] => [...m].map(([name, s]) => `${name}: ${s.fields.join(',')}`);
    console.log(`rsyslog:\n  ${rows(a).join('\n  ')}\nintake-relay:\n  ${rows(b).join('\n  ')}`);
    // The same records, each with the same fields.
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    for (const [name, s] of a) expect(b.get(name)?.fields, name).toEqual(s.fields);
    // The same counts for the traffic.
    for (const [name, s] of a) {
      if (name === 'stats' || name === 'output-forwarder') continue; // the statistics themselves: as many as each sends
      expect(b.get(name)?.sums, name).toEqual(s.sums);
    }
    expect(a.get('input-web_proxies(' + ports.web + ')')?.sums.submitted).toBe(100);
    expect(a.get(`input-fw(*/${ports.fw}/IPv4)`)?.sums.submitted).toBe(40);
    expect(a.get('ruleset-web_proxies')?.sums.enqueued).toBe(100);
  }, 90_000);
});
