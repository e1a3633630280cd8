// `intake-relay top` in a real terminal (tmux) against a relay process under a steady load, and an
// intake that goes down for 20 s and comes back: the screen shows the rates, the queue filling and
// the output retrying, then the backlog draining with a time left, then done; q quits with the
// terminal restored. The log says the same: a backlog building, draining with its time left, and
// delivered, and no more often than its rate limit. --once --json agrees with /metrics.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { startHttpIntake } from '../helpers/http-intake.ts';
import { freePort, sendTcp } from '../helpers/peers.ts';
import { MAIN, runCli, startRelayProcess } from '../helpers/process.ts';
import { TEST_KEY, TLS } from '../helpers/relay.ts';
import { tempDir, track } from '../helpers/cleanup.ts';

const OUTAGE_MS = 20_000;

/** A tmux server of its own with one 80-column window running `command`. */
function terminal(command: string): { screen(): string; keys(k: string): void; stop(): void } {
  const socket = `top-test-${process.pid}`;
  const tmux = (...args: string[]): string => {
    const r = spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`tmux ${args[0]}: ${r.stderr}`);
    return r.stdout;
  };
  tmux('new-session', '-d', '-s', 'top', '-x', '80', '-y', '40', command);
  return {
    screen: () => tmux('capture-pane', '-p', '-t', 'top'),
    keys: (k) => void tmux('send-keys', '-t', 'top', k),
    stop: () => void spawnSync('tmux', ['-L', socket, 'kill-server']),
  };
}

/** The intake's row of the screen: output state, in/s, out/s, queued, fill, oldest, backlog, drops/s. */
function row(screen: string, name: string): { state: string; in: string; out: string; queued: number; backlog: string } | undefined {
  const line = screen.split('\n').find((l) => l.slice(2).startsWith(`${name} `));
  if (!line) return undefined;
  const m = /^[> ] (\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$/.exec(line.trimEnd());
  if (!m) return undefined;
  return { state: m[2] as string, in: m[3] as string, out: m[4] as string, queued: Number((m[5] as string).replace(/,/g, '').replace(/k$/, '000')), backlog: m[8] as string };
}

describe('intake-relay top and the backlog log', () => {
  it('an intake down for 20 s under a steady load: top shows rates, the queue filling, the output retrying, the backlog draining with a time left, then done; q restores the terminal', async () => {
    const dir = tempDir('top-');
    let down = false;
    // 50 events a request, one request at a time, each answered after 100 ms: it drains at a few
    // hundred events a second, above the load (150/s), so the backlog takes seconds to drain.
    const intake = track(await startHttpIntake(() => (down ? { reset: true } : { status: 200, delayMs: 100 })));
    const [inPort, opsPort] = [await freePort(), await freePort()];
    const file = join(dir, 'relay.yaml');
    writeFileSync(file, `log_level: info
metrics: { enabled: true, address: 127.0.0.1, port: ${opsPort} }
shutdown_timeout_ms: 2000
intakes:
  - name: web
    intake_key: ${TEST_KEY}
    inputs: [{ type: tcp, name: in, address: 127.0.0.1, port: ${inPort} }]
    output: { type: http, url: ${intake.url}, ca_file: ${TLS}ca.crt, proxy: none, concurrency: 1, backoff: { initial_ms: 200, max_ms: 1000 } }
    batch: { max_events: 50, linger_ms: 20 }
`);
    const relay = startRelayProcess(file);
    await vi.waitFor(() => sendTcp(inPort, ''), { timeout: 20_000, interval: 100 });

    // The load: 30 events every 200 ms on one connection.
    let sent = 0;
    const sock: Socket = connect(inPort, '127.0.0.1');
    await new Promise((resolve) => sock.once('connect', resolve));
    const load = setInterval(() => {
      let chunk = '';
      for (let i = 0; i < 30; i++) chunk += `<14>Nov 23 10:00:00 host app: top ${String(sent++).padStart(7, '0')}\n`;
      sock.write(chunk);
    }, 200);
    const tty = terminal(`${process.execPath} ${MAIN} top -c ${file}; echo EXITED $?; sleep 120`);
    track({ stop: async () => tty.stop() });
    try {
      // Running: events in and out, the output connected.
      await vi.waitFor(() => {
        const r = row(tty.screen(), 'web');
        expect(r?.state).toBe('connected');
        expect(Number(r?.in.replace(/,/g, ''))).toBeGreaterThan(0);
        expect(Number(r?.out.replace(/,/g, ''))).toBeGreaterThan(0);
      }, { timeout: 20_000, interval: 250 });
      expect(tty.screen()).toMatch(/INPUT\s+INTAKE\s+CONNS\s+EVENTS\/s/);
      expect(tty.screen()).toMatch(/^\s+in\s+web\s+1\s/m);
      expect(tty.screen()).toContain('THREADS  main');

      // Down: the output retries, the queue fills, a backlog is growing.
      down = true;
      const outageAt = Date.now();
      await vi.waitFor(() => {
        const r = row(tty.screen(), 'web');
        expect(r?.state).toBe('retrying');
        expect(r?.queued).toBeGreaterThan(1_000);
        expect(r?.backlog).toBe('growing');
      }, { timeout: OUTAGE_MS, interval: 250 });
      expect(tty.screen()).toMatch(/backlog: [\d,]+ events, growing/);
      expect(tty.screen()).toMatch(/last error: .*127\.0\.0\.1/);
      await new Promise((r) => setTimeout(r, Math.max(0, outageAt + OUTAGE_MS - Date.now())));

      // Back: the backlog drains with a time left, then it is done.
      down = false;
      const etas: string[] = [];
      await vi.waitFor(() => {
        const r = row(tty.screen(), 'web');
        if (r?.backlog.startsWith('~')) etas.push(r.backlog);
        expect(etas.length).toBeGreaterThan(0);
      }, { timeout: 30_000, interval: 200 });
      expect(tty.screen()).toMatch(/backlog: [\d,]+ events, draining at [\d,]+\/s: about \d+ (s|min)/);
      await vi.waitFor(() => {
        const r = row(tty.screen(), 'web');
        expect(r?.state).toBe('connected');
        expect(r?.backlog).toBe('-');
      }, { timeout: 60_000, interval: 250 });

      // The load stops; every event arrives.
      clearInterval(load);
      await new Promise<void>((resolve) => sock.end(resolve));
      await vi.waitFor(() => expect(new Set(intake.accepted).size).toBe(sent), { timeout: 30_000, interval: 200 });

      // q: top ends, the terminal is the shell's again.
      tty.keys('q');
      await vi.waitFor(() => expect(tty.screen()).toContain('EXITED 0'), { timeout: 10_000, interval: 100 });
      expect(tty.screen()).not.toContain('INTAKE');

      // --once --json: the counters /metrics gives, at rest.
      const once = await runCli(['top', '--once', '--json', '-c', file]);
      expect(once.code, once.out).toBe(0);
      const snap = JSON.parse(once.stdout) as { intakes: { name: string; received: number; sent: number; queued_events: number; dropped: object; backlog: unknown }[] };
      const metrics = await (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text();
      const value = (name: string): number => Number(new RegExp(`^${name}\\{[^}]*intake="web"[^}]*\\} (\\d+)`, 'm').exec(metrics)?.[1]);
      const web = snap.intakes.find((i) => i.name === 'web');
      expect(web).toMatchObject({ received: sent, sent, queued_events: 0, dropped: {}, backlog: null });
      expect(web?.received).toBe(value('intake_relay_events_received_total'));
      expect(web?.sent).toBe(value('intake_relay_events_sent_total'));
      // Text, once, without a terminal.
      const text = await runCli(['top', '--once', '-c', file]);
      expect(text.code).toBe(0);
      expect(row(text.stdout, 'web')?.state).toBe('connected');
    } finally {
      clearInterval(load);
      sock.destroy();
      relay.proc.kill('SIGTERM');
      await relay.exited;
    }

    // The log: building, draining with a time left, delivered; at most one line per 30 s, or per 5 s at a change of course.
    const lines = relay.out.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const progress = lines.filter((l) => l.intake === 'web' && typeof l.msg === 'string' && /^(A backlog is building|Backlog )/.test(l.msg));
    const building = progress.find((l) => String(l.msg).startsWith('A backlog is building'));
    const draining = progress.find((l) => / draining at .* left\.$/.test(String(l.msg)));
    const done = progress.find((l) => String(l.msg).startsWith('Backlog delivered'));
    expect(building?.backlog_events, JSON.stringify(progress)).toBeGreaterThanOrEqual(1_000);
    expect(draining, JSON.stringify(progress)).toMatchObject({ eta_seconds: expect.any(Number), drain_per_s: expect.any(Number) });
    expect(Number(draining?.drain_per_s)).toBeGreaterThan(0);
    expect(Number(draining?.eta_seconds)).toBeGreaterThan(0);
    expect(Number(done?.peak_events)).toBeGreaterThanOrEqual(Number(building?.backlog_events));
    expect(Number(done?.seconds)).toBeGreaterThanOrEqual(OUTAGE_MS / 1000 - 10);
    expect(progress.indexOf(building!)).toBeLessThan(progress.indexOf(draining!));
    expect(progress.at(-1)).toBe(done);
    const times = progress.map((l) => Date.parse(String(l.time)));
    for (let i = 1; i < times.length; i++) expect((times[i] as number) - (times[i - 1] as number)).toBeGreaterThanOrEqual(4_000);
    // In a 20 s outage: the building line, no repeat.
    expect(progress.filter((l) => Date.parse(String(l.time)) < Date.parse(String(draining?.time)) && l !== building)).toEqual([]);
    expect(relay.out.stdout).not.toMatch(/"stack"/);
  }, 180_000);

  it('--once when the relay is not running: one line naming where it looked, exit 1', async () => {
    const dir = tempDir('top-');
    const file = join(dir, 'relay.yaml');
    const port = await freePort();
    writeFileSync(file, `metrics: { enabled: true, address: 127.0.0.1, port: ${port} }
intakes:
  - { name: web, intake_key: ${TEST_KEY}, inputs: [{ type: tcp, port: 0 }] }
`);
    const r = await runCli(['top', '--once', '-c', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`cannot reach the relay at http://127.0.0.1:${port}: ECONNREFUSED`);
  });
});
