// What components report, in the project's fixed vocabulary, and how they log. Components get an
// implementation bound to their labels (pipeline/instruments.ts) and never touch the metrics
// registry: the names, labels and help texts live in telemetry/, in one place.

import type { Logger } from 'pino';
import type { DropReason } from './contracts.ts';
import type { LogEvent } from './event.ts';

/**
 * Who sent what, for the input's table of senders (pipeline/senders.ts): by address (UDP, TCP),
 * once per run of a read's events from one address; or by each event's HOSTNAME (files, HTTP).
 * An input type is counted one way; the other call does nothing.
 */
export interface SenderSightings {
  /** `events` events of `bytes` bytes from the address `from`, received at `at`. */
  from(from: string, events: number, bytes: number, at: number): void;
  /** Events received at `at`, by their HOSTNAME. */
  hosts(events: readonly LogEvent[], at: number): void;
}

/**
 * A component's logging: `logger` is its child logger (its labels bound) for lifecycle lines;
 * the rest are for lines that could fire per event or per request: at most one per key every
 * 10 s, carrying how many it stood for. Errors go in as `err` objects (stack and cause kept).
 */
export interface ComponentLog {
  readonly logger: Logger;
  info(key: string, fields: object, msg: string): void;
  warn(key: string, fields: object, msg: string): void;
  error(key: string, err: unknown, fields: object, msg: string): void;
}

/** What an intake's output reports (the runner does, for every kind of sink). */
export interface OutputTelemetry {
  readonly log: ComponentLog;
  /** Events the intake acknowledged, at `at` (ms). */
  acknowledged(events: number, at: number): void;
  wrote(bytes: number): void;
  /** Events written again (or retried after an unknown outcome): possible duplicates. */
  resent(events: number): void;
  /** A failed attempt or a lost connection, by error code. */
  error(code: string): void;
  retried(): void;
  dropped(reason: DropReason, events: number): void;
  /** Events cut to the intake's limit by the output (events_modified_total, reason intake_limit). */
  cut(events: number): void;
  connected(up: boolean): void;
  /** A connection established; `resumed`: by resuming a TLS session. */
  reconnected(resumed: boolean): void;
  keyRejected(rejected: boolean): void;
  sendSeconds(seconds: number): void;
  batchEvents(events: number): void;
  concurrency(limit: number): void;
  inFlight(sends: number): void;
  /** It stopped delivering (a first failure after a success or the start), and came back. */
  suspended(): void;
  resumed(): void;
  /** Time spent stopped, added as it passes (each failed attempt, and the success that ends it). */
  suspendedFor(seconds: number): void;
}

/** What the HTTP output reports besides the runner's: requests by status class, body sizes, durations. */
export interface HttpOutputTelemetry {
  /** A request's outcome: '2xx', '4xx', '5xx', 'other', or 'error' (no answer). */
  request(statusClass: '2xx' | '4xx' | '5xx' | 'other' | 'error'): void;
  /** A request body: its JSON bytes before compression. */
  bodyBytes(bytes: number): void;
  requestSeconds(seconds: number): void;
}

/** What a source's Inlet counts, per intake its events go to (labels: intake, and the source's name). */
export interface InletTelemetry {
  received(intake: string, events: number, bytes: number): void;
  dropped(intake: string, reason: DropReason, events: number): void;
  /** One event an intake's drop rule `rule` matched (also counted as dropped, reason filtered). */
  filtered(intake: string, rule: string): void;
  /** Events a shared listener handed to no intake: a route said drop, or nothing matched. */
  unrouted(reason: 'route_drop' | 'no_route', events: number): void;
}

/**
 * The live view of a source's events (`intake-relay tap`): `active` is read once per read and is
 * false unless someone watches, so that an unwatched relay pays one property read.
 */
export interface EventTap {
  readonly active: boolean;
  /** Events routed to `intake`, before its filters. It never blocks: a slow viewer misses events, counted. */
  events(intake: string, events: readonly LogEvent[]): void;
}

/** What building events from frames reports: repairs, and frames too large to forward. */
export interface EventTelemetry {
  modified(reason: 'invalid_utf8' | 'invalid_header' | 'truncated' | 'split', events: number): void;
  /** Frames over the size limit, dropped (counted as received and dropped for a plain input's intake). */
  tooLarge(events: number): void;
  /** Who sent a read's events. */
  readonly senders: SenderSightings;
}

/** A listening syslog input (UDP, TCP/TLS): its events, its connections, backpressure, kernel drops. */
export interface SyslogInputTelemetry extends EventTelemetry {
  readonly log: ComponentLog;
  /** The source stopped reading because a queue was full. */
  paused(): void;
  /** The listener is up: its open-connections gauge starts at 0. */
  listening(): void;
  /** A connection opened (true) or closed (false). */
  connection(open: boolean): void;
  /** A connection refused or cut: over max_connections, a failed TLS handshake, idle, or a PROXY header from an untrusted address, malformed or late. */
  rejected(reason: 'max_connections' | 'tls_handshake' | 'idle_timeout' | 'proxy_untrusted' | 'proxy_malformed' | 'proxy_timeout'): void;
  /** With the PROXY protocol, a load balancer's health check (a LOCAL header, or a header and then the end or a reset): not a refusal. */
  healthCheck(): void;
  /** Datagrams a receive thread read and dropped: the main thread had not taken what it handed over. */
  receiveDropped(datagrams: number): void;
  /** Reads the kernel's count of datagrams it dropped for this socket, whenever metrics are collected. */
  watchKernelDrops(read: () => number | undefined): void;
  /** Stops reporting (the source is gone). */
  dispose(): void;
}

/** A RELP input: a syslog input that answers each transaction. */
export interface RelpInputTelemetry extends SyslogInputTelemetry {
  /** Messages answered, by code (200: accepted; 500: refused, e.g. over the size limit). */
  answered(code: '200' | '500', transactions: number): void;
  /** Sessions opened (their open answered 200). */
  opened(sessions: number): void;
  /** A session that was not RELP (bad framing): closed. */
  protocolError(): void;
}

/** A file input: the files it follows, rotations, errors, lines split or dropped for their size. */
export type RotationKind = 'rename' | 'truncate' | 'delete' | 'copy';

/** The files of one input as they are now. */
export interface FileGauges {
  /** Followed: matched by the paths, or rotated away and read to their end. */
  readonly tracked: number;
  /** Held open (at most max_open_files). */
  readonly open: number;
  /** Appended and not read yet. */
  readonly unread: number;
}

/** `modified('split')`: a line over max_line_bytes forwarded in pieces; `tooLarge`: one dropped (oversize: drop). */
export interface FileTelemetry extends EventTelemetry {
  readonly log: ComponentLog;
  rotated(kind: RotationKind): void;
  /** An error, by system error code (EACCES, EMFILE, ...) or `checkpoint`. */
  error(code: string): void;
  /** Reports `read()` whenever metrics are collected, until the returned function is called. */
  watchFiles(read: () => FileGauges): () => void;
}


/** The HTTP input, bound to its listener: requests answered and refused, its memory budget, repairs. */
export interface HttpInputTelemetry {
  /** Per-request lines go through its rate-limited methods. */
  readonly log: ComponentLog;
  /** A request refused or not finished, by reason (a fixed list: inputs/http/error.ts). */
  refused(reason: string): void;
  /** A connection refused before any request: a PROXY header from an untrusted address, malformed or late; or nothing sent. */
  rejected(reason: 'proxy_untrusted' | 'proxy_malformed' | 'proxy_timeout' | 'idle_timeout'): void;
  /** With the PROXY protocol, a load balancer's health check (a LOCAL header, or a header and then the end or a reset): not a refusal. */
  healthCheck(): void;
  /** A request accepted, by the success status answered. */
  answered(status: number): void;
  /** Reports `read()` as the budget bytes in use, read at each collection, until the returned function is called. */
  inflightBytes(read: () => number): () => void;
  /** Events forwarded to `intake` after a repair. */
  modified(intake: string, reason: 'truncated' | 'invalid_utf8', events: number): void;
  /** Who sent a request's events (queued). */
  readonly senders: SenderSightings;
}


/** The counters the forwarder statistics read, taken once per report (every thread's, added up). */
export interface CounterReader {
  read(): Promise<Counters>;
}

export type CounterName = 'events_sent' | 'events_dropped' | 'events_received' | 'bytes_sent' | 'output_suspended' | 'output_resumed' | 'output_suspended_seconds';

export interface Counters {
  /** A counter's total over the series whose labels match `labels`. */
  total(counter: CounterName, labels: Record<string, string>): number;
}
