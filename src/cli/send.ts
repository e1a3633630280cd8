// `intake-relay send`: test events through an intake's real output (its TLS or HTTP path, its key),
// waiting until they are acknowledged: an HTTP 2xx, a RELP answer per event, or, for syslog (which
// has no acknowledgement), the intake closing its side after reading everything.

import { hostname } from 'node:os';
import type { Config } from '../config/resolve.ts';
import type { Batch } from '../core/event.ts';
import { PeerTextRedactor } from '../core/peer-text.ts';
import { outputOf } from '../outputs/registry.ts';
import { headerlessEvent } from '../syslog/parse.ts';
import { Metrics } from '../telemetry/metrics.ts';

export interface SendOutcome {
  readonly ok: boolean;
  readonly detail: string;
}

export async function sendTest(cfg: Config, intakeName: string, messages: readonly string[], timeoutMs = 15_000): Promise<SendOutcome> {
  const intake = cfg.intakes.find((i) => i.name.toLowerCase() === intakeName.toLowerCase());
  if (!intake) return { ok: false, detail: `no intake is named "${intakeName}"` };
  if (intake.toEmulator) return { ok: false, detail: `intake "${intake.name}" has no key: it would only reach the local emulator` };
  const def = outputOf(intake.output);
  const sink = def.create(intake.output, { intake: intake.name, intakeKey: intake.intakeKey, tools: { metrics: new Metrics(false), intake: intake.name } });
  let acked = 0;
  let lost = '';
  let refused = '';
  await sink.start({
    acknowledged: (_seq, n) => (acked += n),
    refused: (_seq, n, err) => (refused = `${n} refused: ${err.message}`),
    connectionLost: (err) => (lost = err.message),
    connected: () => {},
    wrote: () => {},
    cut: () => {},
  });
  const buf = Buffer.from(messages.join(''));
  const now = Date.now();
  const defaults = { pri: 13, hostname: hostname(), appName: 'intake-relay', procId: String(process.pid) };
  let off = 0;
  const events = messages.map((m) => {
    const n = Buffer.byteLength(m);
    const e = headerlessEvent(buf, off, off + n, now, '', defaults);
    off += n;
    return e;
  });
  const batch: Batch = { events, bytes: buf.length, seq: 0 };
  const result = await sink.send(batch, AbortSignal.timeout(timeoutMs));
  const unconfirmed = await sink.stop(AbortSignal.timeout(timeoutMs));
  const where = def.where(intake.output);
  // The outputs redact what the intake said; this covers any error text that did not pass there.
  const peer = new PeerTextRedactor([intake.intakeKey]);
  if (result.status !== 'sent') return { ok: false, detail: `not delivered to ${where}: ${peer.clean(result.error.message, 600)}` };
  if (refused) return { ok: false, detail: `written to ${where}, but the intake refused them: ${peer.clean(refused, 600)}` };
  if (lost) return { ok: false, detail: `written to ${where}, then the connection was lost: ${peer.clean(lost, 600)}` };
  if (acked < events.length || unconfirmed > 0) {
    return { ok: false, detail: `written to ${where}, but the intake did not confirm (it did not ${def.confirmation} within ${timeoutMs} ms)` };
  }
  return { ok: true, detail: `${events.length} event${events.length === 1 ? '' : 's'} delivered to intake "${intake.name}" at ${where} (${intake.output.type})` };
}
