// A syslog input's event building without a socket: a FrameBuilder feeding one intake's queue
// through an Inlet, with the telemetry the daemon gives a plain input named "in" of intake "i".
import pino from 'pino';
import type { EventQueue } from '../../src/core/event-queue.ts';
import { FrameBuilder } from '../../src/inputs/frame-builder.ts';
import { inletTelemetry } from '../../src/pipeline/instruments.ts';
import { syslogInputTelemetry } from '../../src/inputs/syslog-instruments.ts';
import { FilterSet } from '../../src/routing/filters.ts';
import { Inlet } from '../../src/routing/inlet.ts';
import type { SenderSightings } from '../../src/core/telemetry.ts';
import type { Metrics } from '../../src/telemetry/metrics.ts';

/** Sightings that go nowhere. */
export const NO_SIGHTINGS: SenderSightings = { from: () => {}, hosts: () => {} };

/** `senders`: where who sent what goes (a recording one in tests of it). */
export function frameBuilder(queue: EventQueue, metrics: Metrics, canPause = true, senders = NO_SIGHTINGS): FrameBuilder {
  const sender = new Inlet({ targets: [{ intake: 'i', intakeKey: '', queue, filters: new FilterSet([]) }] }, { mode: canPause ? 'pause' : 'drop' }, inletTelemetry(metrics, 'in'));
  return new FrameBuilder(sender, syslogInputTelemetry(metrics, pino({ level: 'silent' }), 'i', 'in', senders), { pri: 13, hostname: '', appName: '', procId: '' });
}
