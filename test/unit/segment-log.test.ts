import { mkdtempSync, readdirSync, readFileSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LogEvent } from '../../src/core/event.ts';
import { SegmentLog } from '../../src/core/segment-log.ts';
import { parseSyslog } from '../../src/syslog/parse.ts';

const defaults = { pri: 13, hostname: '', appName: '', procId: '' };
const ev = (i: number, size = 0): LogEvent => {
  const line = Buffer.from(`<34>1 2026-11-23T10:00:00Z host${i % 3} app 12 ID7 [x@1 a="b"] message ${i} ${'p'.repeat(size)}`);
  return parseSyslog(line, 0, line.length, 1_700_000_000_000 + i, '10.0.0.1', defaults);
};
const text = (e: LogEvent): string => e.buf.toString('utf8', e.msgStart, e.end);
const tmp = (): string => mkdtempSync(join(tmpdir(), 'segment-log-'));

describe('SegmentLog', () => {
  it('round-trips events with every field, across segments, in order', () => {
    const dir = tmp();
    const { log } = SegmentLog.open(dir, 4096);
    for (let i = 0; i < 100; i += 10) log.append(Array.from({ length: 10 }, (_, k) => ev(i + k)));
    expect(log.nextSeq).toBe(100);
    expect(log.segments).toBeGreaterThan(2);
    const got: LogEvent[] = [];
    let seq = 0;
    while (seq < 100) {
      const r = log.read(seq, 7, 1 << 20);
      expect(r.seq).toBe(seq);
      expect(r.lost).toBe(0);
      got.push(...r.events);
      seq += r.events.length;
    }
    expect(got.map(text)).toEqual(Array.from({ length: 100 }, (_, i) => text(ev(i))));
    const [a, b] = [got[42]!, ev(42)];
    for (const k of ['pri', 'format', 'hostname', 'appName', 'procId', 'msgId', 'sender', 'receivedAt'] as const) expect(a[k]).toBe(b[k]);
    expect(a.buf.toString('utf8', a.sdStart, a.sdEnd)).toBe('[x@1 a="b"]');
    expect(a.buf.toString('utf8', a.tsStart, a.tsEnd)).toBe('2026-11-23T10:00:00Z');
    log.close();
  });

  it('resumes after reopening; deletes only wholly settled segments', () => {
    const dir = tmp();
    let { log } = SegmentLog.open(dir, 2048);
    for (let i = 0; i < 50; i++) log.append([ev(i)]);
    log.close();
    const reopened = SegmentLog.open(dir, 2048);
    log = reopened.log;
    expect(reopened.report).toMatchObject({ events: 50, firstSeq: 0, nextSeq: 50, tornBytes: 0, damaged: [] });
    const segs = log.segments;
    log.deleteBelow(1); // the first segment holds more than event 0
    expect(log.segments).toBe(segs);
    log.deleteBelow(30);
    expect(log.segments).toBeLessThan(segs);
    expect(log.firstSeq).toBeLessThanOrEqual(30);
    expect(log.read(30, 100, 1 << 20).events.map(text)).toEqual(Array.from({ length: 20 }, (_, i) => text(ev(30 + i))));
    log.append([ev(50)]);
    expect(log.read(50, 10, 1 << 20).events.map(text)).toEqual([text(ev(50))]);
    log.close();
  });

  it('a torn last record (crash mid-write) is cut off; the rest is kept', () => {
    const dir = tmp();
    const { log } = SegmentLog.open(dir, 1 << 20);
    log.append(Array.from({ length: 20 }, (_, i) => ev(i)));
    log.close();
    const seg = join(dir, readdirSync(dir).find((f) => f.endsWith('.seg'))!);
    const whole = readFileSync(seg);
    writeFileSync(seg, whole.subarray(0, whole.length - 30));
    const { log: again, report } = SegmentLog.open(dir, 1 << 20);
    expect(report).toMatchObject({ events: 19, nextSeq: 19, damaged: [] });
    expect(report.tornBytes).toBeGreaterThan(0);
    expect(again.read(0, 100, 1 << 20).events.map(text)).toEqual(Array.from({ length: 19 }, (_, i) => text(ev(i))));
    // Appends go on after the cut.
    again.append([ev(99)]);
    expect(again.read(19, 10, 1 << 20).events.map(text)).toEqual([text(ev(99))]);
    again.close();
  });

  it('a damaged part in the middle is set aside and counted; everything after it is delivered', () => {
    const dir = tmp();
    const { log } = SegmentLog.open(dir, 1 << 20);
    log.append(Array.from({ length: 30 }, (_, i) => ev(i)));
    log.close();
    const seg = join(dir, readdirSync(dir).find((f) => f.endsWith('.seg'))!);
    const bytes = readFileSync(seg);
    // Flip bytes inside what is roughly the 10th record.
    const at = Math.floor((bytes.length * 10) / 30) + 20;
    for (let k = 0; k < 5; k++) bytes[at + k] = (bytes[at + k] as number) ^ 0xff;
    writeFileSync(seg, bytes);
    appendFileSync(seg, Buffer.alloc(0));
    const { log: again, report } = SegmentLog.open(dir, 1 << 20);
    expect(report.damaged).toHaveLength(1);
    expect(report.damaged[0]!.events).toBe(1);
    expect(readFileSync(report.damaged[0]!.file).length).toBe(report.damaged[0]!.bytes);
    expect(report.events).toBe(29);
    const first = again.read(0, 100, 1 << 20);
    const second = again.read(first.seq + first.events.length, 100, 1 << 20);
    // The read stops before the gap; the next one reports it.
    expect(first.lost + second.lost).toBe(1);
    expect([...first.events, ...second.events].map(text)).toEqual(Array.from({ length: 30 }, (_, i) => text(ev(i))).filter((_, i) => i !== first.events.length));
    // Opening again finds nothing more to repair.
    again.close();
    expect(SegmentLog.open(dir, 1 << 20).report).toMatchObject({ events: 29, damaged: [], tornBytes: 0 });
  });

  it('garbage that is not a record at all never stops the open', () => {
    const dir = tmp();
    writeFileSync(join(dir, '0000000000000000.seg'), Buffer.from('not a segment at all'));
    const { log, report } = SegmentLog.open(dir, 1 << 20);
    expect(report.events).toBe(0);
    log.append([ev(1)]);
    expect(log.read(0, 10, 1 << 20).events.map(text)).toEqual([text(ev(1))]);
    log.close();
  });

  it('a header field over 255 characters is cut in its record, and the record stays whole', () => {
    const dir = tmp();
    const { log } = SegmentLog.open(dir, 1 << 20);
    log.append([{ ...ev(1), hostname: 'h'.repeat(300) }, ev(2)]);
    const [a, b] = log.read(0, 10, 1 << 20).events;
    expect(a!.hostname).toBe('h'.repeat(255));
    expect(text(b!)).toBe(text(ev(2)));
    log.close();
    expect(SegmentLog.open(dir, 1 << 20).report).toMatchObject({ events: 2, damaged: [], tornBytes: 0 });
  });

  it('startAt above the last event on disk (a lost end behind the settled mark): numbering goes on from there, in a new segment, across a reopen', () => {
    const dir = tmp();
    let { log } = SegmentLog.open(dir, 1 << 20);
    log.append(Array.from({ length: 10 }, (_, i) => ev(i)));
    log.close();
    ({ log } = SegmentLog.open(dir, 1 << 20));
    log.startAt(20);
    expect(log.nextSeq).toBe(20);
    expect(log.durableBelow).toBe(20);
    expect(log.firstSeq).toBe(0);
    log.append([ev(20), ev(21)]);
    expect(readdirSync(dir).filter((f) => f.endsWith('.seg')).sort()).toEqual(['0000000000000000.seg', '0000000000000020.seg']);
    expect(log.read(20, 10, 1 << 20)).toMatchObject({ seq: 20, lost: 0 });
    // Wholly below 20: the old segment goes.
    log.deleteBelow(20);
    expect(log.firstSeq).toBe(20);
    log.close();
    const again = SegmentLog.open(dir, 1 << 20);
    expect(again.report).toMatchObject({ events: 2, firstSeq: 20, nextSeq: 22, damaged: [] });
    again.log.startAt(20); // below nextSeq: nothing changes
    expect(again.log.nextSeq).toBe(22);
    expect(again.log.read(20, 10, 1 << 20).events.map(text)).toEqual([text(ev(20)), text(ev(21))]);
    again.log.close();
  });

  it('reads a record longer than one read', () => {
    const dir = tmp();
    const { log } = SegmentLog.open(dir, 64 << 20);
    log.append([ev(0, 250_000), ev(1)]);
    const r = log.read(0, 10, 100);
    expect(r.events).toHaveLength(1);
    expect(log.read(1, 10, 1 << 20).events.map(text)).toEqual([text(ev(1))]);
    log.close();
  });
});
