// Builds one pipeline per intake (inputs -> bounded queue -> runner -> sink) from a frozen config,
// starts them outputs first, and stops them in order under one deadline: inputs stop accepting,
// queues drain into the outputs, outputs close, and what could not be delivered is reported.

import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { fileSafe, type Config, type ResolvedIntake, type ResolvedSyslogInput, type ResolvedSyslogListener } from './config/load.ts';
import { FilterSet } from './core/filters.ts';
import { compileRoutes } from './core/router.ts';
import { DiskQueue } from './core/disk-queue.ts';
import { BoundedQueue, type EventQueue } from './core/queue.ts';
import { RateLimiter } from './telemetry/log.ts';
import { SinkRunner } from './core/runner.ts';
import { IntakeEmulator, maskKey } from './emulator/intake-emulator.ts';
import { buildSink } from './sinks/build.ts';
import type { Sink } from './sinks/sink.ts';
import type { InputContext, Target } from './sources/event-builder.ts';
import type { HeaderDefaults } from './sources/syslog-parse.ts';
import { FileInput } from './sources/file-tail.ts';
import { HttpReceiver, type HttpTarget } from './sources/http-receiver.ts';
import { TcpSyslogInput } from './sources/tcp-syslog.ts';
import { UdpSyslogInput } from './sources/udp-syslog.ts';
import { OpsServer, type HealthSource, type IntakeHealth } from './telemetry/http-server.ts';
import { Metrics } from './telemetry/metrics.ts';

interface Input {
  readonly label: string;
  /** Listening port; 0 for inputs that do not listen. */
  readonly port: number;
  /** Where it reads from, for the start-up log. */
  readonly where: string;
  start(): Promise<void>;
  /** Stop taking in events. */
  stop(): Promise<void>;
  /** After the outputs have drained (file inputs save their checkpoints). */
  finish?(): Promise<void>;
}

interface Pipeline {
  readonly intake: ResolvedIntake;
  readonly queue: EventQueue;
  readonly runner: SinkRunner;
  readonly sink: Sink;
  readonly target: Target;
  readonly inputs: Input[];
}

export interface StopReport {
  readonly undelivered: number;
  readonly perIntake: Record<string, number>;
}

export class Daemon implements HealthSource {
  readonly config: Config;
  readonly metrics: Metrics;
  readonly #log: Logger;
  readonly #pipelines: Pipeline[] = [];
  readonly #listeners: HttpReceiver[] = [];
  readonly #shared: Input[] = [];
  #emulator: IntakeEmulator | undefined;
  #ops: OpsServer | undefined;
  #phase: HealthSource['phase'] = 'starting';
  #stopping: Promise<StopReport> | undefined;

  constructor(config: Config, log: Logger, metrics = new Metrics()) {
    this.config = config;
    this.#log = log;
    this.metrics = metrics;
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
    return [...this.#shared, ...this.#listeners].find((l) => l.label === label)?.port;
  }
  /** Listening port of an input (resolves port 0), for tests and messages. */
  inputPort(intake: string, label: string): number | undefined {
    return this.#pipelines.find((p) => p.intake.name === intake)?.inputs.find((i) => i.label === label)?.port;
  }

  async start(): Promise<void> {
    const cfg = this.config;
    for (const w of cfg.warnings) this.#log.warn(w);
    try {
      if (cfg.intakes.some((i) => i.toEmulator)) {
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
      for (const intake of cfg.intakes) this.#pipelines.push(this.#build(intake));
      for (const p of this.#pipelines) await p.runner.start();
      for (const p of this.#pipelines) for (const input of p.inputs) await input.start();
      const targets: HttpTarget[] = this.#pipelines.map((p) => ({ intake: p.intake.name, intakeKey: p.intake.intakeKey, queue: p.queue, filters: p.target.filters }));
      const intakeIndex = (name: string): number => this.#pipelines.findIndex((p) => p.intake.name.toLowerCase() === name.toLowerCase());
      for (const l of cfg.listeners) {
        if (l.type === 'http') continue;
        const { router } = compileRoutes(l.routes, l.default, intakeIndex);
        const shared = this.#syslogInput(l, { input: l.label, metrics: this.metrics, defaults: defaultsOf(l.defaults), targets: this.#pipelines.map((p) => p.target), router }, '');
        this.#shared.push(shared);
        await shared.start();
      }
      for (const l of cfg.listeners) {
        if (l.type !== 'http') continue;
        const receiver = new HttpReceiver(l, targets, this.metrics, this.#log);
        this.#listeners.push(receiver);
        await receiver.start();
      }
      if (cfg.metrics.enabled) {
        this.#ops = new OpsServer(this.metrics.registry, this);
        await this.#ops.start(cfg.metrics.address, cfg.metrics.port);
      }
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
          output: p.intake.toEmulator
            ? `emulator 127.0.0.1:${this.#emulator?.port}`
            : p.intake.output.type === 'http' ? `http ${p.intake.output.endpoint}` : `syslog ${p.intake.output.host}:${p.intake.output.port}`,
        })),
        listeners: cfg.listeners.map((l) => `${l.label} on port ${this.listenerPort(l.label)}`),
        metrics: this.#ops ? `http://${cfg.metrics.address}:${this.#ops.port}/metrics` : 'disabled',
      },
      'intake-relay started.',
    );
  }

  #build(intake: ResolvedIntake): Pipeline {
    const m = this.metrics;
    const queue = intake.queue.type === 'disk' ? this.#diskQueue(intake) : new BoundedQueue({ maxEvents: intake.queue.max_events, maxBytes: intake.queue.max_bytes, whenFull: intake.queue.when_full });
    const emulator = intake.toEmulator ? this.#emulator : undefined;
    const sink = buildSink(intake, this.metrics, emulator && { port: emulator.port, ca: emulator.caPem });
    const o = intake.output;
    const runner = new SinkRunner({
      intake: intake.name,
      queue,
      sink,
      batch: { maxEvents: intake.batch.max_events, maxBytes: intake.batch.max_bytes, lingerMs: intake.batch.linger_ms },
      backoff: { initialMs: o.backoff.initial_ms, maxMs: o.backoff.max_ms },
      maxRetries: o.type === 'http' ? o.max_retries : undefined,
      metrics: m,
      log: this.#log,
    });
    m.configInfo.set({ intake: intake.name, output: sink.type }, 1);
    const gauges = {
      events: m.queueEvents.labels({ intake: intake.name }),
      bytes: m.queueBytes.labels({ intake: intake.name }),
      unacked: m.unackedEvents.labels({ intake: intake.name }),
    };
    m.addProbe(() => {
      gauges.events.set(queue.pendingEvents);
      gauges.bytes.set(queue.pendingBytes);
      gauges.unacked.set(sink.unacknowledged);
    });
    const target: Target = { intake: intake.name, queue, filters: new FilterSet(intake.filters) };
    const inputs = intake.inputs.map((input): Input => {
      if (input.type !== 'file') return this.#syslogInput(input, { input: input.label, metrics: m, defaults: defaultsOf(input.defaults), targets: [target] }, intake.name);
      const ctx = { input: input.label, metrics: m, defaults: { pri: 0, hostname: '', appName: '', procId: '' }, targets: [target] };
      const file = new FileInput(input, ctx, join(this.config.dataDir, 'files', `${fileSafe(intake.name)}--${fileSafe(input.label)}.json`), hostname(), this.#log);
      return {
        label: input.label,
        port: 0,
        get where() {
          return `following ${file.files.length} file(s) matching ${input.paths.join(', ')}`;
        },
        start: () => file.start(),
        stop: () => file.stop(),
        finish: () => file.finish(),
      };
    });
    return { intake, queue, runner, sink, target, inputs };
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
    if (input.type === 'udp') {
      const udp = new UdpSyslogInput({ ...common, receiveBufferBytes: input.receive_buffer_bytes }, ctx, this.#log);
      const drops = m.udpKernelDrops.labels({ intake, input: input.label });
      let seen: number | undefined;
      m.addProbe(() => {
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
    return { label: input.label, get port() { return impl.port; }, get where() { return `on port ${impl.port}`; }, start: () => impl.start(), stop: () => impl.stop() };
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
    if (wasRunning) this.#log.info({ timeout_ms: this.config.shutdown_timeout_ms }, 'Stopping: inputs closed, draining queues.');
    await Promise.all([
      ...this.#pipelines.flatMap((p) => p.inputs.map((i) => i.stop().catch(() => {}))),
      ...this.#listeners.map((l) => l.stop().catch(() => {})),
      ...this.#shared.map((l) => l.stop().catch(() => {})),
    ]);
    for (const p of this.#pipelines) p.queue.close();
    const perIntake: Record<string, number> = {};
    let undelivered = 0;
    await Promise.all(
      this.#pipelines.map(async (p) => {
        const pending = await p.runner.stop(deadline);
        if (p.queue instanceof DiskQueue) {
          // Nothing is lost: what was not delivered stays on disk for the next start.
          await p.queue.finish();
          if (pending > 0) this.#log.info({ intake: p.intake.name, events: pending }, 'Events kept in the disk queue for the next start.');
          return;
        }
        perIntake[p.intake.name] = pending;
        undelivered += pending;
        if (pending > 0) this.metrics.eventsDropped.inc({ intake: p.intake.name, stage: 'output', reason: 'shutdown' }, pending);
      }),
    );
    // File inputs save checkpoints covering what was delivered.
    await Promise.all(this.#pipelines.flatMap((p) => p.inputs.map((i) => i.finish?.().catch(() => {}))));
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
