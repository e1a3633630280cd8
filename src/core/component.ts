// What a component type is: its configuration schema, how its configuration is resolved (defaults,
// files read, problems reported with their place), how it is built, and how it describes itself.
// The registries (inputs/registry.ts, outputs/registry.ts) map each type to one definition; the
// configuration schema, the loader, `validate`, `check`, `send`, the start-up log and the daemon
// all go through them, so a new type is its own file(s) plus one registry line.

import type { MemoryShares } from './memory-budget.ts';
import type { AdmitResult, EventQueue, OfferMode, OfferResult } from './event-queue.ts';
import type { LogEvent } from './event.ts';
import type { DropReason, Sink, Source } from './contracts.ts';

/**
 * Where the region's intake is, and the `endpoints:` overrides as written: each output type reads
 * the keys it declares (its schema's endpoint keys, outputs/schemas.ts) and keeps its own defaults.
 */
export interface Endpoints {
  /** The region's intake host and HTTP intake base URL (config/regions.ts). */
  readonly region: { readonly intakeHost: string; readonly httpBase: string };
  /** `endpoints:` as written: the output types' keys (validated by their schemas). */
  readonly overrides: Readonly<Record<string, unknown>>;
}

/** What resolving one component's configuration may use and report. */
export interface ResolveContext {
  /** Directory of the configuration file: relative paths are relative to it. */
  readonly base: string;
  readonly dataDir: string;
  /** The intake the component belongs to; '' for a shared listener. */
  readonly owner: string;
  readonly endpoints: Endpoints;
  /** A file the configuration names, read whole (capped); undefined once a problem at `key` is reported. */
  readFile(path: string, key: readonly PropertyKey[]): Buffer | undefined;
  /** A problem at `key`, relative to the component's own place in the file. */
  problem(key: readonly PropertyKey[], message: string): void;
  /** A warning; it is prefixed with the component's place ("intakes[0].output."). */
  warn(message: string): void;
  /** Index of the intake named `name` (any case) in the configuration; -1 when there is none. */
  intakeIndex(name: string): number;
  /** The intake's share of memory_bytes (memory-budget.ts): the defaults of its bounds derive from it. */
  readonly memory: MemoryShares;
}

/** A port a component listens on (checked for conflicts across the whole configuration). */
export interface Listening {
  readonly proto: 'tcp' | 'udp';
  readonly address: string;
  readonly port: number;
}

/**
 * An input type: an intake's own input (`intakes[].inputs`), a listener shared by several intakes
 * (`listeners`), or both. Its resolved configuration carries `type` and `label`.
 */
export interface InputDefinition<Config, Resolved, Tools = unknown> {
  resolve(config: Config, ctx: ResolveContext): Resolved;
  /** The port it listens on, checked for conflicts across the configuration; undefined if none. */
  listening(config: Config): Listening | undefined;
  /** As a shared listener: whether it can hand events to the intake named `name`. */
  feeds(config: Resolved, name: string): boolean;
  /** As a shared listener that routes: picks the intake of each event (`index` finds an intake by name); undefined if it does not route. */
  router(config: Resolved, index: (name: string) => number): { route(e: LogEvent): number } | undefined;
  /** Lines for `validate`'s summary, the first naming it ("input tcp/514: ..."). */
  describe(config: Resolved, where: { readonly dataDir: string }): string[];
  /**
   * Its record in the forwarder statistics, as rsyslog's input module names and counts it for an
   * input named `name` listening on `address`:`port` (the address as configured), or undefined:
   * rsyslog has no such input.
   */
  impstats(name: string, address: string, port: number, submitted: number): Record<string, unknown> | undefined;
  /**
   * Before any input of the process starts (and before a reload starts new ones): claims the state
   * each configured input of this type owns in `dataDir` (a file input's checkpoints), so that no
   * other input takes it over, whichever starts first.
   */
  holdState?(dataDir: string, inputs: readonly { readonly intake: string; readonly config: Resolved }[]): void;
  /** What names a sender in its table of senders: the peer's address (UDP, TCP), or each event's HOSTNAME (files, HTTP). */
  readonly senderKey: 'address' | 'hostname';
  /**
   * What its source does when a queue cannot take more (EventQueue.offer): `drop` (it cannot stop
   * reading: UDP, HTTP answers "later"), `pause` (it stops reading: TCP), `wait` (its data keeps,
   * whatever when_full says: files, a RELP sender's window).
   */
  readonly offerMode: OfferMode;
  create(config: Resolved, ctx: SourceContext<Tools>): Source;
}

/** What a source is built with: the sender its events go through, and what its type binds its telemetry with. */
export interface SourceContext<Tools = unknown> {
  readonly inlet: Inlet;
  readonly tools: Tools;
  /** Where state that must survive a restart goes (data_dir as in force: a reload does not change it). */
  readonly dataDir: string;
}

/** Certificates and keys of a TLS server, read at load. */
export interface TlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | undefined;
}

export interface OutputDefinition<Config, Resolved, Tools = unknown> {
  resolve(config: Config, ctx: ResolveContext): Resolved;
  create(config: Resolved, ctx: OutputContext<Tools>): Sink;
  /** One line for `validate` and the start-up log: "syslog over TLS to host:port, ...". */
  describe(config: Resolved): string;
  /** Where it delivers, for messages ("host:port", a URL). */
  where(config: Resolved): string;
  /** The TLS endpoint `check` tests step by step. */
  endpoint(config: Resolved): TlsEndpoint;
  /** The resolved configuration in the file's own keys, defaults filled in (`validate --print`). */
  effective(config: Resolved): object;
  /** What `check` should add to its report of this output ('' for nothing). */
  checkNote(config: Resolved): string;
  /** The runner's limit on attempts per batch (undefined: forever). */
  maxRetries(config: Resolved): number | undefined;
  /** Backoff between attempts. */
  backoff(config: Resolved): { readonly initialMs: number; readonly maxMs: number };
  /** How long a reload waits for the old sink to confirm what it wrote before the new one writes it again. */
  handOverMs(config: Resolved): number;
  /** The name of rsyslog's record of the transport it would use (omfwd's `TCP-<host>-<port>`), for the forwarder statistics; none when rsyslog has no such record. */
  omfwdRecord?(config: Resolved): string;
  /** How the intake confirms delivery, for `send` when it did not ("answer every RELP transaction"). */
  readonly confirmation: string;
  /** For `check`: the host names to test (default: the endpoint's host). */
  checkTargets?(config: Resolved): string[];
  /** For `check`: the output's own protocol step after TLS (RELP's open), one line of what it found; throws a RelayError. */
  handshake?(config: Resolved, host: string, timeoutMs: number): Promise<string>;
}

export interface OutputContext<Tools = unknown> {
  readonly intake: string;
  readonly intakeKey: string;
  /** What its type binds its own telemetry with (the runner's is bound apart). */
  readonly tools: Tools;
}

export interface TlsEndpoint {
  /** Plain TCP (no TLS step). */
  readonly plain?: boolean;
  readonly host: string;
  readonly port: number;
  readonly serverName: string;
  readonly ca: Buffer | undefined;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
}


/** An intake's drop rules (routing/filters.ts). */
export interface EventFilter {
  readonly empty: boolean;
  /** Index of the first rule that drops `e`, or -1. */
  match(e: LogEvent): number;
  /** A rule's name in metrics: its description. */
  name(rule: number): string;
}

/**
 * One intake a source can feed: its queue and its filters (and its key, which HTTP senders present).
 * A reload changes the filters (and a queue's limits) in place, so running sources see them at once.
 */
export interface Target {
  /** A reload may change the name's case, the key and the filters in place. */
  intake: string;
  intakeKey: string;
  readonly queue: EventQueue;
  filters: EventFilter;
}

/** Where a source's events go: its targets and, for a shared listener, the router that picks among them. */
export interface Routing {
  readonly targets: readonly Target[];
  /** The target index of each event (negative: dropped, counted); absent: everything goes to targets[0]. */
  readonly router?: { route(e: LogEvent): number } | undefined;
}

/**
 * The one way into intake queues (routing/inlet.ts): routes each event to an intake, applies the
 * intake's filters, counts what was received and what was dropped (with the reason), and offers
 * the rest to the queue. Whether its source can pause is fixed when it is made.
 */
export interface Inlet {
  /** The intake of a plain input, for labels; '' for a shared listener. */
  readonly owner: string;
  /** The intakes it feeds now (a reload may change them between two reads). */
  readonly targets: readonly Target[];
  /** Offers a read's events (their total size `bytes`); 'slow_down' means pause until writable(). */
  send(events: LogEvent[], bytes: number): OfferResult;
  /** All of `events` to `target`, or none (sources that can answer "later"); `admitted`: after the filters. */
  admit(target: Target, events: LogEvent[], bytes: number): { readonly result: AdmitResult; readonly admitted: number };
  /** Events `target` received that will never be delivered (refused one by one), counted as such. */
  refuse(target: Target, reason: DropReason, events: number): void;
  /** Resolves once every queue that asked this source to slow down has room again. */
  writable(): Promise<void>;
}
