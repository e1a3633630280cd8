// One intake's pipeline: its queue, the runner and sink that deliver from it, its own inputs, and
// its gauges. It starts output first, takes a reload's changes in place (filters, queue limits, a
// new output that takes over the queue and what the old one had not confirmed), and drains at a
// stop: inputs are stopped by then, the queue is delivered until the deadline, the output closes.

import type { ResolvedIntake } from '../config/resolve.ts';
import type { Target } from '../core/component.ts';
import { DROP_STAGES, type Sink, type Source } from '../core/contracts.ts';
import { DiskQueue } from '../core/disk-queue.ts';
import { BoundedQueue } from '../core/queue.ts';
import { type EventQueue } from '../core/event-queue.ts';
import { SinkRunner } from '../core/runner.ts';
import { EMULATOR_DEMO_KEY } from '../emulator/intake-emulator.ts';
import type { ResolvedInput } from '../inputs/registry.ts';
import { outputOf } from '../outputs/registry.ts';
import { emulatorOutput, syslogOutput } from '../outputs/syslog/definition.ts';
import { FilterSet } from '../routing/filters.ts';
import { outputTelemetry } from './instruments.ts';
import { openQueue } from './queues.ts';
import type { PipelineEnv } from './env.ts';
import { createSource } from './sources.ts';
import type { IntakeHealth } from '../telemetry/ops-server.ts';

/** At a stop, how long the output of a disk queue may go on delivering (what it holds is on disk). */
const DISK_STOP_MS = 1_500;

export class Pipeline {
  intake: ResolvedIntake;
  readonly queue: EventQueue;
  readonly target: Target;
  runner: SinkRunner;
  /** Its own inputs, by label. */
  readonly sources = new Map<string, Source>();
  readonly #env: PipelineEnv;
  readonly #disposers: (() => void)[] = [];
  /** Events delivered by the runners a reload replaced. */
  #deliveredBefore = 0;

  /** Opens the queue (a disk queue is checked and repaired now) and builds the output; nothing starts yet. */
  constructor(intake: ResolvedIntake, env: PipelineEnv) {
    this.intake = intake;
    this.#env = env;
    const { queue, dispose } = openQueue(intake, env.metrics, env.log);
    this.queue = queue;
    this.#disposers.push(dispose);
    this.target = { intake: intake.name, intakeKey: intake.intakeKey, queue, filters: new FilterSet(intake.filters) };
    this.runner = this.#output(intake);
    const m = env.metrics;
    for (const [stage, reasons] of Object.entries(DROP_STAGES)) for (const reason of reasons) m.eventsDropped.inc({ intake: intake.name, stage, reason }, 0);
    const gauges = {
      events: m.queueEvents.labels({ intake: intake.name }),
      bytes: m.queueBytes.labels({ intake: intake.name }),
      unacked: m.unackedEvents.labels({ intake: intake.name }),
      oldest: m.queueOldestAge.labels({ intake: intake.name }),
    };
    this.#limits(intake);
    this.#disposers.push(m.addProbe(() => {
      gauges.events.set(queue.pendingEvents);
      gauges.bytes.set(queue.pendingBytes);
      gauges.unacked.set(this.sink.unacknowledged);
      gauges.oldest.set(queue.oldestAgeMs() / 1000);
    }));
  }

  get name(): string {
    return this.intake.name;
  }

  get sink(): Sink {
    return this.runner.sink;
  }

  /** Events the intake acknowledged since this pipeline started, whichever output delivered them. */
  get delivered(): number {
    return this.#deliveredBefore + this.runner.delivered;
  }

  /** Its output, as the start-up log names it. */
  get outputWhere(): string {
    const emulator = this.intake.toEmulator ? this.#env.emulator() : undefined;
    return emulator ? `emulator 127.0.0.1:${emulator.port}` : `${this.intake.output.type} ${outputOf(this.intake.output).where(this.intake.output)}`;
  }

  /** The runner and sink that deliver from the queue, for `intake`'s output settings. */
  #output(intake: ResolvedIntake): SinkRunner {
    const { metrics, log } = this.#env;
    const o = intake.output;
    const def = outputOf(o);
    const tools = { metrics, intake: intake.name };
    const emulator = intake.toEmulator ? this.#env.emulator() : undefined;
    const sink = emulator
      ? syslogOutput.create(emulatorOutput(emulator.port, emulator.caPem, intake.memory.perThreadBytes), { intake: intake.name, intakeKey: EMULATOR_DEMO_KEY, tools })
      : def.create(o, { intake: intake.name, intakeKey: intake.intakeKey, tools });
    metrics.configInfo.set({ intake: intake.name, output: sink.type }, 1);
    return new SinkRunner({
      intake: intake.name,
      queue: this.queue,
      sink,
      batch: { maxEvents: intake.batch.max_events, maxBytes: intake.batch.max_bytes, lingerMs: intake.batch.linger_ms },
      backoff: def.backoff(o),
      maxRetries: def.maxRetries(o),
      telemetry: outputTelemetry(metrics, log, intake.name, sink.type),
      activity: this.#env.activity(),
    });
  }

  /** One of its own inputs, built (not started): its events go to this intake only. */
  input(config: ResolvedInput): Source {
    return createSource(config, { targets: [this.target] }, this.intake.name, this.intake.senders, this.#env);
  }

  /**
   * A reload's intake, in place: its name (case), key and filters, which running inputs see at
   * their next read (HTTP listeners map keys again when they are pointed at the new targets).
   */
  update(intake: ResolvedIntake, filters: boolean): void {
    this.intake = intake;
    this.target.intake = intake.name;
    this.target.intakeKey = intake.intakeKey;
    if (filters) this.target.filters = new FilterSet(intake.filters);
  }

  /** The queue's limits as gauges, so that alert rules compute how full it is. */
  #limits(intake: ResolvedIntake): void {
    const m = this.#env.metrics;
    const q = intake.queue;
    m.queueMaxBytes.set({ intake: intake.name }, q.max_bytes);
    if (q.type === 'memory') m.queueMaxEvents.set({ intake: intake.name }, q.max_events);
  }

  /** A reload's new queue limits, in place (a queue's type or path needs a restart). */
  setLimits(intake: ResolvedIntake): void {
    this.#limits(intake);
    const q = intake.queue;
    if (q.type === 'memory' && this.queue instanceof BoundedQueue) this.queue.setLimits({ maxEvents: q.max_events, maxBytes: q.max_bytes, whenFull: q.when_full });
    if (q.type === 'disk' && this.queue instanceof DiskQueue) this.queue.setLimits(q.max_bytes, q.when_full);
  }

  /**
   * A new output (key, endpoint, TLS, batching changed): the old runner stops taking batches, the
   * new one takes over the queue. A sink of the same kind that can hand over gives the new one
   * what it had not confirmed (written again first, counted as resent); any other finishes its
   * own writes in the background, and what it cannot confirm is counted as at a shutdown.
   */
  async replaceOutput(intake: ResolvedIntake, background: (work: Promise<unknown>) => void, shutdownTimeoutMs: number): Promise<void> {
    const m = this.#env.metrics;
    const runner = this.#output(intake);
    const sink = runner.sink;
    await this.runner.detach();
    const old = this.sink;
    if (old.type === sink.type && old.handOver && sink.adopt) {
      const { state, events } = await old.handOver(AbortSignal.timeout(outputOf(intake.output).handOverMs(intake.output)));
      sink.adopt(state);
      if (events > 0) m.eventsResent.inc({ intake: intake.name, output: sink.type }, events);
    } else {
      const name = this.intake.name;
      const queue = this.queue;
      // Its runner is detached: nothing would write again what a lost connection held.
      background(old.stop(AbortSignal.timeout(shutdownTimeoutMs), false).then((lost) => {
        if (lost > 0) m.eventsDropped.inc({ intake: name, stage: 'output', reason: 'shutdown' }, lost);
        // Counted as dropped, so settled: the queue's settled mark must not wait for them.
        for (const [seq, n] of old.unconfirmed?.() ?? []) queue.settle(seq, n);
      }));
    }
    if (old.type !== sink.type) m.configInfo.remove({ intake: this.intake.name, output: old.type });
    await runner.start();
    this.#deliveredBefore += this.runner.delivered;
    this.runner = runner;
  }

  /**
   * Delivers what the queue holds (its inputs are stopped) until `deadline`, then closes the
   * output. What was left: `kept` in a disk queue for the next start, or `lost` from a memory queue
   * (counted as dropped, reason shutdown). A disk queue's output has DISK_STOP_MS at most: what it
   * could not deliver is fsynced and delivered after the next start.
   */
  async drain(deadline: AbortSignal): Promise<{ readonly kept: number; readonly lost: number }> {
    this.queue.close();
    // What a disk queue holds is safe where it is: its output gets DISK_STOP_MS to finish what it
    // has in flight, not the whole timeout (an intake that is down does not hold the stop).
    const durable = this.queue instanceof DiskQueue;
    const pending = await this.runner.stop(durable ? AbortSignal.any([deadline, AbortSignal.timeout(DISK_STOP_MS)]) : deadline);
    if (this.queue instanceof DiskQueue) {
      await this.queue.finish();
      return { kept: pending, lost: 0 };
    }
    if (pending > 0) this.#env.metrics.eventsDropped.inc({ intake: this.name, stage: 'output', reason: 'shutdown' }, pending);
    return { kept: 0, lost: pending };
  }

  /** Its health: the output's state, what waits, whether it is stalled (`stallMs` without a delivery while events wait) or refuses events. */
  health(now: number, stallMs: number, startedAt: number): IntakeHealth {
    const queued = this.queue.pendingEvents;
    const backlog = queued + this.sink.unacknowledged;
    const since = this.runner.lastAckAt || startedAt;
    return {
      name: this.name,
      output: this.sink.type,
      state: this.runner.state,
      queuedEvents: queued,
      unackedEvents: this.sink.unacknowledged,
      lastDeliveryAt: this.runner.lastAckAt,
      lastError: this.runner.lastError?.message,
      stalled: this.runner.state === 'key_rejected' || (backlog > 0 && now - since > stallMs),
      accepting: !(this.queue.full && this.intake.queue.when_full === 'block') && !this.queue.closed,
    };
  }

  /** Stops reporting (the intake is gone). */
  dispose(): void {
    for (const d of this.#disposers.splice(0)) d();
    const m = this.#env.metrics;
    m.configInfo.remove({ intake: this.name, output: this.sink.type });
    m.outputStalled.remove({ intake: this.name });
    m.outputSinceDelivery.remove({ intake: this.name });
    m.queueMaxBytes.remove({ intake: this.name });
    m.queueMaxEvents.remove({ intake: this.name });
    m.queueOldestAge.remove({ intake: this.name });
  }
}
