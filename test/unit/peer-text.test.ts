// Redaction of peer text: every form a key can come back in goes, the rest of the message stays.
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { RelayError } from '../../src/core/errors.ts';
import { PeerTextRedactor, REDACTED, secretForms } from '../../src/core/peer-text.ts';
import { createLogger } from '../../src/telemetry/log.ts';

const KEY = 'AbCdEfGh0123456789IjKlMnOpQrStUv';
const b64 = (s: string): string => Buffer.from(s).toString('base64');
const b64url = (s: string): string => Buffer.from(s).toString('base64url');

/** Every encoding of `key` a test must not find, padded and not. */
function leaks(text: string, key: string): string[] {
  const forms = [key, encodeURIComponent(key), b64(`:${key}`), b64(key), b64(`${key}:`), b64url(`:${key}`), b64url(key)];
  return forms.flatMap((f) => [f, f.replace(/=+$/, '')]).filter((f) => text.includes(f));
}

describe('PeerTextRedactor', () => {
  const r = new PeerTextRedactor([KEY]);

  it.each([
    ['the raw key', `invalid key ${KEY} for intake`],
    ['the Basic credential', `echo: Basic ${b64(`:${KEY}`)} was refused`],
    ['the Basic credential, unpadded', `cred=${b64(`:${KEY}`).replace(/=+$/, '')}!`],
    ['the key in base64', `{"decoded":"${b64(KEY)}"}`],
    ['the key as Basic user', `user ${b64(`${KEY}:`)}`],
    ['the key in base64url', `${b64url(`:${KEY}`)} and ${b64url(KEY)}`],
    ['the key URL-encoded in a query', `GET /x?key=${encodeURIComponent(KEY)}&a=1`],
    ['the key in a JSON string', JSON.stringify({ token: KEY })],
  ])('removes %s and keeps the rest', (_what, text) => {
    const out = r.clean(text);
    expect(leaks(out, KEY)).toEqual([]);
    expect(out).toContain(REDACTED);
    const rest = text.split(/[A-Za-z0-9+/=_%-]{20,}/).join('').replace(/\s+/g, ' ').trim();
    for (const word of rest.split(/[^A-Za-z]+/).filter((w) => w.length > 2 && w !== 'Basic')) expect(out).toContain(word);
  });

  it('removes a key with characters that URL, JSON and base64 encode differently', () => {
    const key = 'p@ss w/rd+"=ü\\é_0123';
    const rk = new PeerTextRedactor([key]);
    const text = `a ${key} b ${encodeURIComponent(key)} c ${JSON.stringify(key)} d ${b64(`:${key}`)} e ${b64url(key)} f ${encodeURIComponent(key).replace(/%20/g, '+')}`;
    const out = rk.clean(text, 1_000);
    expect(leaks(out, key)).toEqual([]);
    expect(out).not.toContain(JSON.stringify(key).slice(1, -1));
    expect(out).toMatch(/^a \[redacted\] b \[redacted\] c "\[redacted\]" d \[redacted\] e \[redacted\] f \[redacted\]$/);
  });

  it('finds the key inside any longer base64 text, at each of the three byte offsets', () => {
    for (const prefix of ['', 'u', 'us', 'user:']) {
      const blob = b64(`${prefix}${KEY}-and-more-text`);
      const out = r.clean(`proxy said ${blob} end`);
      expect(out).toContain(REDACTED);
      // What is left around the marker is at most the few characters that mix the key with its neighbours.
      expect(out.replace(/^proxy said /, '').replace(/ end$/, '').replace(REDACTED, '').length).toBeLessThanOrEqual(blob.length - 36);
    }
  });

  it('removes any Authorization, Basic or Bearer value, whoever it belongs to', () => {
    const out = r.clean('Authorization: Basic dXNlcjpwYXNzd29yZA==\r\nProxy-Authorization: Negotiate YIIabc\n{"authorization":"Bearer eyJhbGciOiJIUzI1NiJ9.x.y"} token Bearer abcDEF123456 done', 1_000);
    expect(out).toBe('Authorization: [redacted] Proxy-Authorization: [redacted] {"authorization":"[redacted]"} token Bearer [redacted] done');
  });

  it('keeps words after Basic and Bearer that are not credentials', () => {
    expect(r.clean('Basic authentication failed; Bearer token required; WWW-Authenticate: Basic realm="intake"')).toBe(
      'Basic authentication failed; Bearer token required; WWW-Authenticate: Basic realm="intake"',
    );
  });

  it('removes the start of a key at the end of a text that was cut while read', () => {
    expect(r.clean(`error: key ${KEY.slice(0, 12)}`)).toBe(`error: key ${REDACTED}`);
    expect(r.clean(`error: ${b64(`:${KEY}`).slice(0, 9)}`)).toBe(`error: ${REDACTED}`);
  });

  it('puts the text on one line without control characters, and bounds its length', () => {
    expect(r.clean('a\r\n\tb\u0000c\u001b[31md\u009b  e')).toBe('a b c [31md e');
    const long = r.clean(`${'x'.repeat(1_000)}${KEY}`);
    expect(long).toHaveLength(300);
    expect(long.endsWith('…')).toBe(true);
    // The key is removed before the cut, so no part of it survives at the edge.
    expect(r.clean(`${'x'.repeat(291)}${KEY}`)).toBe(`${'x'.repeat(291)}[redacte…`);
    expect(r.clean(`${'x'.repeat(298)}😀😀`)).toBe(`${'x'.repeat(298)}…`);
  });

  it('ignores empty and very short secrets, and knows several', () => {
    const several = new PeerTextRedactor([undefined, '', 'ab', KEY, 'OtherApiKey-0123456789']);
    expect(several.clean(`ab ${KEY} OtherApiKey-0123456789 ${b64(':OtherApiKey-0123456789')}`)).toBe(`ab ${REDACTED} ${REDACTED} ${REDACTED}`);
  });

  it('secretForms lists the raw, URL, JSON and base64 forms', () => {
    const forms = secretForms(KEY);
    for (const f of [KEY, b64(`:${KEY}`).replace(/=+$/, ''), b64(KEY).replace(/=+$/, ''), b64url(`:${KEY}`)]) expect(forms).toContain(f);
  });
});

describe('PeerTextRedactor on text already cleaned', () => {
  it('gives the same text again (an error message cleaned where it was made, then where it is printed)', () => {
    const r = new PeerTextRedactor([KEY]);
    const once = r.clean(`<pre>Authorization: Basic ${b64(`:${KEY}`)}\nX-Key: ${b64(KEY)}</pre> Bearer abcDEF123456 end`);
    expect(once).toBe('<pre>Authorization: [redacted] X-Key: [redacted]</pre> Bearer [redacted] end');
    expect(r.clean(once)).toBe(once);
  });

  it('cleanError cleans the causes too, which the log writes with the error (message and stack)', () => {
    const lines: string[] = [];
    const log = createLogger('info', new Writable({ write: (c: Buffer, _e, cb) => { lines.push(String(c)); cb(); } }) as never);
    const raw = Object.assign(new Error(`proxy said: Proxy-Authorization: Basic ${b64(`:${KEY}`)} key=${KEY}`), { code: 'EPROTO', headers: { 'x-echo': KEY } });
    const e = new RelayError('ERELAY_CONNECTION_LOST', `connect failed: ${raw.message}`, { cause: raw });
    const r = new PeerTextRedactor([KEY]);
    const clean = r.cleanError(e);
    log.error({ err: clean }, 'Delivery failed');
    const line = lines.join('');
    expect(line).toContain('Delivery failed');
    expect(leaks(line, KEY)).toEqual([]);
    // What is not the peer's stays: codes, the cause's name and its frames.
    const cause = clean.cause as NodeJS.ErrnoException;
    expect([clean.code, cause.code, cause.name]).toEqual(['ERELAY_CONNECTION_LOST', 'EPROTO', 'Error']);
    expect(cause.stack).toMatch(/^Error: proxy said: Proxy-Authorization: \[redacted\] key=\[redacted\]\n {4}at /);
    expect(cause).not.toHaveProperty('headers');
    // Nothing to clean: the same error.
    const plain = new RelayError('ERELAY_CONNECTION_LOST', 'refused', { cause: new Error('ECONNREFUSED') });
    expect(r.cleanError(plain)).toBe(plain);
  });
});
