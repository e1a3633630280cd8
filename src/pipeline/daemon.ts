// Builds one pipeline per intake (inputs -> bounded queue -> runner -> sink) from a frozen config,
// starts them outputs first, and stops them in order under one deadline: inputs stop accepting,
// queues drain into the outputs, outputs close, and what could not be delivered is reported.
// A reload (SIGHUP) applies a new config to the running daemon: intakes added, removed (their
// queues drained first) and changed (filters and limits in place; a new output takes over the
// queue and the old one's unacknowledged writes), and only inputs and listeners that changed are
// closed and opened again.

import { hostname } from 'node:os';
import type { RouteConfig } from '../routing/schema.ts';
import type { Logger } from 'pino';
import type { Config, ResolvedIntake } from '../config/resolve.ts';
import type { ResolvedInput } from '../inputs/registry.ts';
import type { ResolvedTcp } from '../inputs/tcp/definition.ts';
import type { ResolvedUdp } from '../inputs/udp/definition.ts';

type ResolvedSyslogInput = ResolvedTcp | ResolvedUdp;
type ResolvedSyslogListener = ResolvedSyslogInput & { readonly routes: RouteConfig[]; readonly default: string };
import { FilterSet } from '../routing/filters.ts';
import { compileRoutes } from '../routing/router.ts';
import { DiskQueue } from '../core/disk-queue.ts';
import { BoundedQueue, type EventQueue } from '../core/queue.ts';
import { RateLimiter } from '../core/rate-limiter.ts';
import { SinkRunner } from '../core/runner.ts';
import { EMULATOR_DEMO_KEY, IntakeEmulator, maskKey } from '../emulator/intake-emulator.ts';
import { outputOf } from '../outputs/registry.ts';
import { emulatorOutput, syslogOutput } from '../outputs/syslog/definition.ts';
import type { Sink } from '../core/contracts.ts';
import type { InputContext, Target } from '../inputs/event-builder.ts';
import type { HeaderDefaults } from '../syslog/parse.ts';
import { FileInput } from '../inputs/file/tail.ts';
import { HttpReceiver, type HttpTarget } from '../inputs/http/receiver.ts';
import { TcpSyslogInput } from '../inputs/tcp/input.ts';
import { UdpSyslogInput } from '../inputs/udp/input.ts';
import { OpsServer, type HealthSource, type IntakeHealth, type ListenerHealth } from '../telemetry/ops-server.ts';
import { ForwarderStats } from '../inputs/forwarder-stats.ts';
import { Metrics } from '../telemetry/metrics.ts';
import { httpInputTelemetry } from './http-instruments.ts';
import { intakeInstruments, outputTelemetry } from './instruments.ts';

interface Input {
  readonly label: string;
  /** Its configuration as JSON: a reload keeps the input when this is unchanged. */
  readonly key: string;
  /** Listening port; 0 for inputs that do not listen. */
  readonly port: number;
  /** Where it reads from, for the start-up log. */
  readonly where: string;
  start(): Promise<void>;
  /** Stop taking in events. */
  stop(): Promise<void>;
  /** After the outputs have drained (file inputs save their checkpoints). */
  finish?(): Promise<void>;
  /** Stops reporting its metrics (it is gone for good). */
  dispose?(): void;
}

interface Pipeline {
  intake: ResolvedIntake;
  readonly queue: EventQueue;
  runner: SinkRunner;
  sink: Sink;
  readonly target: Target;
  inputs: Input[];
  /** Removes the pipeline's metric probes. */
  readonly dispose: () => void;
}

interface SharedListener {
  readonly input: Input;
  readonly ctx: InputContext;
}

export interface ReloadReport {
  readonly added: string[];
  readonly removed: string[];
  readonly changed: string[];
  /** Inputs and listeners closed and opened again (their configuration changed). */
  readonly restarted: string[];
  /** Settings a reload cannot change (a restart applies them). */
  readonly notApplied: string[];
  /** Inputs or listeners that could not start. */
  readonly failed: string[];
}

const json = (v: unknown): string => JSON.stringify(v);
/** What a new output (runner + sink) is needed for. */
const outputKey = (i: ResolvedIntake): string => json([i.intakeKey, i.output, i.batch, i.toEmulator]);

export interface StopReport {
  readonly undelivered: number;
  readonly perIntake: Record<string, number>;
}

export class Daemon implements HealthSource {
  #config: Config;
  readonly metrics: Metrics;
  readonly #log: Logger;
  #pipelines: Pipeline[] = [];
  #listeners: HttpReceiver[] = [];
  #shared: SharedListener[] = [];
  /** Removed intakes' queues draining, and outputs let go by a reload finishing, in the background. */
  readonly #retiring = new Set<Promise<unknown>>();
  /** Disk queues of removed intakes still draining, by directory: a queue re-added there waits for them. */
  readonly #drainingDisks = new Map<string, Promise<unknown>>();
  #reloading: Promise<unknown> = Promise.resolve();
  #emulator: IntakeEmulator | undefined;
  #ops: OpsServer | undefined;
  #stats: ForwarderStats | undefined;
  #phase: HealthSource['phase'] = 'starting';
  #stopping: Promise<StopReport> | undefined;

  constructor(config: Config, log: Logger, metrics = new Metrics()) {
    this.#config = config;
    this.#log = log;
    this.metrics = metrics;
  }

  /** The configuration in force (the last one a reload applied). */
  get config(): Config {
    return this.#config;
  }

  get phase(): HealthSource['phase'] {
    return this.#phase;
  }
  get emulatorPort(): number | undefined {
    return this.#emulator?.port;
  }
  get opsPort(): number | undefined {
    return this.#ops?.port;
  }
  /** Listening port of a shared listener, by label. */
  listenerPort(label: string): number | undefined {
    return [...this.#shared.map((s) => s.input), ...this.#listeners].find((l) => l.label === label)?.port;
  }
  /** Listening port of an input (resolves port 0), for tests and messages. */
  inputPort(intake: string, label: string): number | undefined {
    return this.#pipelines.find((p) => p.intake.name === intake)?.inputs.find((i) => i.label === label)?.port;
  }

  async start(): Promise<void> {
    const cfg = this.config;
    for (const w of cfg.warnings) this.#log.warn(w);
    try {
      await this.#startEmulator(cfg);
      for (const intake of cfg.intakes) this.#pipelines.push(this.#build(intake));
      for (const p of this.#pipelines) await p.runner.start();
      for (const p of this.#pipelines) for (const input of p.inputs) await input.start();
      for (const l of cfg.listeners) {
        if (l.type === 'http') continue;
        const shared = this.#sharedListener(l);
        this.#shared.push(shared);
        await shared.input.start();
      }
      for (const l of cfg.listeners) {
        if (l.type !== 'http') continue;
        const receiver = new HttpReceiver(l, this.#httpTargets(), httpInputTelemetry(this.metrics, this.#log, l.label));
        this.#listeners.push(receiver);
        await receiver.start();
      }
      if (cfg.metrics.enabled) {
        this.#ops = new OpsServer(this.metrics.registry, this);
        await this.#ops.start(cfg.metrics.address, cfg.metrics.port);
      }
      this.#startStats(cfg);
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.#phase = 'running';
    this.#log.info(
      {
        intakes: this.#pipelines.map((p) => ({
          name: p.intake.name,
          inputs: p.inputs.map((i) => `${i.label} ${i.where}`),
          output: p.intake.toEmulator ? `emulator 127.0.0.1:${this.#emulator?.port}` : `${p.intake.output.type} ${outputOf(p.intake.output).where(p.intake.output)}`,
        })),
        listeners: cfg.listeners.map((l) => `${l.label} on port ${this.listenerPort(l.label)}`),
        metrics: this.#ops ? `http://${cfg.metrics.address}:${this.#ops.port}/metrics` : 'disabled',
      },
      'intake-relay started.',
    );
  }

  async #startEmulator(cfg: Config): Promise<void> {
    if (this.#emulator || !cfg.intakes.some((i) => i.toEmulator)) return;
    this.#emulator = new IntakeEmulator({
      port: cfg.emulator.port,
      onMessage: (m) =>
        m.problems.length === 0
          ? this.#log.info({ emulator: true, message: maskKey(m.raw) }, 'Emulator received a valid message.')
          : this.#log.warn({ emulator: true, message: maskKey(m.raw), problems: m.problems }, 'Emulator received a message the intake would refuse.'),
      onProtocolError: (msg) => this.#log.error({ emulator: true }, msg),
    });
    await this.#emulator.start();
    this.#log.warn(
      { intakes: cfg.intakes.filter((i) => i.toEmulator).map((i) => i.name), emulator: `127.0.0.1:${this.#emulator.port}` },
      'No intake key set: forwarding to the local intake emulator. Set the key (e.g. INTAKE_KEY) to forward to the platform.',
    );
  }

  /** Forwarder statistics to the intake `stats.intake` names, if set. */
  #startStats(cfg: Config): void {
    this.#stats?.stop();
    this.#stats = undefined;
    if (!cfg.stats) return;
    const view = {
      intakes: () => this.#pipelines.map((p) => ({
        name: p.intake.name,
        queue: p.queue,
        inputs: p.inputs.map((i) => ({ label: i.label, type: p.intake.inputs.find((c) => c.label === i.label)?.type ?? '', port: i.port })),
      })),
    };
    this.#stats = new ForwarderStats(this.metrics, view, cfg.stats.intake, cfg.stats.interval_ms);
    this.#stats.start();
  }

  /** The output of an intake: a sink and the runner that feeds it from `queue`. */
  #output(intake: ResolvedIntake, queue: EventQueue): SinkRunner {
    const emulator = intake.toEmulator ? this.#emulator : undefined;
    const o = intake.output;
    const def = outputOf(o);
    const instruments = intakeInstruments(this.metrics, intake.name);
    const sink = emulator
      ? syslogOutput.create(emulatorOutput(emulator.port, emulator.caPem), { intake: intake.name, intakeKey: EMULATOR_DEMO_KEY, instruments })
      : def.create(o, { intake: intake.name, intakeKey: intake.intakeKey, instruments });
    this.metrics.configInfo.set({ intake: intake.name, output: sink.type }, 1);
    return new SinkRunner({
      intake: intake.name,
      queue,
      sink,
      batch: { maxEvents: intake.batch.max_events, maxBytes: intake.batch.max_bytes, lingerMs: intake.batch.linger_ms },
      backoff: def.backoff(o),
      maxRetries: def.maxRetries(o),
      telemetry: outputTelemetry(this.metrics, this.#log, intake.name, sink.type),
    });
  }

  /** An intake's pipeline; its inputs are made too unless `withInputs` is false (a reload makes them later). */
  #build(intake: ResolvedIntake, withInputs = true): Pipeline {
    const m = this.metrics;
    const queue = intake.queue.type === 'disk' ? this.#diskQueue(intake) : new BoundedQueue({ maxEvents: intake.queue.max_events, maxBytes: intake.queue.max_bytes, whenFull: intake.queue.when_full });
    const runner = this.#output(intake, queue);
    const gauges = {
      events: m.queueEvents.labels({ intake: intake.name }),
      bytes: m.queueBytes.labels({ intake: intake.name }),
      unacked: m.unackedEvents.labels({ intake: intake.name }),
    };
    const target: Target = { intake: intake.name, queue, filters: new FilterSet(intake.filters) };
    const p: Pipeline = {
      intake, queue, runner, sink: runner.sink, target, inputs: [],
      dispose: m.addProbe(() => {
        gauges.events.set(queue.pendingEvents);
        gauges.bytes.set(queue.pendingBytes);
        gauges.unacked.set(p.sink.unacknowledged);
      }),
    };
    if (withInputs) p.inputs = intake.inputs.map((input) => this.#input(intake, input, target));
    return p;
  }

  /** One of an intake's own inputs. */
  #input(intake: ResolvedIntake, input: ResolvedInput, target: Target): Input {
    const m = this.metrics;
    if (input.type !== 'file') return this.#syslogInput(input, { input: input.label, metrics: m, defaults: defaultsOf(input.defaults), targets: [target] }, intake.name);
    const ctx = { input: input.label, metrics: m, defaults: { pri: 0, hostname: '', appName: '', procId: '' }, targets: [target] };
    const file = new FileInput(input, ctx, input.checkpointFile, hostname(), this.#log);
    return {
      label: input.label,
      key: json(input),
      port: 0,
      get where() {
        return `following ${file.files.length} file(s) matching ${input.paths.join(', ')}`;
      },
      start: () => file.start(),
      stop: () => file.stop(),
      finish: () => file.finish(),
      dispose: file.dispose,
    };
  }

  /** A shared syslog listener, routing to the current intakes. */
  #sharedListener(l: ResolvedSyslogListener): SharedListener {
    const ctx: InputContext = { input: l.label, metrics: this.metrics, defaults: defaultsOf(l.defaults), targets: [] };
    this.#route(ctx, l);
    return { input: this.#syslogInput(l, ctx, ''), ctx };
  }

  /** Points a shared listener at the current intakes (at start, and after a reload changed them). */
  #route(ctx: InputContext, l: ResolvedSyslogListener): void {
    const intakeIndex = (name: string): number => this.#pipelines.findIndex((p) => p.intake.name.toLowerCase() === name.toLowerCase());
    const { router } = compileRoutes(l.routes, l.default, intakeIndex);
    // Both change in the same turn of the event loop: a read sees the old pair or the new one.
    ctx.targets = this.#pipelines.map((p) => p.target);
    ctx.router = router;
  }

  #httpTargets(): HttpTarget[] {
    return this.#pipelines.map((p) => ({ intake: p.intake.name, intakeKey: p.intake.intakeKey, queue: p.queue, filters: p.target.filters }));
  }

  /** An intake's disk queue: opened (checked and repaired) now, before anything listens. */
  #diskQueue(intake: ResolvedIntake): DiskQueue {
    const q = intake.queue;
    if (q.type !== 'disk') throw new Error('not a disk queue');
    const m = this.metrics;
    const name = intake.name;
    const limiter = new RateLimiter(10_000);
    let queue: DiskQueue;
    try {
      queue = new DiskQueue(
        { dir: q.path, maxBytes: q.max_bytes, whenFull: q.when_full, memoryEvents: q.memory_events, memoryBytes: q.memory_bytes, segmentBytes: q.segment_bytes, fsyncIntervalMs: q.fsync_interval_ms },
        {
          onError: (err) => {
            const code = err.code ?? 'EIO';
            m.diskQueueErrors.inc({ intake: name, code });
            const suppressed = limiter.allow(code);
            if (suppressed !== undefined) {
              this.#log.error({ intake: name, path: q.path, code, err: err.message, suppressed }, code === 'ENOSPC'
                ? 'Disk queue: the disk is full. The queue counts as full until space returns.'
                : 'Disk queue: cannot write. The queue counts as full until writing works again.');
            }
          },
          onLost: (n) => {
            m.eventsDropped.inc({ intake: name, stage: 'queue', reason: 'corrupt' }, n);
            this.#log.error({ intake: name, path: q.path, events: n }, 'Disk queue: events in a damaged part of a segment were skipped.');
          },
          onWrite: (n) => m.diskQueueWritten.inc({ intake: name }, n),
          onSync: (n) => m.diskQueueSynced.inc({ intake: name }, n),
        },
      );
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      throw new Error(`Disk queue of intake "${name}": cannot use ${q.path}: ${e.code ?? e.message}. Check queue.path or data_dir and their permissions.`);
    }
    const r = queue.recovery;
    if (r.tornBytes > 0) this.#log.warn({ intake: name, path: q.path, bytes: r.tornBytes }, 'Disk queue: an incomplete last write (a crash mid-write) was cut off.');
    if (r.damaged.length > 0) this.#log.error({ intake: name, path: q.path, set_aside: r.damaged.map((d) => d.file), events: r.damaged.reduce((n, d) => n + d.events, 0) }, 'Disk queue: damaged parts were set aside; the rest will be delivered.');
    if (queue.recovered > 0) {
      m.diskQueueRecovered.inc({ intake: name }, queue.recovered);
      this.#log.info({ intake: name, path: q.path, events: queue.recovered }, 'Disk queue: events not delivered before the last stop will be delivered now.');
    }
    const gauges = { bytes: m.diskQueueBytes.labels({ intake: name }), events: m.diskQueueEvents.labels({ intake: name }), age: m.diskQueueOldestAge.labels({ intake: name }) };
    // Stays for the life of the process: a disk queue is not replaced by a reload.
    m.addProbe(() => {
      gauges.bytes.set(queue.diskBytes);
      gauges.events.set(queue.diskEvents);
      gauges.age.set(queue.oldestAgeMs() / 1000);
    });
    return queue;
  }

  /** A UDP or TCP syslog input feeding `ctx.targets` (one intake, or a shared listener's). */
  #syslogInput(input: ResolvedSyslogInput | ResolvedSyslogListener, ctx: InputContext, intake: string): Input {
    const m = this.metrics;
    const common = { address: input.address, port: input.port, maxMessageBytes: input.max_message_bytes, oversize: input.oversize };
    let impl: UdpSyslogInput | TcpSyslogInput;
    let dispose: (() => void) | undefined;
    if (input.type === 'udp') {
      const udp = new UdpSyslogInput({ ...common, receiveBufferBytes: input.receive_buffer_bytes }, ctx, this.#log);
      const drops = m.udpKernelDrops.labels({ intake, input: input.label });
      let seen: number | undefined;
      dispose = m.addProbe(() => {
        const now = udp.kernelDrops();
        if (now === undefined) return;
        // The first reading is the socket's own count since it was opened.
        if (now > (seen ?? 0)) drops.inc(now - (seen ?? 0));
        seen = now;
      });
      impl = udp;
    } else {
      impl = new TcpSyslogInput({ ...common, maxConnections: input.max_connections, idleTimeoutMs: input.idle_timeout_ms, tls: input.tlsFiles }, ctx, this.#log);
    }
    return { label: input.label, key: json(input), get port() { return impl.port; }, get where() { return `on port ${impl.port}`; }, start: () => impl.start(), stop: () => impl.stop(), dispose };
  }

  /**
   * Delivers what an intake's queue holds (its inputs are stopped) until `deadline`, then closes
   * its output. Returns the events lost: what a memory queue could not deliver (a disk queue keeps
   * them for the next start).
   */
  async #drain(p: Pipeline, deadline: AbortSignal): Promise<number> {
    p.queue.close();
    const pending = await p.runner.stop(deadline);
    if (p.queue instanceof DiskQueue) {
      await p.queue.finish();
      if (pending > 0) this.#log.info({ intake: p.intake.name, events: pending }, 'Events kept in the disk queue for the next start.');
      return 0;
    }
    if (pending > 0) this.metrics.eventsDropped.inc({ intake: p.intake.name, stage: 'output', reason: 'shutdown' }, pending);
    return pending;
  }

  #background(work: Promise<unknown>): void {
    const w = work.catch((err: unknown) => this.#log.error({ err }, 'Reload: background work failed.')).finally(() => this.#retiring.delete(w));
    this.#retiring.add(w);
  }

  /**
   * Applies a new configuration (already validated) to the running daemon. Reloads run one at a
   * time. What a reload cannot change (metrics server, emulator, data_dir, a queue's type or
   * path) stays as it was until a restart, and is reported.
   */
  reload(next: Config): Promise<ReloadReport> {
    const run = this.#reloading.catch(() => {}).then(() => this.#reload(next));
    this.#reloading = run;
    return run;
  }

  async #reload(next: Config): Promise<ReloadReport> {
    const report: ReloadReport = { added: [], removed: [], changed: [], restarted: [], notApplied: [], failed: [] };
    if (this.#phase !== 'running') return report;
    const old = this.#config;
    for (const k of ['metrics', 'emulator', 'dataDir'] as const) if (json(old[k]) !== json(next[k])) report.notApplied.push(k === 'dataDir' ? 'data_dir' : k);
    for (const w of next.warnings) this.#log.warn(w);
    await this.#startEmulator(next);
    const wanted = new Map(next.intakes.map((i) => [i.name.toLowerCase(), i]));
    const deadline = (): AbortSignal => AbortSignal.timeout(next.shutdown_timeout_ms);

    // 1. Close what goes away or changes: inputs of removed intakes, changed inputs, changed listeners.
    const removed = this.#pipelines.filter((p) => !wanted.has(p.intake.name.toLowerCase()));
    const stopInput = async (i: Input): Promise<void> => {
      await i.stop().catch(() => {});
      await i.finish?.().catch(() => {});
      i.dispose?.();
    };
    for (const p of removed) for (const i of p.inputs) await stopInput(i);
    for (const p of this.#pipelines) {
      const n = wanted.get(p.intake.name.toLowerCase());
      if (!n) continue;
      const keys = new Map(n.inputs.map((i) => [i.label, json(i)]));
      const kept: Input[] = [];
      for (const i of p.inputs) {
        if (keys.get(i.label) === i.key) kept.push(i);
        else {
          await stopInput(i);
          if (keys.has(i.label)) report.restarted.push(`${p.intake.name}/${i.label}`);
        }
      }
      p.inputs = kept;
    }
    const listenerKeys = new Map(next.listeners.map((l) => [l.label, json(l)]));
    const sharedKept: SharedListener[] = [];
    for (const s of this.#shared) {
      if (listenerKeys.get(s.input.label) === s.input.key) sharedKept.push(s);
      else {
        await stopInput(s.input);
        if (listenerKeys.has(s.input.label)) report.restarted.push(s.input.label);
      }
    }
    this.#shared = sharedKept;
    const httpKept: HttpReceiver[] = [];
    for (const r of this.#listeners) {
      const cfg = old.listeners.find((l) => l.label === r.label);
      if (cfg && listenerKeys.get(r.label) === json(cfg)) httpKept.push(r);
      else {
        // Its port is free at once; the requests in flight on it are answered in the background.
        this.#background(r.stop());
        if (listenerKeys.has(r.label)) report.restarted.push(r.label);
      }
    }
    this.#listeners = httpKept;

    // 2. Intakes: let go (their queues drain in the background), add, or change in place.
    for (const p of removed) {
      report.removed.push(p.intake.name);
      this.metrics.configInfo.remove({ intake: p.intake.name, output: p.sink.type });
      const drained = this.#drain(p, deadline()).then(() => p.dispose());
      this.#background(drained);
      const q = p.intake.queue;
      if (q.type === 'disk') {
        const done = drained.catch(() => {}).finally(() => {
          if (this.#drainingDisks.get(q.path) === done) this.#drainingDisks.delete(q.path);
        });
        this.#drainingDisks.set(q.path, done);
      }
    }

    const pipelines: Pipeline[] = [];
    for (const n of next.intakes) {
      const p = this.#pipelines.find((x) => x.intake.name.toLowerCase() === n.name.toLowerCase());
      if (!p) {
        try {
          // Never two queues on one directory: wait for a removed intake's queue there to finish.
          if (n.queue.type === 'disk') await this.#drainingDisks.get(n.queue.path);
          const np = this.#build(n, false);
          await np.runner.start();
          pipelines.push(np);
          report.added.push(n.name);
        } catch (err) {
          this.#log.error({ intake: n.name, err: (err as Error).message }, 'Reload: cannot add this intake.');
          report.failed.push(n.name);
        }
        continue;
      }
      let changed = false;
      if (json(p.intake.filters) !== json(n.filters)) {
        p.target.filters = new FilterSet(n.filters);
        changed = true;
      }
      changed = this.#applyQueue(p, n, report) || changed;
      if (outputKey(p.intake) !== outputKey(n)) {
        await this.#replaceOutput(p, n);
        changed = true;
      }
      p.intake = n;
      if (changed) report.changed.push(n.name);
      pipelines.push(p);
    }
    this.#pipelines = pipelines;
    // 3. Open what is new, and point kept listeners at the current intakes.
    const started = async (what: string, start: () => Promise<void>): Promise<boolean> => {
      try {
        await start();
        return true;
      } catch (err) {
        this.#log.error({ input: what, err: (err as Error).message }, 'Reload: cannot start this input; the rest of the new configuration is in force.');
        report.failed.push(what);
        return false;
      }
    };
    for (const p of this.#pipelines) {
      for (const cfg of p.intake.inputs) {
        if (p.inputs.some((i) => i.label === cfg.label)) continue;
        const input = this.#input(p.intake, cfg, p.target);
        if (await started(`${p.intake.name}/${cfg.label}`, () => input.start())) p.inputs.push(input);
      }
    }
    const targets = this.#httpTargets();
    for (const l of next.listeners) {
      if (l.type === 'http') {
        const kept = this.#listeners.find((r) => r.label === l.label);
        if (kept) {
          kept.retarget(targets);
          continue;
        }
        const receiver = new HttpReceiver(l, targets, httpInputTelemetry(this.metrics, this.#log, l.label));
        if (await started(l.label, () => receiver.start())) this.#listeners.push(receiver);
        continue;
      }
      const kept = this.#shared.find((s) => s.input.label === l.label);
      if (kept) {
        this.#route(kept.ctx, l);
        continue;
      }
      const shared = this.#sharedListener(l);
      if (await started(l.label, () => shared.input.start())) this.#shared.push(shared);
    }
    // Settings a reload leaves as they were.
    this.#config = { ...next, metrics: old.metrics, emulator: old.emulator, dataDir: old.dataDir };
    if (json(old.stats) !== json(next.stats)) this.#startStats(next);
    const level = report.failed.length > 0 ? 'error' : report.notApplied.length > 0 ? 'warn' : 'info';
    const { added, removed: gone, changed, restarted, notApplied, failed } = report;
    this.#log[level](
      { added, removed: gone, changed, restarted, not_applied: notApplied, failed },
      report.notApplied.length > 0 ? 'Configuration reloaded; some settings need a restart to change.' : 'Configuration reloaded.',
    );
    return report;
  }

  /** A changed queue: new limits in place; a different type or path needs a restart. Returns whether limits changed. */
  #applyQueue(p: Pipeline, n: ResolvedIntake, report: ReloadReport): boolean {
    const [a, b] = [p.intake.queue, n.queue];
    if (json(a) === json(b)) return false;
    if (a.type === 'memory' && b.type === 'memory' && p.queue instanceof BoundedQueue) {
      p.queue.setLimits({ maxEvents: b.max_events, maxBytes: b.max_bytes, whenFull: b.when_full });
      return true;
    }
    if (a.type === 'disk' && b.type === 'disk' && a.path === b.path && p.queue instanceof DiskQueue) {
      p.queue.setLimits(b.max_bytes, b.when_full);
      if (a.memory_events !== b.memory_events || a.memory_bytes !== b.memory_bytes || a.segment_bytes !== b.segment_bytes || a.fsync_interval_ms !== b.fsync_interval_ms) {
        report.notApplied.push(`intakes.${n.name}.queue (memory stage, segments, fsync)`);
      }
      return true;
    }
    report.notApplied.push(`intakes.${n.name}.queue (type or path)`);
    return false;
  }

  /**
   * A new output for an intake (key, endpoint, TLS, batching changed): the old runner stops taking
   * batches, the new one takes over the same queue, and a syslog output hands its unacknowledged
   * writes to the new one (written again first). Otherwise the old output finishes in the background.
   */
  async #replaceOutput(p: Pipeline, n: ResolvedIntake): Promise<void> {
    const runner = this.#output(n, p.queue);
    const sink = runner.sink;
    await p.runner.detach();
    const old = p.sink;
    if (old.type === sink.type && old.handOver && sink.adopt) {
      // Closed as at a stop (no duplicates when the intake confirms); what it cannot confirm is
      // written again by the new output, first, and counted as resent.
      const { state, events } = await old.handOver(AbortSignal.timeout(5_000));
      sink.adopt(state);
      if (events > 0) this.metrics.eventsResent.inc({ intake: n.name, output: sink.type }, events);
    } else {
      // It finishes its own writes (syslog: until the intake closes its side); what it cannot
      // confirm is counted, as at a shutdown.
      const name = p.intake.name;
      this.#background(old.stop(AbortSignal.timeout(this.#config.shutdown_timeout_ms)).then((lost) => {
        if (lost > 0) this.metrics.eventsDropped.inc({ intake: name, stage: 'output', reason: 'shutdown' }, lost);
      }));
    }
    if (old.type !== sink.type) this.metrics.configInfo.remove({ intake: p.intake.name, output: old.type });
    await runner.start();
    p.runner = runner;
    p.sink = sink;
  }

  listenerHealth(): ListenerHealth[] {
    return this.#listeners.map((l) => l.health());
  }

  health(): IntakeHealth[] {
    const now = Date.now();
    const stallMs = this.config.metrics.stall_timeout_ms;
    return this.#pipelines.map((p) => {
      const queued = p.queue.pendingEvents;
      const backlog = queued + p.sink.unacknowledged;
      const since = p.runner.lastAckAt || this.#startedAt;
      return {
        name: p.intake.name,
        output: p.sink.type,
        state: p.runner.state,
        queuedEvents: queued,
        unackedEvents: p.sink.unacknowledged,
        lastDeliveryAt: p.runner.lastAckAt,
        lastError: p.runner.lastError?.message,
        stalled: p.runner.state === 'key_rejected' || (backlog > 0 && now - since > stallMs),
      };
    });
  }
  readonly #startedAt = Date.now();

  /** Ordered, idempotent shutdown within config.shutdown_timeout_ms. */
  stop(): Promise<StopReport> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<StopReport> {
    const wasRunning = this.#phase === 'running';
    this.#phase = 'draining';
    const deadline = AbortSignal.timeout(this.config.shutdown_timeout_ms);
    this.#stats?.stop();
    if (wasRunning) this.#log.info({ timeout_ms: this.config.shutdown_timeout_ms }, 'Stopping: inputs closed, draining queues.');
    await Promise.all([
      ...this.#pipelines.flatMap((p) => p.inputs.map((i) => i.stop().catch(() => {}))),
      ...this.#listeners.map((l) => l.stop(this.config.shutdown_timeout_ms / 2).catch(() => {})),
      ...this.#shared.map((l) => l.input.stop().catch(() => {})),
    ]);
    await this.#reloading.catch(() => {});
    for (const p of this.#pipelines) p.queue.close();
    const perIntake: Record<string, number> = {};
    let undelivered = 0;
    await Promise.all(
      this.#pipelines.map(async (p) => {
        const lost = await this.#drain(p, deadline);
        perIntake[p.intake.name] = lost;
        undelivered += lost;
      }),
    );
    // File inputs save checkpoints covering what was delivered.
    await Promise.all(this.#pipelines.flatMap((p) => p.inputs.map((i) => i.finish?.().catch(() => {}))));
    await Promise.all([...this.#retiring]);
    await this.#ops?.stop();
    await this.#emulator?.stop();
    this.#phase = 'stopped';
    if (wasRunning) {
      if (undelivered > 0) this.#log.error({ undelivered, per_intake: perIntake }, 'Stopped: some events could not be delivered before the shutdown timeout.');
      else this.#log.info({ undelivered: 0 }, 'Stopped: every queued event was delivered.');
    }
    return { undelivered, perIntake };
  }
}

function defaultsOf(d: { facility: number; severity: number; hostname?: string | undefined; app_name?: string | undefined; procid?: string | undefined }): HeaderDefaults {
  return { pri: d.facility * 8 + d.severity, hostname: d.hostname ?? '', appName: d.app_name ?? '', procId: d.procid ?? '' };
}
