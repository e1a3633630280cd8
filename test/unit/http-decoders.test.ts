// The HTTP input's decoders alone, without a server: each intake-API shape and route format, ?path=,
// keys in the body and in the request, per-event refusals, and the refusals of whole requests, with
// the exact events, answers' refusals and error texts the server passes on.
import { describe, expect, it } from 'vitest';
import { messageText } from '../../src/core/event.ts';
import { BodyBudget } from '../../src/inputs/http/budget.ts';
import {
  decodeArray, decodeBatch, decodeJsons, decodeLines, decodeNdjson, decodePlain, decodePlainBatch, INTAKE_API, routeDecoder,
  type ApiFacts, type Built, type Decoded, type DecodeSettings,
} from '../../src/inputs/http/decoders.ts';
import { HttpError } from '../../src/inputs/http/error.ts';
import { scanJson } from '../../src/inputs/http/json-scan.ts';

const AT = 1_700_000_000_000;
const KEYS = new Map([['key-a', 'intake-a'], ['key-b', 'intake-b']]);

function settings(over: Partial<DecodeSettings> = {}): DecodeSettings {
  return { maxDepth: 4, maxEvents: 5, maxMessageBytes: 16, oversize: 'drop', defaults: { pri: 13, hostname: '', appName: 'app', procId: '' }, ...over };
}

function facts(over: Partial<ApiFacts<string>> = {}): ApiFacts<string> {
  return { sender: '10.0.0.1', receivedAt: AT, lease: new BodyBudget(1 << 20).lease(), key: 'key-a', path: null, target: (k) => KEYS.get(k), ...over };
}

const body = (text: string): Buffer => Buffer.from(text);

function view(b: Built) {
  return { texts: b.events.map(messageText), bytes: b.bytes, refused: b.refused, truncated: b.truncated, repaired: b.repaired };
}

function viewAll(d: Decoded<string>) {
  return { batches: d.batches.map(({ target, built }) => ({ target, ...view(built) })), refused: d.refused, single: d.single };
}

/** One intake's events, nothing refused or repaired. */
function plainly(target: string, texts: string[], single = false) {
  return { batches: [{ target, texts, bytes: Buffer.byteLength(texts.join('')), refused: [], truncated: 0, repaired: 0 }], refused: [], single };
}

/** The refusal `f` throws, as the client gets it. */
function refusal(f: () => unknown) {
  try {
    f();
  } catch (err) {
    if (err instanceof HttpError) return { status: err.status, reason: err.reason, message: err.message, headers: err.headers };
    throw err;
  }
  throw new Error('not refused');
}

const NO_KEY = { status: 401, reason: 'unauthorized', message: 'No intake key: give it as Basic password, X-SEKOIAIO-INTAKE-KEY or ?intake_key=.', headers: { 'www-authenticate': 'Basic realm="intake"' } };
const NOT_SERVED = { status: 401, reason: 'unauthorized', message: 'This intake key is not served here.', headers: { 'www-authenticate': 'Basic realm="intake"' } };
const INVALID_JSON = { status: 400, reason: 'invalid_json', message: 'The body is not valid JSON.', headers: {} };
const TOO_MANY = { status: 413, reason: 'too_many_events', message: 'More than 5 events in one request.', headers: {} };

describe('the intake API by path', () => {
  it('has the five endpoints of the intake', () => {
    expect([...INTAKE_API.keys()]).toEqual(['/jsons', '/plain', '/plain/batch', '/batch', '/array']);
    expect(INTAKE_API.get('/jsons')).toBe(decodeJsons);
    expect(INTAKE_API.get('/array')).toBe(decodeArray);
  });
});

describe('events', () => {
  it('are headerless events from the sender, at the reception time, with the listener defaults', () => {
    const [e] = decodePlain(body('hello'), settings(), facts()).batches[0]!.built.events;
    expect(e).toMatchObject({ start: 0, end: 5, msgStart: 0, sdStart: 0, sdEnd: 0, receivedAt: AT, sender: '10.0.0.1', pri: 13, format: 0, hostname: '10.0.0.1', appName: 'app', procId: '', msgId: '' });
  });

  it('over max_message_bytes are refused by index with oversize: drop, the rest taken', () => {
    const d = decodeJsons(body('["short", "far longer than sixteen", "ok"]'), settings(), facts());
    expect(viewAll(d)).toEqual({
      batches: [{ target: 'intake-a', texts: ['short', 'ok'], bytes: 7, refused: [{ index: 1, error: 'event larger than 16 bytes' }], truncated: 0, repaired: 0 }],
      refused: [],
      single: false,
    });
  });

  it('over max_message_bytes are cut on a character boundary with oversize: truncate', () => {
    // "a" then eight two-byte characters, 17 bytes: a cut at 16 would end inside the last one.
    const d = decodePlain(body(`a${'é'.repeat(8)}`), settings({ oversize: 'truncate' }), facts());
    expect(viewAll(d)).toEqual({ batches: [{ target: 'intake-a', texts: [`a${'é'.repeat(7)}`], bytes: 15, refused: [], truncated: 1, repaired: 0 }], refused: [], single: true });
  });
});

describe('invalid UTF-8 in a body', () => {
  const bad = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));
  it('is replaced by U+FFFD and counted as repaired, per event that holds one, on every path', () => {
    const repaired = (b: Built) => [b.repaired, b.events.map(messageText)];
    expect(repaired(decodePlain(bad('a', [0xff], 'b'), settings(), facts()).batches[0]!.built)).toEqual([1, ['a\uFFFDb']]);
    // A U+FFFD the sender wrote, in a body repaired elsewhere, counts too: after decoding, the two
    // cannot be told apart (an over-count, never a repair left uncounted).
    expect(repaired(decodeJsons(bad('["a', [0xff], '", "ok", "\uFFFD as sent"]'), settings(), facts()).batches[0]!.built)).toEqual([2, ['a\uFFFD', 'ok', '\uFFFD as sent']]);
    expect(repaired(decodeBatch(bad('{"jsons": ["x', [0xc3], '"]}'), settings(), facts()).batches[0]!.built)).toEqual([1, ['x\uFFFD']]);
    expect(repaired(decodeNdjson(bad('"a', [0xfe], '"\n"b"\n'), settings(), facts()))).toEqual([1, ['a\uFFFD', 'b']]);
    // Valid UTF-8, a U+FFFD of its own: nothing repaired.
    expect(decodeJsons(body('["\uFFFD"]'), settings(), facts()).batches[0]!.built.repaired).toBe(0);
  });
});

describe('/plain', () => {
  it('takes the whole body as one event, newlines included, and answers with its one id', () => {
    expect(viewAll(decodePlain(body('one\ntwo\n'), settings(), facts()))).toEqual(plainly('intake-a', ['one\ntwo\n'], true));
  });

  it('needs a key served here', () => {
    expect(refusal(() => decodePlain(body('x'), settings(), facts({ key: undefined })))).toEqual(NO_KEY);
    expect(refusal(() => decodePlain(body('x'), settings(), facts({ key: '' })))).toEqual(NO_KEY);
    expect(refusal(() => decodePlain(body('x'), settings(), facts({ key: 'key-z' })))).toEqual(NOT_SERVED);
  });
});

describe('/plain/batch and routes of lines', () => {
  it('take one event per line, LF or CRLF, skipping empty lines, as ranges of the body itself', () => {
    const raw = body('a\r\nbb\n\n\r\nccc');
    const d = decodePlainBatch(raw, settings(), facts({ key: 'key-b' }));
    // "\r" alone on a line is an empty line once its CR goes with the LF.
    expect(viewAll(d)).toEqual(plainly('intake-b', ['a', 'bb', 'ccc']));
    expect(d.batches[0]!.built.events.every((e) => e.buf === raw)).toBe(true);
  });

  it('replace invalid UTF-8 and count the events repaired', () => {
    const raw = Buffer.from([0x61, 0xff, 0x0a, 0x62, 0x0a, 0xc3, 0x28]);
    expect(view(decodeLines(raw, settings(), facts()))).toEqual({ texts: ['a\uFFFD', 'b', '\uFFFD('], bytes: 4 + 1 + 4, refused: [], truncated: 0, repaired: 2 });
  });

  it('refuse more lines than max_events_per_request, after the key', () => {
    const six = body('1\n2\n3\n4\n5\n6\n');
    expect(refusal(() => decodePlainBatch(six, settings(), facts()))).toEqual(TOO_MANY);
    expect(refusal(() => decodePlainBatch(six, settings(), facts({ key: 'key-z' })))).toEqual(NOT_SERVED);
    expect(viewAll(decodePlainBatch(body('1\n2\n3\n4\n5\n'), settings(), facts())).batches[0]!.texts).toEqual(['1', '2', '3', '4', '5']);
  });

  it('go to the route\'s intake whatever the key', () => {
    const d = routeDecoder('route-intake', 'lines')(body('x\ny\n'), settings(), facts({ key: undefined }));
    expect(viewAll(d)).toEqual(plainly('route-intake', ['x', 'y']));
  });
});

describe('routes of NDJSON', () => {
  it('take strings as their text and other values as their JSON text as sent', () => {
    const d = routeDecoder('r', 'ndjson')(body('"a \\"quoted\\" text"\n{"b": [1, 2]}\n\n  42  \r\nnull\n[true]'), settings(), facts());
    expect(viewAll(d)).toEqual(plainly('r', ['a "quoted" text', '{"b": [1, 2]}', '42', 'null', '[true]']));
  });

  it('refuse a request with a line that is no JSON, naming the line', () => {
    expect(refusal(() => decodeNdjson(body('{"a": 1}\n\n{oops\n'), settings(), facts()))).toEqual({ status: 400, reason: 'invalid_json', message: 'Line 3 is not valid JSON.', headers: {} });
  });

  it('refuse JSON nested deeper than max_depth before parsing it', () => {
    expect(refusal(() => decodeNdjson(body('[[[[["deep"]]]]]\n'), settings(), facts()))).toEqual({ status: 400, reason: 'too_deep', message: 'The body nests deeper than 4 levels (max_depth).', headers: {} });
  });
});

describe('/jsons', () => {
  it('takes a list: strings as they are, other JSON values as their JSON text', () => {
    const d = decodeJsons(body('["one", {"b": [1, 2]}, 3.5, null, true]'), settings(), facts());
    expect(viewAll(d)).toEqual(plainly('intake-a', ['one', '{"b":[1,2]}', '3.5', 'null', 'true']));
  });

  it('takes the list ?path= selects', () => {
    const doc = body('{"events": ["e1", "e2"], "nested": {"list": [{"n": 1}]}, "one": {"a": 1}}');
    expect(viewAll(decodeJsons(doc, settings(), facts({ path: '$.events' })))).toEqual(plainly('intake-a', ['e1', 'e2']));
    expect(viewAll(decodeJsons(doc, settings(), facts({ path: '$.nested.list' })))).toEqual(plainly('intake-a', ['{"n":1}']));
    expect(viewAll(decodeJsons(body('["x"]'), settings(), facts({ path: '$' })))).toEqual(plainly('intake-a', ['x']));
  });

  it('refuses a ?path= that is malformed, selects nothing, or selects no list', () => {
    const doc = body('{"events": ["e1"], "one": {"a": 1}}');
    expect(refusal(() => decodeJsons(doc, settings(), facts({ path: 'events' })))).toEqual({ status: 400, reason: 'path_not_found', message: 'path must look like $.events, not "events".', headers: {} });
    expect(refusal(() => decodeJsons(doc, settings(), facts({ path: '$.missing' })))).toEqual({ status: 400, reason: 'path_not_found', message: 'path $.missing selects nothing in the body.', headers: {} });
    expect(refusal(() => decodeJsons(doc, settings(), facts({ path: '$.events.deeper' })))).toEqual({ status: 400, reason: 'path_not_found', message: 'path $.events.deeper selects nothing in the body.', headers: {} });
    expect(refusal(() => decodeJsons(doc, settings(), facts({ path: '$.one' })))).toEqual({ status: 400, reason: 'not_a_list', message: 'path $.one does not select a list.', headers: {} });
    expect(refusal(() => decodeJsons(doc, settings(), facts()))).toEqual({ status: 400, reason: 'not_a_list', message: 'Expected a JSON list of events (or give ?path=).', headers: {} });
  });

  it('refuses a body that is no JSON before looking at the key, and a bad key before the path', () => {
    expect(refusal(() => decodeJsons(body('["a",'), settings(), facts({ key: 'key-z' })))).toEqual(INVALID_JSON);
    expect(refusal(() => decodeJsons(body('{}'), settings(), facts({ key: 'key-z', path: 'nonsense' })))).toEqual(NOT_SERVED);
    expect(refusal(() => decodeJsons(body('[1, 2, 3, 4, 5, 6]'), settings(), facts()))).toEqual(TOO_MANY);
  });

  it('takes what parsing needs from the request\'s memory budget, and is refused when it cannot have it', () => {
    const doc = body('[{"a": 1}, {"b": 2}]');
    const need = scanJson(doc, 4).parseBytes;
    const budget = new BodyBudget(need);
    decodeJsons(doc, settings(), facts({ lease: budget.lease() }));
    expect(budget.used).toBe(need);
    expect(refusal(() => decodeJsons(doc, settings(), facts({ lease: new BodyBudget(need - 1).lease() })))).toEqual({
      status: 413, reason: 'body_too_large', message: `Parsing the body needs more memory than max_inflight_bytes (${need - 1}) allows.`, headers: {},
    });
    // The first request still holds it all: the next must wait.
    expect(refusal(() => decodeJsons(doc, settings(), facts({ lease: budget.lease() })))).toEqual({
      status: 429, reason: 'over_budget', message: 'The relay holds as much request data as max_inflight_bytes allows: retry later.', headers: { 'retry-after': '1' },
    });
  });
});

describe('/batch', () => {
  it('takes the jsons of the intake the body names, over the request\'s key', () => {
    const d = decodeBatch(body('{"intake_key": "key-b", "jsons": ["x", {"y": 1}, [2]]}'), settings(), facts({ key: 'key-a' }));
    expect(viewAll(d)).toEqual(plainly('intake-b', ['x', '{"y":1}', '[2]']));
  });

  it('uses the request\'s key when the body has none that is a string', () => {
    expect(viewAll(decodeBatch(body('{"jsons": ["x"]}'), settings(), facts()))).toEqual(plainly('intake-a', ['x']));
    expect(viewAll(decodeBatch(body('{"intake_key": 7, "jsons": ["x"]}'), settings(), facts()))).toEqual(plainly('intake-a', ['x']));
    expect(refusal(() => decodeBatch(body('{"jsons": ["x"]}'), settings(), facts({ key: undefined })))).toEqual(NO_KEY);
  });

  it('refuses a key not served here, and a body of another shape', () => {
    expect(refusal(() => decodeBatch(body('{"intake_key": "key-z", "jsons": []}'), settings(), facts()))).toEqual(NOT_SERVED);
    const shape = { status: 400, reason: 'not_a_list', message: 'Expected {"intake_key": "...", "jsons": [...]}.', headers: {} };
    expect(refusal(() => decodeBatch(body('{"intake_key": "key-a", "jsons": {"a": 1}}'), settings(), facts()))).toEqual(shape);
    expect(refusal(() => decodeBatch(body('["x"]'), settings(), facts()))).toEqual(shape);
    expect(refusal(() => decodeBatch(body('"x"'), settings(), facts()))).toEqual(shape);
    expect(refusal(() => decodeBatch(body('{"jsons": [1,'), settings(), facts()))).toEqual(INVALID_JSON);
  });
});

describe('/array', () => {
  it('groups events by the intake of each element\'s key, refusing unserved keys and missing json per element', () => {
    const d = decodeArray(
      body('[{"intake_key": "key-a", "json": "a1"}, {"intake_key": "key-b", "json": {"n": 1}}, {"intake_key": "key-z", "json": "x"}, {"intake_key": "key-a"}, "loose", {"intake_key": "key-a", "json": null}]'),
      settings(),
      facts({ key: undefined }),
    );
    expect(viewAll(d)).toEqual({
      batches: [
        { target: 'intake-a', texts: ['a1', 'null'], bytes: 6, refused: [], truncated: 0, repaired: 0 },
        { target: 'intake-b', texts: ['{"n":1}'], bytes: 7, refused: [], truncated: 0, repaired: 0 },
      ],
      refused: [
        { index: 2, error: 'intake key not served here' },
        { index: 3, error: 'no "json" member' },
        { index: 4, error: 'intake key not served here' },
      ],
      single: false,
    });
  });

  it('refuses a request with no element for an intake served here', () => {
    expect(refusal(() => decodeArray(body('[{"intake_key": "key-z", "json": "x"}]'), settings(), facts()))).toEqual({ status: 401, reason: 'unauthorized', message: 'No element carries an intake key served here.', headers: {} });
    expect(refusal(() => decodeArray(body('[]'), settings(), facts()))).toEqual({ status: 401, reason: 'unauthorized', message: 'No element carries an intake key served here.', headers: {} });
  });

  it('counts max_events_per_request over all intakes', () => {
    const items = ['key-a', 'key-b', 'key-a', 'key-b', 'key-a', 'key-b'].map((k, i) => `{"intake_key": "${k}", "json": ${i}}`);
    expect(refusal(() => decodeArray(body(`[${items.join(',')}]`), settings(), facts()))).toEqual(TOO_MANY);
    expect(decodeArray(body(`[${items.slice(0, 5).join(',')}]`), settings(), facts()).batches.map((b) => b.built.events.length)).toEqual([3, 2]);
  });

  it('refuses a body that is no list, or no JSON', () => {
    expect(refusal(() => decodeArray(body('{"intake_key": "key-a", "json": "x"}'), settings(), facts()))).toEqual({ status: 400, reason: 'not_a_list', message: 'Expected [{"intake_key": "...", "json": ...}, ...].', headers: {} });
    expect(refusal(() => decodeArray(body('[{"intake_key"'), settings(), facts()))).toEqual(INVALID_JSON);
    expect(refusal(() => decodeArray(body('[[[[[{}]]]]]'), settings(), facts()))).toEqual({ status: 400, reason: 'too_deep', message: 'The body nests deeper than 4 levels (max_depth).', headers: {} });
  });
});
