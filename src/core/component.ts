// What a component type is: its configuration schema, how its configuration is resolved (defaults,
// files read, problems reported with their place), how it is built, and how it describes itself.
// The registries (inputs/registry.ts, outputs/registry.ts) map each type to one definition; the
// configuration schema, the loader, `validate`, `check`, `send`, the start-up log and the daemon
// all go through them, so a new type is its own file(s) plus one registry line.

import type { z } from 'zod';
import type { EventQueue } from './queue.ts';
import type { Sink } from './contracts.ts';
import type { ComponentLog, Instruments } from './telemetry.ts';

/** The region's endpoints, with `endpoints:` overrides applied. */
export interface Endpoints {
  readonly syslogHost: string;
  readonly syslogPort: number;
  readonly httpBase: string;
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
export interface InputDefinition<Config, Resolved> {
  /** Its schema under `intakes[].inputs`; undefined when it is only a shared listener. */
  readonly inputSchema: z.ZodObject | undefined;
  /** Its schema under `listeners` (routes, or keys, choose the intake); undefined when it cannot be shared. */
  readonly listenerSchema: z.ZodObject | undefined;
  resolve(config: Config, ctx: ResolveContext): Resolved;
  /** The port it listens on, checked for conflicts across the configuration; undefined if none. */
  listening(config: Config): Listening | undefined;
  /** As a shared listener: whether it can hand events to the intake named `name`. */
  feeds(config: Resolved, name: string): boolean;
  /** Lines for `validate`'s summary, the first naming it ("input tcp/514: ..."). */
  describe(config: Resolved): string[];
}

/** Certificates and keys of a TLS server, read at load. */
export interface TlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | undefined;
}

export interface OutputDefinition<Config, Resolved> {
  /** Its part of `intakes[].output`, a strict zod object with a literal `type`. */
  readonly schema: z.ZodObject;
  resolve(config: Config, ctx: ResolveContext): Resolved;
  create(config: Resolved, ctx: OutputContext): Sink;
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
}

export interface OutputContext {
  readonly intake: string;
  readonly intakeKey: string;
  readonly instruments: Instruments;
}

export interface TlsEndpoint {
  readonly host: string;
  readonly port: number;
  readonly serverName: string;
  readonly ca: Buffer | undefined;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
}

/** What a source is built with: where its events go, and what it reports. */
export interface SourceContext<Telemetry> {
  readonly sender: Sender;
  readonly telemetry: Telemetry;
  readonly log: ComponentLog;
}

/**
 * The one way into intake queues (routing/sender.ts): routes each event to an intake, applies the
 * intake's filters, counts what was received and what was dropped (with the reason), and offers
 * the rest to the queue. Whether its source can pause is fixed when it is made.
 */
export interface Sender {
  /** The intake the source belongs to, for labels; '' for a shared listener. */
  readonly owner: string;
  /** Offers a read's events (their total size `bytes`); 'slow_down' means pause until writable(). */
  send(events: import('./event.ts').LogEvent[], bytes: number): import('./queue.ts').OfferResult;
  /** Resolves once every queue that asked this source to slow down has room again. */
  writable(): Promise<void>;
}

/** An intake's queue as a source that answers "later" (HTTP) sees it. */
export interface AdmitTarget {
  readonly intake: string;
  readonly queue: EventQueue;
}
