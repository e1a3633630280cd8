// A strict RFC 5424 (§6) checker for the frames the relay writes, read as bytes: the intake
// emulator decodes each frame first, so it can neither see invalid UTF-8 nor a control byte turned
// into U+FFFD. Tests run it on every frame an output wrote:
//   for (const f of intake.frames) assertRfc5424Frame(f);
// It is written from the RFC's ABNF, independently of src/ (sharing code would share its bugs).

import { isUtf8 } from 'node:buffer';

export interface Rfc5424Frame {
  readonly pri: number;
  readonly timestamp: string;
  /** '' for NILVALUE. */
  readonly hostname: string;
  readonly appName: string;
  readonly procId: string;
  readonly msgId: string;
  /** The PARAM-VALUE of the first element, [SEKOIA@53288 intake_key="..."], unescaped. */
  readonly intakeKey: string;
  /** The SD-ELEMENTs after the intake key element, verbatim. */
  readonly extraSd: string;
  /** MSG ('' when the frame has none), decoded. */
  readonly msg: string;
}

const SEKOIA = '[SEKOIA@53288 intake_key="';
const TIMESTAMP = /^(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

/** What is wrong with `frame` (one frame, without its octet count); empty when nothing. */
export function rfc5424Problems(frame: Buffer): string[] {
  try {
    readFrame(frame);
    return [];
  } catch (err) {
    return [(err as Error).message];
  }
}

/** The frame's fields; throws, quoting the frame, unless it follows RFC 5424 exactly. */
export function assertRfc5424Frame(frame: Buffer): Rfc5424Frame {
  try {
    return readFrame(frame);
  } catch (err) {
    throw new Error(`not RFC 5424: ${(err as Error).message} in ${JSON.stringify(frame.toString('latin1'))}`);
  }
}

/** The frames of an octet-counted stream (RFC 5425 §4.3); throws on bad framing or a partial frame. */
export function octetFrames(stream: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let pos = 0;
  while (pos < stream.length) {
    const sp = stream.indexOf(0x20, pos);
    const len = stream.toString('latin1', pos, sp);
    if (sp < 0 || !/^[1-9]\d{0,8}$/.test(len)) throw new Error(`no octet count at byte ${pos}`);
    const end = sp + 1 + Number(len);
    if (end > stream.length) throw new Error(`frame at byte ${pos} is cut`);
    out.push(stream.subarray(sp + 1, end));
    pos = end;
  }
  return out;
}

function readFrame(b: Buffer): Rfc5424Frame {
  const s = b.toString('latin1'); // one character per byte: offsets are byte offsets
  let i = 0;
  const fail = (what: string): never => {
    throw new Error(`${what} at byte ${i}`);
  };
  // PRI VERSION SP
  const pri = /^<(0|[1-9]\d{0,2})>1 /.exec(s);
  if (!pri || Number(pri[1]) > 191) fail('PRI or VERSION');
  i = (pri as RegExpExecArray)[0].length;
  const field = (name: string, max: number): string => {
    const sp = s.indexOf(' ', i);
    if (sp < 0) fail(`${name} not followed by SP`);
    const v = s.slice(i, sp);
    if (v.length === 0 || v.length > max) fail(`${name} of ${v.length} bytes (1..${max})`);
    for (let k = 0; k < v.length; k++) {
      const c = v.charCodeAt(k);
      if (c < 33 || c > 126) fail(`${name} byte 0x${c.toString(16)} outside PRINTUSASCII`);
    }
    i = sp + 1;
    return v === '-' ? '' : v;
  };
  const timestamp = field('TIMESTAMP', 32);
  if (timestamp !== '') {
    const t = TIMESTAMP.exec(timestamp);
    if (!t) fail(`TIMESTAMP ${JSON.stringify(timestamp)}`);
    const [, y, m, d] = (t as RegExpExecArray).map(Number) as [number, number, number, number];
    const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
    const days = m === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31;
    if (d > days) fail(`TIMESTAMP day ${d} of a ${days}-day month`);
  }
  const hostname = field('HOSTNAME', 255);
  const appName = field('APP-NAME', 48);
  const procId = field('PROCID', 128);
  const msgId = field('MSGID', 32);
  // STRUCTURED-DATA: the intake key element first, then SD-ELEMENTs, nothing else.
  if (!s.startsWith(SEKOIA, i)) fail('first SD-ELEMENT is not [SEKOIA@53288 intake_key="..."]');
  const keyStart = i + SEKOIA.length - 1;
  i = element(s, i, fail);
  const key = s.slice(keyStart, i - 1);
  if (!/^"[^"\\\]]*"$/.test(key)) fail('intake_key element with other parameters, or escapes');
  const sdStart = i;
  // Each SD-ID once (§6.3.2), the intake key's included.
  const ids = new Set(['SEKOIA@53288']);
  while (s.charCodeAt(i) === 0x5b) {
    const id = /^\[([^ \]]*)/.exec(s.slice(i, i + 40))?.[1] ?? '';
    if (ids.has(id)) fail(`SD-ID ${id} repeated`);
    ids.add(id);
    i = element(s, i, fail);
  }
  // Nothing, or SP MSG.
  if (i < s.length && s.charCodeAt(i) !== 0x20) fail('STRUCTURED-DATA not followed by SP or the end');
  if (!isUtf8(b)) fail('invalid UTF-8 (MSG or a PARAM-VALUE)');
  return {
    pri: Number((pri as RegExpExecArray)[1]),
    timestamp, hostname, appName, procId, msgId,
    intakeKey: key.slice(1, -1),
    extraSd: b.toString('utf8', sdStart, i),
    msg: i < s.length ? b.toString('utf8', i + 1) : '',
  };
}

/** Position after the SD-ELEMENT at `i` (RFC 5424 §6.3): [SD-ID *(SP PARAM-NAME="PARAM-VALUE")]. */
function element(s: string, start: number, fail: (what: string) => never): number {
  let i = start + 1;
  const name = (what: string): void => {
    const from = i;
    while (i < s.length && /[\x21-\x7e]/.test(s[i] as string) && !'= ]"'.includes(s[i] as string)) i++;
    if (i === from || i - from > 32) fail(`${what} of ${i - from} characters (1..32 PRINTUSASCII except = SP ] ")`);
  };
  name('SD-ID');
  for (;;) {
    if (s[i] === ']') return i + 1;
    if (s[i] !== ' ') fail('SD-ELEMENT not closed by ]');
    i++;
    name('PARAM-NAME');
    if (s[i] !== '=' || s[i + 1] !== '"') fail('PARAM-NAME not followed by ="');
    i += 2;
    // PARAM-VALUE: '"', '\' and ']' must be escaped; a backslash before another byte is itself.
    for (;;) {
      if (i >= s.length) fail('PARAM-VALUE not closed');
      const c = s[i];
      if (c === '\\') i += 2;
      else if (c === ']') fail('unescaped ] in PARAM-VALUE');
      else if (c === '"') break;
      else i++;
    }
    i++;
  }
}
