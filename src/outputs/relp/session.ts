// A RELP client session (librelp doc/relp.html, "Session Startup"): the TCP or TLS connection,
// the "open" command with its offers (relp_version, relp_software, commands=syslog), and the
// server's answer checked before any message goes out. Frames the server sends afterwards go to
// the sink's handler: "rsp" answers and the "serverclose" hint.

import net from 'node:net';
import tls from 'node:tls';
import { RelayError } from '../../core/errors.ts';
import type { PeerTextRedactor } from '../../core/peer-text.ts';
import { RelpDeframer, RelpFramingError, parseOffers, parseResponse, relpFrame, type RelpFrameSink } from '../../relp/frame.ts';
import { VERSION } from '../../version.ts';
import { IntakeTls, ResumedHandshakeFailed, againWithoutSession } from '../tls-options.ts';

export interface RelpEndpoint {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** Name checked against the certificate; defaults to `host`. */
  readonly serverName: string | undefined;
  readonly ca: Buffer | undefined;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
  readonly connectTimeoutMs: number;
  /** Cleans what the server says before it goes into an error (an intake may echo a message, key and all). */
  readonly peerText?: PeerTextRedactor;
}

/** What the client offers; librelp (rsyslog's omrelp) offers the same, with relp_version=0. */
export const CLIENT_OFFERS = `relp_version=0\nrelp_software=intake-relay,${VERSION}\ncommands=syslog`;
/** The largest frame a server sends us: answers (an "open" answer lists offers; rsp texts are short). */
const MAX_SERVER_FRAME = 64 * 1024;
/**
 * The session's one read buffer: reads go to the deframer in it (the socket's `onread`), not as a
 * Buffer and a stream event each. An intake answers every message, often one TLS record per
 * answer: Node's stream path (push, a tick scheduled per read) cost more than the answer itself.
 * 16 KiB: the most one TLS record holds.
 */
const READ_BUFFER_BYTES = 16 * 1024;

export interface OpenSession {
  readonly socket: net.Socket;
  /** The server's relp_software offer, for the log ('' when it gave none). */
  readonly software: string;
  /** Transaction number of the first message (the open took 1). */
  readonly firstTxnr: number;
  /**
   * Hands the frames the server sends from now on (answers, hints) to `sink`, then calls
   * `afterRead` once per read; framing errors go to `onError`.
   */
  receive(sink: RelpFrameSink, onError: (err: RelayError) => void, afterRead: () => void): void;
}

/**
 * Connects, opens a RELP session and checks the server's offers: it must speak a relp_version
 * and accept the syslog command. Rejects with a RelayError saying which step failed. `intakeTls`:
 * the output's secure context and session to resume (a one-off check makes its own).
 */
export function openSession(o: RelpEndpoint, signal: AbortSignal, intakeTls?: IntakeTls): Promise<OpenSession> {
  const secure = o.tls ? (intakeTls ?? new IntakeTls({ name: o.serverName ?? o.host, ca: o.ca, cert: o.cert, key: o.key })) : undefined;
  return againWithoutSession(() => openOnce(o, signal, secure), signal);
}

/**
 * One attempt: connect (TLS when set), send "open", read its answer. ~90 lines as one promise on
 * purpose: the socket's events, the timer and the abort all settle it, and each cleans up the same
 * listeners.
 */
function openOnce(o: RelpEndpoint, signal: AbortSignal, secure: IntakeTls | undefined): Promise<OpenSession> {
  const where = `${o.host}:${o.port}`;
  return new Promise((resolve, reject) => {
    const readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    const onread: net.OnReadOpts = {
      buffer: readBuffer,
      callback: (n: number) => {
        read(readBuffer.subarray(0, n));
        return true;
      },
    };
    const socket: net.Socket = secure ? secure.connect(o.host, o.port, onread) : net.connect({ host: o.host, port: o.port, onread });
    const timer = setTimeout(() => fail(new RelayError('ERELAY_CONNECT_TIMEOUT', `RELP session with ${where} not open after ${o.connectTimeoutMs} ms.`)), o.connectTimeoutMs);
    const onAbort = (): void => fail(new RelayError('ERELAY_SHUTDOWN', 'Connect aborted by shutdown.'));
    signal.addEventListener('abort', onAbort, { once: true });
    let settled = false;
    let handler: RelpFrameSink | undefined;
    let handlerError: ((err: RelayError) => void) | undefined;
    let handlerRead: (() => void) | undefined;
    // What the read that carried the open's answer also carried (frames, an oversized frame, a
    // framing error), kept for the handler (frames copied out of the read buffer): receive() is
    // called only after the open resolved.
    const early: ((sink: RelpFrameSink, onError: (err: RelayError) => void) => void)[] = [];
    const cleanup = (): void => {
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    function fail(err: unknown): void {
      if (settled) return;
      cleanup();
      socket.destroy();
      reject(secure?.failed(socket as tls.TLSSocket, err) ? new ResumedHandshakeFailed(err) : err);
    }
    const opening: RelpFrameSink = {
      frame(txnr, command, buf, start, end) {
        if (settled) {
          if (handler) handler.frame(txnr, command, buf, start, end);
          else {
            const data = Buffer.from(buf.subarray(start, end));
            early.push((sink) => sink.frame(txnr, command, data, 0, data.length));
          }
          return;
        }
        if (command === 'serverclose') return fail(new RelayError('ERELAY_RELP_OPEN', `RELP server ${where} closed the session while it opened.`));
        if (command !== 'rsp' || txnr !== 1) return fail(new RelayError('ERELAY_RELP_PROTOCOL', `RELP server ${where} answered the open with "${command}" (transaction ${txnr}).`));
        const rsp = parseResponse(buf, start, end);
        if (!rsp || rsp.code !== 200) {
          const said = rsp ? `${rsp.code} ${o.peerText ? o.peerText.clean(rsp.text) : rsp.text}` : 'an answer without a code';
          return fail(new RelayError('ERELAY_RELP_OPEN', `RELP server ${where} refused the session: ${said}.`));
        }
        const offers = parseOffers(rsp.data);
        if (!offers.has('relp_version')) return fail(new RelayError('ERELAY_RELP_OPEN', `RELP server ${where} gave no relp_version in its answer to the open.`));
        if (!(offers.get('commands') ?? []).includes('syslog')) return fail(new RelayError('ERELAY_RELP_OPEN', `RELP server ${where} does not accept the syslog command (commands=${(offers.get('commands') ?? []).join(',')}).`));
        cleanup();
        socket.off('error', fail);
        socket.off('close', closed);
        resolve({
          socket,
          software: (offers.get('relp_software') ?? [])[0] ?? '',
          firstTxnr: 2,
          receive(sink, onError, afterRead) {
            handler = sink;
            handlerError = onError;
            handlerRead = afterRead;
            const first = early.splice(0);
            for (const replay of first) replay(sink, onError);
            if (first.length > 0) afterRead();
          },
        });
      },
      oversized(txnr, command, datalen) {
        if (settled) {
          if (handler) handler.oversized(txnr, command, datalen);
          else early.push((sink) => sink.oversized(txnr, command, datalen));
          return;
        }
        fail(new RelayError('ERELAY_RELP_PROTOCOL', `RELP server ${where} sent a ${datalen}-byte "${command}" frame (transaction ${txnr}): more than any answer needs.`));
      },
    };
    const deframer = new RelpDeframer(MAX_SERVER_FRAME, opening, true);
    function closed(): void {
      fail(new RelayError('ERELAY_RELP_OPEN', `RELP server ${where} closed the connection before answering the open.`));
    }
    function read(chunk: Buffer): void {
      try {
        deframer.push(chunk);
        handlerRead?.();
      } catch (err) {
        if (!(err instanceof RelpFramingError)) throw err;
        const e = new RelayError('ERELAY_RELP_PROTOCOL', `RELP server ${where} sent something that is not RELP (${err.message}).`);
        if (!settled) fail(e);
        else if (handlerError) handlerError(e);
        else early.push((_sink, onError) => onError(e));
      }
    }
    socket.once('error', fail);
    socket.once('close', closed);
    socket.once(o.tls ? 'secureConnect' : 'connect', () => {
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 30_000);
      socket.write(relpFrame(1, 'open', CLIENT_OFFERS));
    });
  });
}
