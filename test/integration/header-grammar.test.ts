// Frames whose header RFC 5424 does not allow, sent over TCP and UDP to a running relay: every frame
// the relay writes must follow the RFC's grammar byte for byte (checked on what the intake stand-in
// read), keep the event's text, and count each repair. Then the same frames to syslog-ng, a strict
// RFC 5424 receiver: it must find every field and the intake key where the intake looks for them.
import dgram from 'node:dgram';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { books, startRelay, TEST_KEY } from '../helpers/relay.ts';
import { fileLines, freePort, sendTcp, startSyslogNg, startTestIntake, syslogNgIntake } from '../helpers/peers.ts';
import { track } from '../helpers/cleanup.ts';
import { relayYaml } from '../helpers/config.ts';
import { assertRfc5424Frame, type Rfc5424Frame } from '../helpers/rfc5424-grammar.ts';

const raw = (...parts: (string | number[])[]): Buffer => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));
const E_ACUTE = [0xc3, 0xa9];

interface Case {
  readonly seq: string;
  readonly frame: Buffer;
  readonly want: Partial<Rfc5424Frame>;
  /** The relay repairs the header (counted as invalid_header). */
  readonly repaired: boolean;
}

/** Cases for both transports; `seq` tells their events apart (MSG holds "seq=<seq>"). */
function cases(prefix: string): Case[] {
  const s = (n: number) => `${prefix}${n}`;
  return [
    { seq: s(1), frame: raw('<34>1 2003-10-11T22:14:15.003Z host su - ID47 -', E_ACUTE, ` seq=${s(1)}`), want: { pri: 34, hostname: 'host', appName: 'su', procId: '', msg: `é seq=${s(1)}` }, repaired: true },
    { seq: s(2), frame: raw(`<34>1 2003-10-11T22:14:15.003Z host su - ID47 -Aseq=${s(2)}`), want: { msg: `Aseq=${s(2)}` }, repaired: true },
    { seq: s(3), frame: raw('<13>1 2026-11-22T10:00:00.123456789Z h app 7 ID [x@1 v="1"]', [0xe2, 0x82, 0xac], ` seq=${s(3)}`), want: { timestamp: '2026-11-22T10:00:00.123456Z', procId: '7', extraSd: '[x@1 v="1"]', msg: `€ seq=${s(3)}` }, repaired: true },
    // Pure ASCII, so the read's encoding check alone used to let these bytes through.
    { seq: s(4), frame: raw(`<13>Nov 22 10:00:00 ho\x00st ap\rp[1\n2]: seq=${s(4)}`), want: { hostname: 'ho_st', appName: 'ap_p', procId: '1_2', msg: `seq=${s(4)}` }, repaired: true },
    { seq: s(5), frame: raw(`<13>Nov 22 10:00:00 host app[12 3]: seq=${s(5)}`), want: { hostname: 'host', appName: '', procId: '', msg: `app[12 3]: seq=${s(5)}` }, repaired: true },
    { seq: s(6), frame: raw(`<13>1 - h\tx app\x00 p\x1b1 M\x7fID - seq=${s(6)}`), want: { hostname: 'h_x', appName: 'app_', procId: 'p_1', msg: `seq=${s(6)}` }, repaired: true },
    { seq: s(7), frame: raw(`<13>1 - h a - - [x@1 v="a]b"] seq=${s(7)}`), want: { extraSd: '', msg: `[x@1 v="a]b"] seq=${s(7)}` }, repaired: true },
    { seq: s(8), frame: raw(`<13>1 - h a - - [x@1 v="1" ] seq=${s(8)}`), want: { extraSd: '', msg: `[x@1 v="1" ] seq=${s(8)}` }, repaired: true },
    { seq: s(9), frame: raw(`<13>1 2026-13-01T10:00:00Z h a - - - seq=${s(9)}`), want: { hostname: 'h', msg: `seq=${s(9)}` }, repaired: false },
    { seq: s(10), frame: raw(`<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog 8710 ID47 [exampleSDID@32473 iut="3"] seq=${s(10)}`), want: { pri: 165, hostname: 'mymachine.example.com', appName: 'evntslog', procId: '8710', extraSd: '[exampleSDID@32473 iut="3"]', msg: `seq=${s(10)}` }, repaired: false },
  ];
}

const octet = (b: Buffer): Buffer => Buffer.concat([Buffer.from(`${b.length} `), b]);

/** An octet count that ends one byte inside "é": the rest of the character starts the next frame. */
function cutCharacter(seq: string): Buffer {
  const body = raw(`<13>1 - h a - - - seq=${seq} `, E_ACUTE);
  return Buffer.concat([Buffer.from(`${body.length - 1} `), body, Buffer.from(` seq=${seq}b\n`)]);
}

async function sendUdp(port: number, frames: Buffer[]): Promise<void> {
  const sock = dgram.createSocket('udp4');
  for (const f of frames) await new Promise<void>((resolve, reject) => sock.send(f, port, '127.0.0.1', (err) => (err ? reject(err) : resolve())));
  await new Promise<void>((resolve) => sock.close(() => resolve()));
}

const seqOf = (msg: string): string | undefined => /seq=(\w+)/.exec(msg)?.[1];

describe('header grammar, end to end', () => {
  it('TCP and UDP: every frame written follows RFC 5424, MSG keeps its bytes, repairs are counted', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, output: '      timestamp: source' })));
    const tcp = relay.port('t', 'tcp/0');
    const udp = relay.port('t', 'udp/0');
    const overTcp = cases('t');
    const overUdp = cases('u').filter((c) => !c.frame.includes(0x0a));
    // One connection per frame: each is a read of its own, pure ASCII or not.
    for (const c of overTcp) await sendTcp(tcp, octet(c.frame));
    await sendTcp(tcp, cutCharacter('t11'));
    await sendUdp(udp, overUdp.map((c) => c.frame));
    const total = overTcp.length + 2 + overUdp.length;
    await vi.waitFor(() => expect(intake.frames).toHaveLength(total), { timeout: 15_000 });

    const bySeq = new Map<string, Rfc5424Frame>();
    for (const f of intake.frames) {
      const m = assertRfc5424Frame(f);
      expect(m.intakeKey).toBe(TEST_KEY);
      expect(m.msgId).toBe('LOG');
      bySeq.set(seqOf(m.msg) ?? '', m);
    }
    for (const c of [...overTcp, ...overUdp]) expect(bySeq.get(c.seq), c.seq).toMatchObject(c.want);
    expect(bySeq.get('t9')!.timestamp).not.toMatch(/^2026-13/); // not a date: the reception time instead
    expect(bySeq.get('t11')!.msg).toBe('seq=t11 \uFFFD');
    expect(bySeq.get('t11b')!.msg).toBe('\uFFFD seq=t11b');

    const repaired = [...overTcp, ...overUdp].filter((c) => c.repaired).length;
    expect(await relay.metric('intake_relay_events_modified_total', { reason: 'invalid_header' })).toBe(repaired);
    expect(await relay.metric('intake_relay_events_modified_total', { reason: 'invalid_utf8' })).toBe(2);
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: total, sent: total, dropped: 0, balanced: true }), { timeout: 10_000 });
    expect(intake.protocolErrors).toEqual([]);
  });

  it('syslog-ng, a strict RFC 5424 receiver, finds every field and the intake key in each frame', async () => {
    const port = await freePort();
    const peer = track(startSyslogNg(syslogNgIntake(port, TEMPLATE)));
    const out = join(peer.dir, 'out.log');
    await peer.listening(port);
    const relay = track(await startRelay(relayYaml({ intakePort: port, output: '      timestamp: source' })));
    const tcp = relay.port('t', 'tcp/0');
    const all = cases('t');
    for (const c of all) await sendTcp(tcp, octet(c.frame));
    await vi.waitFor(() => expect(fileLines(out)).toHaveLength(all.length), { timeout: 15_000 });
    const got = new Map(fileLines(out).map((l) => {
      const [pri, host, program, pid, msgid, key, sdata, msg] = l.split('|') as [string, string, string, string, string, string, string, string];
      return [seqOf(msg) ?? l, { pri: Number(pri), hostname: host, appName: program, procId: pid, msgId: msgid, intakeKey: key, sdata, msg }];
    }));
    for (const c of all) {
      const { extraSd, timestamp: _ts, ...fields } = c.want;
      expect(got.get(c.seq), c.seq).toMatchObject({ ...fields, msgId: 'LOG', intakeKey: TEST_KEY, sdata: `[SEKOIA@53288 intake_key="${TEST_KEY}"]${extraSd ?? ''}` });
    }
    await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: all.length, sent: all.length, balanced: true }), { timeout: 10_000 });
  });
});

const TEMPLATE = '${PRI}|${HOST}|${PROGRAM}|${PID}|${MSGID}|${.SDATA.SEKOIA@53288.intake_key}|${SDATA}|${MSG}\\n';
