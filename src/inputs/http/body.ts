// An HTTP request's body within its limits (max_body_bytes as received, max_decompressed_bytes
// inflated) and the listener's memory budget: each chunk is taken from the budget as it arrives,
// and gzip is inflated as a stream into it, so a bomb is refused within one chunk of a limit
// instead of being inflated whole, however many arrive at once.

import type http from 'node:http';
import { createGunzip } from 'node:zlib';
import type { BudgetLease } from './budget.ts';
import { HttpError } from './error.ts';

export interface BodyLimits {
  readonly maxBodyBytes: number;
  readonly maxDecompressedBytes: number;
}

/** The body, gunzipped if so encoded; throws an HttpError (client_closed if the client went away). */
export async function readBody(req: http.IncomingMessage, limits: BodyLimits, lease: BudgetLease): Promise<Buffer> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') throw new HttpError(415, 'unsupported_encoding', `Content-Encoding ${encoding} is not supported: use gzip or none.`);
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  // The body is read as JSON or text whatever it is labelled (curl --data labels it as a form);
  // only multipart, a different body format altogether, is refused.
  if (type.startsWith('multipart/')) {
    throw new HttpError(415, 'unsupported_media_type', `Content-Type ${type} is not supported: send JSON or plain text.`);
  }
  const max = limits.maxBodyBytes;
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > max) throw new HttpError(413, 'body_too_large', `Body of ${declared} bytes exceeds ${max}.`);
  // Refused before a byte of it is read when its declared length cannot fit now.
  refuseUnless(lease.fits(declared), lease, 'The body');
  // With a declared length the chunks are copied into one buffer as they come (its pages take
  // memory only once written), so the body is never held twice; otherwise they are joined at the end.
  const whole = declared > 0 ? Buffer.allocUnsafe(declared) : undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    // Not destroyed on a refusal: the answer goes out on the same connection.
    for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
      if (size + chunk.length > max) throw new HttpError(413, 'body_too_large', `Body exceeds ${max} bytes.`);
      refuseUnless(lease.take(chunk.length), lease, 'The body');
      if (whole) chunk.copy(whole, size);
      else chunks.push(chunk);
      size += chunk.length;
    }
  } catch (err) {
    if (err instanceof HttpError) throw err;
    // The only error a request stream reports: the connection ended before the body did.
    throw new HttpError(400, 'client_closed', 'The client closed the connection before the end of the body.');
  }
  const raw = whole ?? (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
  if (encoding !== 'gzip') return raw;
  const inflated = await inflate(raw, limits.maxDecompressedBytes, lease);
  lease.give(raw.length);
  return inflated;
}

async function inflate(raw: Buffer, max: number, lease: BudgetLease): Promise<Buffer> {
  const gunzip = createGunzip({ chunkSize: 64 * 1024 });
  gunzip.end(raw);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    // Leaving the loop destroys the stream: nothing is inflated past the chunk refused.
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > max) throw new HttpError(413, 'body_too_large', `Body exceeds ${max} bytes once decompressed.`);
      refuseUnless(lease.take(chunk.length), lease, 'The body once decompressed');
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw new HttpError(400, 'bad_request', 'Body is not valid gzip.');
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
}

/** 429 when the other requests in flight hold too much of the budget; 413 when even all of it is too little. */
export function refuseUnless(r: 'ok' | 'later' | 'never', lease: BudgetLease, what: string): void {
  if (r === 'later') {
    throw new HttpError(429, 'over_budget', 'The relay holds as much request data as max_inflight_bytes allows: retry later.', { 'retry-after': '1' });
  }
  if (r === 'never') throw new HttpError(413, 'body_too_large', `${what} needs more memory than max_inflight_bytes (${lease.capacity}) allows.`);
}
