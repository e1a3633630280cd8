// Micro-benchmark of the per-event CPU path without I/O: RFC 3164 lines deframed, parsed into
// events and formatted as octet-counted RFC 5424 batches, in-process. For comparing parser and
// formatter changes with less noise than the end-to-end bench (`node bench/micro-parse.ts`).
import { Deframer, type FrameSink } from '../src/syslog/framing.ts';
import { fieldCache, parseSyslog } from '../src/syslog/parse.ts';
import { Rfc5424Formatter } from '../src/syslog/format.ts';
import type { LogEvent } from '../src/core/event.ts';

const n = 1_000_000;
const size = 200;
const data = Buffer.alloc(n * size, 0x61);
for (let i = 0; i < n; i++) {
  data.write(`<14>Nov 22 10:00:00 bench-host app[1234]: seq=${String(i).padStart(8, '0')} `, i * size, 'latin1');
  data[(i + 1) * size - 1] = 0x0a;
}
const defaults = { pri: 13, hostname: '', appName: '', procId: '' };
const formatter = new Rfc5424Formatter('BenchKey0123456789abcdefABCDEF01', 'received');

function once(): number {
  const fields = fieldCache();
  let events: LogEvent[] = [];
  let bytes = 0;
  const now = Date.now();
  const sink: FrameSink = {
    frame(buf, start, end) {
      events.push(parseSyslog(buf, start, end, now, '127.0.0.1', defaults, fields));
    },
    oversized() {},
  };
  const deframer = new Deframer(256 * 1024, 'drop', sink);
  const t0 = performance.now();
  for (let off = 0; off < data.length; off += 65536) {
    deframer.push(Buffer.from(data.subarray(off, off + 65536)));
    for (let b = 0; b < events.length; b += 1000) bytes += formatter.frames(events.slice(b, b + 1000)).length;
    events = [];
  }
  const ms = performance.now() - t0;
  if (bytes === 0) throw new Error('nothing formatted');
  return (ms * 1000) / n;
}

const runs: number[] = [];
for (let r = 0; r < 7; r++) runs.push(once());
runs.sort((a, b) => a - b);
console.log(`parse + format: median ${runs[3]!.toFixed(3)} µs per event (min ${runs[0]!.toFixed(3)}, max ${runs[6]!.toFixed(3)})`);
