// A local stand-in for the intake's syslog endpoint: TLS, octet-counted frames (RFC 5425 §4.3),
// RFC 5424 header, and the SEKOIA@53288 intake_key element first. It checks every frame and reports
// each message with its verdict, so a newcomer sees what the intake would get. Used by `npm start`
// when no key is set, by `intake-relay emulate`, by the tests and by the benchmark.

import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { selfSignedCertificate } from './self-signed.ts';
import { SEKOIA_SD_ID } from '../syslog/format.ts';

/** Key used towards the emulator for intakes that have none (emulator.when: no_intake_key). */
export const EMULATOR_DEMO_KEY = 'emulatorDemoKey0000000000000000';

export interface ReceivedMessage {
  readonly raw: string;
  readonly pri: number;
  readonly timestamp: string;
  readonly hostname: string;
  readonly appName: string;
  readonly procId: string;
  readonly msgId: string;
  /** The intake key found in the first SD element ('' when missing). */
  readonly intakeKey: string;
  /** SD elements after the intake key element, verbatim. */
  readonly extraSd: string;
  readonly message: string;
  /** What the intake would object to; empty when the frame is valid. */
  readonly problems: readonly string[];
}

export interface EmulatorOptions {
  readonly host?: string;
  readonly port?: number;
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  /** Check 1 frame in N in full (the rest: framing only). Default 1 (every frame). */
  readonly checkEvery?: number;
  readonly onMessage?: (m: ReceivedMessage) => void;
  /** Every frame's bytes as read, without the octet count (a view: copy it to keep it). */
  readonly onFrame?: (frame: Buffer) => void;
  /** A framing error: the connection is closed, as the intake would. */
  readonly onProtocolError?: (msg: string) => void;
}

const HEADER = /^<(\d{1,3})>1 (\S+) (\S+) (\S+) (\S+) (\S+) /;
const KEY_ELEMENT = new RegExp(`^\\[${SEKOIA_SD_ID.replace('@', '@')} intake_key="([^"\\\\\\]]*)"\\]`);
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$/;
const MAX_EVENT = 250 * 1024;

export function checkMessage(raw: string): ReceivedMessage {
  const problems: string[] = [];
  const h = HEADER.exec(raw);
  if (!h) {
    return { raw, pri: -1, timestamp: '', hostname: '', appName: '', procId: '', msgId: '', intakeKey: '', extraSd: '', message: raw, problems: ['no RFC 5424 header'] };
  }
  const [, priS, timestamp, hostname, appName, procId, msgId] = h as unknown as [string, string, string, string, string, string, string];
  const pri = Number(priS);
  if (pri > 191) problems.push(`PRI ${pri} out of range`);
  if (!RFC3339.test(timestamp)) problems.push(`TIMESTAMP "${timestamp}" is not RFC 3339`);
  if (appName.length > 48) problems.push('APP-NAME longer than 48');
  if (/[^\x21-\x7e]/.test(hostname + appName + procId + msgId)) problems.push('header field outside printable ASCII');
  let rest = raw.slice(h[0].length);
  const k = KEY_ELEMENT.exec(rest);
  let intakeKey = '';
  let extraSd = '';
  if (!k) {
    problems.push(`first SD element is not [${SEKOIA_SD_ID} intake_key="..."]`);
  } else {
    intakeKey = k[1] as string;
    if (!/^[A-Za-z0-9]+$/.test(intakeKey)) problems.push('intake_key is not letters and digits');
    rest = rest.slice(k[0].length);
    let i = 0;
    const ids = new Set<string>([SEKOIA_SD_ID]);
    while (rest[i] === '[') {
      const end = sdEnd(rest, i);
      if (end < 0) {
        problems.push('malformed STRUCTURED-DATA');
        break;
      }
      const id = /^\[([^ \]]*)/.exec(rest.slice(i, end))?.[1] ?? '';
      if (ids.has(id)) problems.push(`SD-ID "${id}" repeated (RFC 5424 §6.3.2)`);
      ids.add(id);
      i = end;
    }
    extraSd = rest.slice(0, i);
    rest = rest.slice(i);
  }
  if (rest !== '' && rest[0] !== ' ') problems.push('no space between STRUCTURED-DATA and MSG');
  if (Buffer.byteLength(raw) > MAX_EVENT) problems.push('event larger than 250 KiB');
  return { raw, pri, timestamp, hostname, appName, procId, msgId, intakeKey, extraSd, message: rest.slice(1), problems };
}

function sdEnd(s: string, start: number): number {
  let quoted = false;
  for (let i = start + 1; i < s.length; i++) {
    const c = s[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ']') return i + 1;
  }
  return -1;
}

export class IntakeEmulator {
  readonly #o: EmulatorOptions;
  readonly #server: tls.Server;
  readonly #sockets = new Set<tls.TLSSocket>();
  readonly caPem: string;
  frames = 0;
  invalid = 0;
  bytes = 0;
  connections = 0;

  constructor(options: EmulatorOptions = {}) {
    this.#o = options;
    let cert = options.cert;
    let key = options.key;
    if (!cert || !key) ({ cert, key } = selfSignedCertificate());
    this.caPem = cert.toString();
    this.#server = tls.createServer({ cert, key, minVersion: 'TLSv1.2' }, (s) => this.#accept(s));
    this.#server.on('tlsClientError', () => {});
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#o.port ?? 0, this.#o.host ?? '127.0.0.1', () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
  }

  #accept(socket: tls.TLSSocket): void {
    this.connections++;
    this.#sockets.add(socket);
    socket.on('close', () => this.#sockets.delete(socket));
    socket.on('error', () => {});
    const every = this.#o.checkEvery ?? 1;
    let pending: Buffer | undefined;
    socket.on('data', (chunk: Buffer) => {
      const buf = pending ? Buffer.concat([pending, chunk]) : chunk;
      pending = undefined;
      let pos = 0;
      while (pos < buf.length) {
        let j = pos;
        let n = 0;
        while (j < buf.length && j - pos < 10 && (buf[j] as number) >= 0x30 && (buf[j] as number) <= 0x39) n = n * 10 + (buf[j++] as number) - 0x30;
        if (j >= buf.length) break;
        if (j === pos || buf[j] !== 0x20 || n === 0) {
          this.#o.onProtocolError?.(`frame at byte ${this.bytes + pos} does not start with an octet count (RFC 5425 §4.3); closing the connection`);
          socket.destroy();
          return;
        }
        if (j + 1 + n > buf.length) break;
        this.frames++;
        this.#o.onFrame?.(buf.subarray(j + 1, j + 1 + n));
        if (this.frames % every === 0) {
          const m = checkMessage(buf.toString('utf8', j + 1, j + 1 + n));
          if (m.problems.length > 0) this.invalid++;
          this.#o.onMessage?.(m);
        }
        pos = j + 1 + n;
      }
      this.bytes += pos;
      if (pos < buf.length) pending = Buffer.from(buf.subarray(pos));
    });
    socket.on('end', () => socket.end());
  }

  /** Stop listening; `graceful` waits for senders to close (they have then been read to the end). */
  async stop(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** A message as the emulator prints it: the key masked, never shown. */
export function maskKey(raw: string): string {
  return raw.replace(/(intake_key=")([^"]*)(")/, (_m, a: string, k: string, b: string) => `${a}${'*'.repeat(Math.min(k.length, 8))}${b}`);
}
