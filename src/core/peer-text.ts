// Makes text that came from a peer (an intake's or a proxy's answer, a REST API's error body, a
// socket error's message) safe to keep in an error, a log line or `/status`: intakes and proxies
// that echo the request's Authorization header would otherwise put our keys on the ops port. Known
// secrets go in every form a peer may echo them in, any Authorization / Basic / Bearer value goes
// whatever it holds, control characters become spaces, and the length is bounded.

import { RelayError } from './errors.ts';

export const REDACTED = '[redacted]';
/** Enough for a status line and an error message; an HTML error page is not worth more. */
export const PEER_TEXT_MAX_CHARS = 300;
/** Shorter values would scrub ordinary words; no key is this short. */
const MIN_SECRET_CHARS = 4;
/** A text cut while it was read may end in part of a secret: this much of one goes too. */
const MIN_PARTIAL_CHARS = 4;

/** `Authorization: …`, `"proxy-authorization": "…"`, `authorization=…`: the value (a scheme, a credential). */
const AUTHORIZATION_VALUE = /\b((?:proxy-)?authorization)(["']?[ \t]*[:=][ \t]*["']?)(?:[A-Za-z][\w-]*[ \t]+)?[^\s"'<>,;}&]+/gi;
/** `Basic <token>`, `Bearer <token>`, as in a header or a WWW-Authenticate challenge. */
const SCHEME_TOKEN = /\b(Basic|Bearer)(\s+)([A-Za-z0-9+/_.~-]+=*)/gi;
/** The padding of a base64 form (its forms are unpadded, to match unpadded text too). */
const BASE64_PADDING_LEFT = /\[redacted\]={1,2}(?![A-Za-z0-9])/g;
const CONTROL_OR_SPACE = /[\s\u0000-\u001f\u007f-\u009f]+/g;

/** A credential rather than a word ("Basic authentication"): long, with a digit, a symbol or an inner capital. */
function looksLikeToken(t: string): boolean {
  return t.length >= 8 && /[0-9+/=_.~-]|.[A-Z]/.test(t);
}

const base64 = (s: string | Buffer): string[] => {
  const std = (typeof s === 'string' ? Buffer.from(s) : s).toString('base64').replace(/=+$/, '');
  return [std, std.replace(/\+/g, '-').replace(/\//g, '_')];
};

/** Every form in which `secret` may come back from a peer, longest first once sorted. */
export function secretForms(secret: string): string[] {
  const forms = new Set<string>([secret, encodeURIComponent(secret), encodeURIComponent(secret).replace(/%20/g, '+')]);
  const json = JSON.stringify(secret).slice(1, -1);
  forms.add(json).add(json.replace(/\//g, '\\/'));
  // Whole: the Basic credential of a key as password (":key") or as user ("key:"), and the key.
  for (const s of [`:${secret}`, `${secret}:`, secret]) for (const f of base64(s)) forms.add(f);
  // Inside any longer base64 text ("user:key" of a proxy, an echoed header in a base64 blob) the
  // secret starts at one of three offsets of a 3-byte group: its whole groups encode the same.
  const bytes = Buffer.from(secret);
  for (let k = 0; k < 3; k++) {
    const whole = bytes.subarray(k, k + Math.floor((bytes.length - k) / 3) * 3);
    if (whole.length >= 3) for (const f of base64(whole)) if (f.length >= MIN_SECRET_CHARS) forms.add(f);
  }
  forms.delete('');
  return [...forms];
}

export class PeerTextRedactor {
  readonly #forms: string[];

  /** `secrets`: the keys the peer may have seen (intake key, API key, proxy credentials). */
  constructor(secrets: Iterable<string | undefined>) {
    const forms = new Set<string>();
    for (const s of secrets) if (s && s.length >= MIN_SECRET_CHARS) for (const f of secretForms(s)) forms.add(f);
    // Longest first, so that a form containing another goes whole.
    this.#forms = [...forms].sort((a, b) => b.length - a.length);
  }

  /** `text` with secrets and credentials replaced by [redacted], on one line, at most `maxChars`. */
  clean(text: string, maxChars = PEER_TEXT_MAX_CHARS): string {
    let out = text;
    for (const f of this.#forms) if (out.includes(f)) out = out.replaceAll(f, REDACTED);
    out = this.#cutPartial(out)
      .replace(BASE64_PADDING_LEFT, REDACTED)
      .replace(AUTHORIZATION_VALUE, `$1$2${REDACTED}`)
      .replace(SCHEME_TOKEN, (m, scheme: string, space: string, token: string) => (looksLikeToken(token) ? `${scheme}${space}${REDACTED}` : m))
      .replace(CONTROL_OR_SPACE, ' ')
      .trim();
    if (out.length <= maxChars) return out;
    // Never end on half a surrogate pair.
    const end = /[\uD800-\uDBFF]/.test(out.charAt(maxChars - 2)) ? maxChars - 2 : maxChars - 1;
    return `${out.slice(0, end)}…`;
  }

  /**
   * `e` with its message and its causes' cleaned. A cause goes to the log with the error (message
   * and stack), so one left as it was would undo the cleaning: a cause whose text changes becomes a
   * plain Error with the cleaned message, its name, code and stack frames, and nothing else of what
   * a peer may have put in it (headers, a body).
   */
  cleanError(e: RelayError, maxChars = 600): RelayError {
    const message = this.clean(e.message, maxChars);
    const cause = this.#cleanCause(e.cause, maxChars, 0);
    return message === e.message && cause === e.cause ? e : new RelayError(e.code, message, { cause });
  }

  #cleanCause(c: unknown, maxChars: number, depth: number): unknown {
    if (!(c instanceof Error)) return typeof c === 'string' ? this.clean(c, maxChars) : c;
    const inner = depth < 4 ? this.#cleanCause(c.cause, maxChars, depth + 1) : undefined;
    const message = this.clean(c.message, maxChars);
    if (message === c.message && inner === c.cause) return c;
    const copy = new Error(message, inner === undefined ? undefined : { cause: inner });
    copy.name = c.name;
    const code = (c as NodeJS.ErrnoException).code;
    if (typeof code === 'string') Object.assign(copy, { code });
    const frames = (c.stack ?? '').split('\n').filter((l) => l.startsWith('    at '));
    copy.stack = [`${c.name}: ${message}`, ...frames].join('\n');
    return copy;
  }

  /** A text read only in part may end in the start of a secret. */
  #cutPartial(text: string): string {
    for (const f of this.#forms) {
      for (let n = Math.min(f.length - 1, text.length); n >= MIN_PARTIAL_CHARS; n--) {
        if (text.endsWith(f.slice(0, n))) return `${text.slice(0, text.length - n)}${REDACTED}`;
      }
    }
    return text;
  }
}
