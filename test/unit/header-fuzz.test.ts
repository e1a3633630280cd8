// Fuzzing the path every syslog event takes (deframing, UTF-8 check, header parsing, RFC 5424
// formatting) with a few thousand generated and mutated frames, cut into reads at random: every
// frame written must follow RFC 5424's grammar with MSG valid UTF-8, and every event received must
// be written. Seeded, so a failure is reproduced by running the test again.
import { describe, expect, it } from 'vitest';
import { BoundedQueue } from '../../src/core/queue.ts';
import { Rfc5424Formatter } from '../../src/syslog/format.ts';
import { frameBuilder } from '../helpers/frame-input.ts';
import { Deframer, type Oversize } from '../../src/syslog/framing.ts';
import { Metrics } from '../../src/telemetry/metrics.ts';
import { metricValue } from '../helpers/relay.ts';
import { assertRfc5424Frame, octetFrames } from '../helpers/rfc5424-grammar.ts';
import { prng } from '../helpers/prng.ts';


const TOKENS = [
  ' ', ' ', '-', '[', ']', '"', '\\', '=', ':', '<', '>', '@', '.', 'x', 'app', '12', 'host', 'ID47', '\x00', '\x01', '\t', '\n', '\r', '\x1b', '\x7f',
  'é', '€', '😀', '\uFEFF', '-é', ']é', '[x@1 a="1"]', '[x@1 a="]"]', '[x@1 a="\\]"]', 'app[12 3]:', 'app[1]:', '2026-11-22T10:00:00.123456789Z',
].map((t) => Buffer.from(t));
const BAD = [[0x80], [0xc3], [0xff], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80]].map((b) => Buffer.from(b));

const SEEDS = [
  '<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \'su root\' failed for lonvick on /dev/pts/8',
  '<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"] \uFEFFAn application event',
  '<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It\'s time to make the do-nuts.',
  '<13>1 - h a - - [x@1 v="a\\]b\\"c"] héllo €',
  '<34>Oct 11 22:14:15 mymachine su: \'su root\' failed',
  '<30>Nov  2 07:05:09 web01 systemd[1]: Started foo.',
  '<13>Nov 22 10:00:00 host app[12] no colon',
  '<14>Nov 22 22:00:00 fw01 CEF:0|Vendor|Product|1.0|100|name|5|src=1.2.3.4',
  '<13>2026-11-22T10:00:00.123456+01:00 host app[7]: rsyslog high precision',
  '<13>Nov 22 2026 10:00:00 sw1 year after date',
  '<166>%ASA-6-302013: Built outbound TCP connection',
  'a line without any header 日本語',
].map((s) => Buffer.from(s));

function frameGenerator(rnd: () => number) {
  const int = (n: number): number => Math.floor(rnd() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const junk = (): Buffer => {
    const parts: Buffer[] = [];
    for (let i = int(4) + 1; i > 0; i--) parts.push(rnd() < 0.1 ? pick(BAD) : pick(TOKENS));
    return Buffer.concat(parts);
  };
  const field = (): Buffer => (rnd() < 0.5 ? pick([Buffer.from('-'), Buffer.from('h'), Buffer.from('app'), Buffer.from('123')]) : junk());
  /** A frame built field by field: a header of the given kind with odd content in any place. */
  const generated = (): Buffer => {
    const pri = Buffer.from(`<${int(200)}>`);
    const msg = rnd() < 0.8 ? Buffer.concat([Buffer.from(rnd() < 0.5 ? ' ' : ''), junk(), Buffer.from(' seq')]) : Buffer.alloc(0);
    if (rnd() < 0.5) {
      const ts = rnd() < 0.5 ? Buffer.from('-') : pick([Buffer.from('2026-11-22T10:00:00Z'), Buffer.from('2026-13-40T25:61:61.1234567890+99:99'), junk()]);
      const sd = pick([Buffer.from('-'), Buffer.from('[x@1 a="1"]'), junk(), Buffer.concat([Buffer.from('['), junk(), Buffer.from(']')])]);
      return Buffer.concat([pri, Buffer.from('1 '), ts, Buffer.from(' '), field(), Buffer.from(' '), field(), Buffer.from(' '), field(), Buffer.from(' '), field(), Buffer.from(' '), sd, msg]);
    }
    const ts = pick([Buffer.from('Nov 22 10:00:00 '), Buffer.from('Nov 22 2026 10:00:00.5 '), Buffer.from('2026-11-22T10:00:00.123456789+01:00 '), Buffer.alloc(0)]);
    const tag = Buffer.concat([field(), ...(rnd() < 0.5 ? [Buffer.from('['), field(), Buffer.from(']')] : []), Buffer.from(pick([':', '', ': ']))]);
    return Buffer.concat([pri, ts, rnd() < 0.7 ? Buffer.concat([field(), Buffer.from(' ')]) : Buffer.alloc(0), tag, msg]);
  };
  /** A seed or generated frame changed a few times: bytes replaced, inserted, removed, repeated. */
  const mutated = (): Buffer => {
    let b = rnd() < 0.4 ? pick(SEEDS) : generated();
    for (let n = int(4); n > 0; n--) {
      const at = int(b.length + 1);
      const op = int(5);
      if (op === 0) b = Buffer.concat([b.subarray(0, at), junk(), b.subarray(at)]);
      else if (op === 1) b = Buffer.concat([b.subarray(0, at), pick(BAD), b.subarray(at)]);
      else if (op === 2) b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + 1 + int(8)))]);
      else if (op === 3) b = Buffer.concat([b.subarray(0, at), b.subarray(int(b.length), int(b.length) + 20), b.subarray(at)]);
      else b = b.subarray(0, Math.max(1, at));
    }
    return b;
  };
  return { int, mutated };
}

function input(maxMessageBytes: number, oversize: Oversize, canPause: boolean) {
  const queue = new BoundedQueue({ maxEvents: 1_000_000, maxBytes: 1 << 30, whenFull: 'block' });
  const metrics = new Metrics(false);
  const builder = frameBuilder(queue, metrics, canPause);
  return { queue, metrics, builder, deframer: new Deframer(maxMessageBytes, oversize, builder) };
}

/** Writes what the queue holds as the syslog output does, in both timestamp modes; returns the frames. */
async function written(queue: BoundedQueue): Promise<Buffer[]> {
  const out: Buffer[] = [];
  while (queue.pendingEvents > 0) {
    const batch = (await queue.take({ maxEvents: 500, maxBytes: 1 << 30, lingerMs: 0 }, new AbortController().signal))!;
    for (const mode of ['received', 'source'] as const) {
      const bytes = new Rfc5424Formatter('AbCdEf0123', mode).frames(batch.events);
      // The copies done in one native call (copy-plan.ts) or run by run: the same bytes.
      expect(bytes.equals(new Rfc5424Formatter('AbCdEf0123', mode, { nativeCopy: false }).frames(batch.events))).toBe(true);
      const frames = octetFrames(bytes);
      expect(frames).toHaveLength(batch.events.length);
      if (mode === 'received') out.push(...frames);
      for (const f of frames) expect(assertRfc5424Frame(f).intakeKey).toBe('AbCdEf0123');
    }
    queue.release(batch);
  }
  return out;
}

describe('fuzz: parse + format always writes RFC 5424 (issue 12)', () => {
  it.each([
    ['octet-counted, whole frames kept', 65_536, 'drop', 1],
    ['octet-counted and LF framing mixed, small max_message_bytes truncating', 160, 'truncate', 2],
    ['octet counts off by a few bytes, oversized frames dropped', 160, 'drop', 3],
  ] as const)('TCP: %s', async (_what, max, oversize, seed) => {
    const { int, mutated } = frameGenerator(prng(seed));
    const { queue, metrics, builder, deframer } = input(max, oversize, true);
    const parts: Buffer[] = [];
    for (let i = 0; i < 3_000; i++) {
      const f = mutated();
      // Seed 1: every frame octet-counted with its true length; 2: some LF-terminated; 3: some counts
      // wrong, each frame followed by an LF where the deframer finds its way again.
      const wrong = seed === 3 && int(10) === 0 ? int(7) - 3 : 0;
      if (seed === 2 && int(3) === 0 && !f.includes(0x0a)) parts.push(f, Buffer.from('\n'));
      else parts.push(Buffer.from(`${Math.max(1, f.length + wrong)} `), f[0] === 0x3c ? f : Buffer.concat([Buffer.from('<'), f.subarray(1)]));
      if (seed === 3) parts.push(Buffer.from('\n'));
    }
    const stream = Buffer.concat(parts);
    let out = 0;
    for (let pos = 0; pos < stream.length; ) {
      const chunk = stream.subarray(pos, (pos += 1 + int(700)));
      // Node gives each read its own buffer: so does this test, as the builder checks for it.
      const read = Buffer.from(chunk);
      builder.begin(read, '10.0.0.1');
      deframer.push(read);
      builder.flush();
      out += (await written(queue)).length;
    }
    deframer.end();
    builder.flush();
    out += (await written(queue)).length;
    const received = await metricValue(metrics, 'intake_relay_events_received_total');
    const tooLarge = await metricValue(metrics, 'intake_relay_events_dropped_total', { reason: 'too_large' });
    const truncated = await metricValue(metrics, 'intake_relay_events_modified_total', { reason: 'truncated' });
    expect(out).toBeGreaterThan(1_000);
    expect(out).toBe(received - tooLarge);
    // Each run goes through its oversize path, not only the easy one.
    if (max < 1_000) expect(oversize === 'drop' ? tooLarge : truncated).toBeGreaterThan(0);
    expect(await metricValue(metrics, 'intake_relay_events_modified_total', { reason: 'invalid_header' })).toBeGreaterThan(0);
  });

  it('UDP: one datagram per frame, any bytes', async () => {
    const { mutated } = frameGenerator(prng(4));
    const { queue, metrics, builder } = input(65_536, 'drop', false);
    let out = 0;
    for (let i = 0; i < 3_000; i++) {
      const msg = mutated();
      builder.begin(msg, '10.0.0.1');
      // As udp-syslog.ts: trailing LF, CR and NUL are not part of the message.
      let end = msg.length;
      while (end > 0 && (msg[end - 1] === 0x0a || msg[end - 1] === 0x0d || msg[end - 1] === 0)) end--;
      if (end === 0) continue;
      builder.frame(msg, 0, end, false);
      builder.flush();
      out += (await written(queue)).length;
    }
    expect(out).toBe(await metricValue(metrics, 'intake_relay_events_received_total'));
    expect(out).toBeGreaterThan(2_500);
  });
});
