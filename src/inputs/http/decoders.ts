// The HTTP input's decoders: a request's body and what is known of the request in, events out, or
// the refusal of the whole request (thrown as an HttpError, answered and counted by the server).
// The intake's own API (/jsons with ?path=, /plain, /plain/batch, /batch, /array) and the routes'
// formats (lines, ndjson). No I/O: the server (receiver.ts) reads the body within its limits, then
// queues what comes out. Events are ranges of one buffer per request: the body itself for lines,
// one buffer holding every event's text otherwise.

import { isUtf8 } from 'node:buffer';
import type { LogEvent } from '../../core/event.ts';
import { headerlessEvent, type HeaderDefaults } from '../../syslog/parse.ts';
import { utf8Boundary } from '../../core/utf8.ts';
import type { BudgetLease } from './budget.ts';
import { refuseUnless } from './body.ts';
import { HttpError } from './error.ts';
import { scanJson } from './json-scan.ts';

/** A listener's settings for decoding, the same for each of its requests. */
export interface DecodeSettings {
  /** max_depth: JSON nested deeper is refused before it is parsed. */
  readonly maxDepth: number;
  /** max_events_per_request: more gets 413. */
  readonly maxEvents: number;
  readonly maxMessageBytes: number;
  /** What happens to an event over maxMessageBytes. */
  readonly oversize: 'drop' | 'truncate';
  readonly defaults: HeaderDefaults;
}

/** What every decoder knows of a request. */
export interface BodyFacts {
  /** The client's address, the events' sender. */
  readonly sender: string;
  readonly receivedAt: number;
  /** The request's share of the memory budget: parsing JSON takes from it. */
  readonly lease: BudgetLease;
}

/** What the intake API also knows: the key outside the body, ?path=, and the intakes keys select. */
export interface ApiFacts<T> extends BodyFacts {
  /** Basic password, X-SEKOIAIO-INTAKE-KEY or ?intake_key=, if the request gives one. */
  readonly key: string | undefined;
  /** ?path= (for /jsons). */
  readonly path: string | null;
  /** The intake a key selects, if it is served here. */
  target(key: string): T | undefined;
}

/** An event refused while the rest of its request is taken, by its index in the request. */
export interface Refusal {
  readonly index: number;
  readonly error: string;
}

/** The events of a request for one intake. */
export interface Built {
  readonly events: LogEvent[];
  /** Their bytes, all together. */
  readonly bytes: number;
  /** Events over max_message_bytes with oversize: drop. */
  readonly refused: Refusal[];
  /** Events cut to max_message_bytes (oversize: truncate). */
  readonly truncated: number;
  /** Events whose invalid UTF-8 was replaced. */
  readonly repaired: number;
}

/** What an intake-API request holds: events per intake, taken all or none. */
export interface Decoded<T> {
  readonly batches: readonly { readonly target: T; readonly built: Built }[];
  /** /array elements refused before decoding (no key served here, or no "json"): counted as unauthorized. */
  readonly refused: Refusal[];
  /** /plain: the answer names its one event. */
  readonly single: boolean;
}

export type ApiDecoder = <T>(body: Buffer, s: DecodeSettings, f: ApiFacts<T>) => Decoded<T>;

/** /plain: the body is one event. */
export function decodePlain<T>(body: Buffer, s: DecodeSettings, f: ApiFacts<T>): Decoded<T> {
  const target = requireTarget(f, f.key);
  return { batches: [{ target, built: fromStrings([body.toString('utf8')], s, f, body) }], refused: [], single: true };
}

/** /plain/batch: one event per line. */
export function decodePlainBatch<T>(body: Buffer, s: DecodeSettings, f: ApiFacts<T>): Decoded<T> {
  const target = requireTarget(f, f.key);
  return one(target, decodeLines(body, s, f));
}

/** /jsons: a JSON list of events, or one that ?path= selects. */
export function decodeJsons<T>(body: Buffer, s: DecodeSettings, f: ApiFacts<T>): Decoded<T> {
  const doc = parseJsonBody(body, s, f.lease);
  const target = requireTarget(f, f.key);
  const list = select(doc, f.path);
  return one(target, fromStrings(list.map(eventText), s, f, body));
}

/** /batch: {"intake_key": "...", "jsons": [...]}; without intake_key, the request's key. */
export function decodeBatch<T>(body: Buffer, s: DecodeSettings, f: ApiFacts<T>): Decoded<T> {
  const doc = parseJsonBody(body, s, f.lease);
  const jsons = member(doc, 'jsons');
  if (!Array.isArray(jsons)) throw new HttpError(400, 'not_a_list', 'Expected {"intake_key": "...", "jsons": [...]}.');
  const key = member(doc, 'intake_key');
  const target = requireTarget(f, typeof key === 'string' ? key : f.key);
  return one(target, fromStrings(jsons.map(eventText), s, f, body));
}

/** /array: [{"intake_key", "json"}], possibly for several intakes; unknown keys refused per event. */
export function decodeArray<T>(body: Buffer, s: DecodeSettings, f: ApiFacts<T>): Decoded<T> {
  const doc = parseJsonBody(body, s, f.lease);
  if (!Array.isArray(doc)) throw new HttpError(400, 'not_a_list', 'Expected [{"intake_key": "...", "json": ...}, ...].');
  const groups = new Map<T, string[]>();
  const refused: Refusal[] = [];
  doc.forEach((item: unknown, index) => {
    const key = member(item, 'intake_key');
    const t = typeof key === 'string' ? f.target(key) : undefined;
    const json = t === undefined ? undefined : member(item, 'json');
    if (t === undefined || json === undefined) {
      refused.push({ index, error: t === undefined ? 'intake key not served here' : 'no "json" member' });
      return;
    }
    let g = groups.get(t);
    if (!g) groups.set(t, (g = []));
    g.push(eventText(json));
  });
  if (groups.size === 0) throw new HttpError(401, 'unauthorized', 'No element carries an intake key served here.');
  let total = 0;
  for (const g of groups.values()) total += g.length;
  if (total > s.maxEvents) throw tooManyEvents(s);
  return { batches: [...groups].map(([target, strings]) => ({ target, built: fromStrings(strings, s, f, body) })), refused, single: false };
}

/** The intake API by path. */
export const INTAKE_API: ReadonlyMap<string, ApiDecoder> = new Map<string, ApiDecoder>([
  ['/jsons', decodeJsons],
  ['/plain', decodePlain],
  ['/plain/batch', decodePlainBatch],
  ['/batch', decodeBatch],
  ['/array', decodeArray],
]);

/** A route's decoder: its format's, every event for the route's intake. */
export function routeDecoder<T>(target: T, format: 'lines' | 'ndjson'): (body: Buffer, s: DecodeSettings, f: BodyFacts) => Decoded<T> {
  const decode = format === 'ndjson' ? decodeNdjson : decodeLines;
  return (body, s, f) => one(target, decode(body, s, f));
}

/** Lines of the body (LF or CRLF), empty lines skipped: events are ranges of the body itself. */
export function decodeLines(raw: Buffer, s: DecodeSettings, f: BodyFacts): Built {
  // Invalid UTF-8 becomes U+FFFD (counted per event); valid bodies are used in place.
  const repaired = !isUtf8(raw);
  const body = repaired ? Buffer.from(raw.toString('utf8')) : raw;
  const ranges: [number, number][] = [];
  let pos = 0;
  while (pos < body.length) {
    let end = body.indexOf(0x0a, pos);
    const next = end < 0 ? body.length : end + 1;
    if (end < 0) end = body.length;
    if (end > pos && body[end - 1] === 0x0d) end--;
    if (end > pos) ranges.push([pos, end]);
    pos = next;
  }
  if (ranges.length > s.maxEvents) throw tooManyEvents(s);
  const built = build(body, ranges, s, f);
  if (!repaired) return built;
  return { ...built, repaired: built.events.filter((e) => body.subarray(e.start, e.end).includes(REPLACEMENT)).length };
}

/** NDJSON: each line one JSON value; strings are their text, other values their JSON text as sent. */
export function decodeNdjson(body: Buffer, s: DecodeSettings, f: BodyFacts): Built {
  reserveParse(body, s, f.lease);
  const strings: string[] = [];
  let lineNo = 0;
  for (const line of body.toString('utf8').split('\n')) {
    lineNo++;
    const t = line.trim();
    if (t === '') continue;
    let v: unknown;
    try {
      v = JSON.parse(t);
    } catch {
      throw new HttpError(400, 'invalid_json', `Line ${lineNo} is not valid JSON.`);
    }
    strings.push(typeof v === 'string' ? v : t);
  }
  return fromStrings(strings, s, f, body);
}

const REPLACEMENT = Buffer.from('\uFFFD');

function one<T>(target: T, built: Built): Decoded<T> {
  return { batches: [{ target, built }], refused: [], single: false };
}

function tooManyEvents(s: DecodeSettings): HttpError {
  return new HttpError(413, 'too_many_events', `More than ${s.maxEvents} events in one request.`);
}

function requireTarget<T>(f: ApiFacts<T>, key: string | undefined): T {
  const t = key ? f.target(key) : undefined;
  if (t === undefined) {
    throw new HttpError(401, 'unauthorized', key ? 'This intake key is not served here.' : 'No intake key: give it as Basic password, X-SEKOIAIO-INTAKE-KEY or ?intake_key=.', { 'www-authenticate': 'Basic realm="intake"' });
  }
  return t;
}

/** One event as text: strings as they are, anything else as its JSON text. */
function eventText(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** `v[name]` as a property read finds it (own or inherited); undefined when v is no object. */
function member(v: unknown, name: string): unknown {
  return typeof v === 'object' && v !== null ? Reflect.get(v, name) : undefined;
}

/** JSON text within max_depth, and its parse within the memory budget; a deeper body gets 400 before anything recurses on it. */
function reserveParse(body: Buffer, s: DecodeSettings, lease: BudgetLease): void {
  const scan = scanJson(body, s.maxDepth);
  if (scan.tooDeep) throw new HttpError(400, 'too_deep', `The body nests deeper than ${s.maxDepth} levels (max_depth).`);
  refuseUnless(lease.take(scan.parseBytes), lease, 'Parsing the body');
}

function parseJsonBody(body: Buffer, s: DecodeSettings, lease: BudgetLease): unknown {
  reserveParse(body, s, lease);
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new HttpError(400, 'invalid_json', 'The body is not valid JSON.');
  }
}

/** `?path=` as the intake reads it: `$` then `.member` steps (e.g. `$.events`); the result must be a list. */
function select(doc: unknown, path: string | null): unknown[] {
  let v: unknown = doc;
  if (path && path !== '$') {
    if (!path.startsWith('$.')) throw new HttpError(400, 'path_not_found', `path must look like $.events, not "${path}".`);
    for (const step of path.slice(2).split('.')) {
      if (typeof v !== 'object' || v === null || !(step in v)) throw new HttpError(400, 'path_not_found', `path ${path} selects nothing in the body.`);
      v = member(v, step);
    }
  }
  if (!Array.isArray(v)) throw new HttpError(400, 'not_a_list', path ? `path ${path} does not select a list.` : 'Expected a JSON list of events (or give ?path=).');
  return v;
}

/** Events from strings: encoded into one buffer per request, each event a range of it. */
/**
 * Events from the strings decoded out of `body`. Where `body` was no valid UTF-8, its decoding put
 * U+FFFD for each bad sequence: events holding one count as repaired (invalid_utf8).
 */
function fromStrings(strings: readonly string[], s: DecodeSettings, f: BodyFacts, body: Buffer): Built {
  if (strings.length > s.maxEvents) throw tooManyEvents(s);
  let total = 0;
  for (const str of strings) total += Buffer.byteLength(str, 'utf8');
  const buf = Buffer.allocUnsafe(total);
  const ranges: [number, number][] = [];
  let off = 0;
  for (const str of strings) {
    const n = buf.write(str, off, 'utf8');
    ranges.push([off, off + n]);
    off += n;
  }
  const built = build(buf, ranges, s, f);
  if (isUtf8(body)) return built;
  return { ...built, repaired: built.events.filter((e) => buf.subarray(e.start, e.end).includes(REPLACEMENT)).length };
}

/** LogEvents over `buf`; events over max_message_bytes are truncated or refused (counted). */
function build(buf: Buffer, ranges: readonly [number, number][], s: DecodeSettings, f: BodyFacts): Built {
  const events: LogEvent[] = [];
  const refused: Refusal[] = [];
  let bytes = 0;
  let truncated = 0;
  ranges.forEach(([start, endIn], index) => {
    let end = endIn;
    if (end - start > s.maxMessageBytes) {
      if (s.oversize === 'drop') {
        refused.push({ index, error: `event larger than ${s.maxMessageBytes} bytes` });
        return;
      }
      end = utf8Boundary(buf, start, start + s.maxMessageBytes);
      truncated++;
    }
    bytes += end - start;
    events.push(headerlessEvent(buf, start, end, f.receivedAt, f.sender, s.defaults));
  });
  return { events, bytes, refused, truncated, repaired: 0 };
}
