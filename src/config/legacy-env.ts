// The official forwarder's container environment (REGION, ENDPOINT, MEMORY_MESSAGES, DISK_SPACE,
// RELP_OUTPUT), read the way the forwarder reads it. Every value that is set is either applied or a
// problem naming its variable: none is ignored. Where the forwarder falls back (an unknown region
// to fra1), this is an error instead.

import { accessSync, constants, existsSync, statSync, statfsSync } from 'node:fs';
import { isIP } from 'node:net';
import { dirname } from 'node:path';
import { KiB } from '../core/config-parts.ts';
import { isRegion, REGIONS, type Region } from './regions.ts';

/** The forwarder's DISK_SPACE when it is unset: its disk-assisted queue was always on. */
export const DEFAULT_DISK_SPACE = '32g';
/**
 * Bytes of memory queue allowed per message of MEMORY_MESSAGES or queue_size: the forwarder's
 * documentation counts 1.2 KB a message, so the count is what binds for usual logs, and the byte
 * limit only stops a run of unusually large events from taking the host's memory.
 */
export const BYTES_PER_MESSAGE = 2 * KiB;
/** A smaller share of DISK_SPACE would hold a disk queue that is always full. */
export const MIN_DISK_SHARE = 1024 * KiB;
const MAX_MESSAGES = 1_000_000_000;
const UNITS: Record<string, number> = { '': 1, k: KiB, m: KiB ** 2, g: KiB ** 3, t: KiB ** 4 };

export interface LegacyEnv {
  /** The native `region`, when REGION (or ENDPOINT with REGION=OTHER) names one. */
  readonly region: Region | undefined;
  /** The native `endpoints`, from ENDPOINT. */
  readonly endpoints: Record<string, unknown>;
  /** RELP_OUTPUT: every intake's output is RELP. */
  readonly relp: boolean;
  /** MEMORY_MESSAGES, for all intakes together. */
  readonly memoryMessages: number | undefined;
  /** DISK_SPACE in bytes, for all receiving intakes together; 0: memory queues only. */
  readonly diskBytes: number;
  /** DISK_SPACE as the operator wrote it, or the default. */
  readonly diskSpace: string;
  /** DISK_SPACE was set (not the default). */
  readonly diskExplicit: boolean;
  /** The native `metrics` address and port, from METRICS_ADDRESS / METRICS_PORT (the image sets the address). */
  readonly metrics: { address?: string; port?: number };
}

/**
 * METRICS_ADDRESS and METRICS_PORT, which the shipped configuration and the image read: an
 * intakes.yaml has no metrics section, so they are read here too (a container's probes need
 * the metrics server on the pod's address).
 */
export function legacyMetrics(env: NodeJS.ProcessEnv, problems: string[]): { address?: string; port?: number } {
  const out: { address?: string; port?: number } = {};
  const address = env.METRICS_ADDRESS?.trim();
  if (address) {
    if (isIP(address) === 0 && !/^[A-Za-z0-9.-]{1,253}$/.test(address)) problems.push(`environment METRICS_ADDRESS: ${shown(address)} is not an address (e.g. 0.0.0.0, ::, 127.0.0.1)`);
    else out.address = address;
  }
  const port = env.METRICS_PORT?.trim();
  if (port) {
    const n = /^\d{1,5}$/.test(port) ? Number(port) : NaN;
    if (n >= 1 && n <= 65535) out.port = n;
    else problems.push(`environment METRICS_PORT: ${shown(port)} is not a port from 1 to 65535`);
  }
  return out;
}

/** Reads the variables; each problem starts with "environment NAME:". */
export function readLegacyEnv(env: NodeJS.ProcessEnv, problems: string[], warnings: string[]): LegacyEnv {
  const set = (name: string): string | undefined => (env[name] === undefined || env[name] === '' ? undefined : env[name]);
  const relpValue = set('RELP_OUTPUT');
  const relp = relpValue !== undefined;
  if (relpValue !== undefined && /^\s*(false|no|off|0)\s*$/i.test(relpValue)) {
    warnings.push(`environment RELP_OUTPUT=${shown(relpValue)}: any value that is set switches every output to RELP, as with the official forwarder; unset RELP_OUTPUT to keep syslog.`);
  }

  const regionValue = set('REGION');
  const other = regionValue?.trim().toLowerCase() === 'other';
  let region: Region | undefined;
  if (regionValue !== undefined && !other) {
    const r = regionValue.trim().toLowerCase();
    if (isRegion(r)) region = r;
    else problems.push(`environment REGION: unknown region ${shown(regionValue)}: expected one of ${Object.keys(REGIONS).join(', ')}, or OTHER with ENDPOINT`);
  }

  const endpoints: Record<string, unknown> = {};
  const endpointValue = set('ENDPOINT');
  if (other && endpointValue === undefined) {
    problems.push('environment ENDPOINT: not set, and REGION=OTHER needs it: the intake host, as host or host:port (e.g. ENDPOINT=intake.sgp1.sekoia.io)');
  }
  if (endpointValue !== undefined) {
    const ep = parseEndpoint(endpointValue);
    if (!ep) {
      problems.push(`environment ENDPOINT: ${shown(endpointValue)} is not a host or host:port (e.g. intake.sgp1.sekoia.io or relay.example:10514; no scheme, no path)`);
    } else {
      // REGION=OTHER with a region's own intake host is that region: its HTTP and API endpoints too.
      const known = Object.entries(REGIONS).find(([, r]) => r.syslogHost === ep.host.toLowerCase())?.[0];
      if (other && known !== undefined && isRegion(known)) region = known;
      if (ep.host.toLowerCase() !== REGIONS[region ?? 'fra1'].syslogHost) {
        endpoints.syslog_host = ep.host;
        endpoints.relp_host = ep.host;
        // OTHER names no HTTP intake: the intake host itself is the best guess for a converted file.
        if (other) endpoints.http_url = `https://${isIP(ep.host) === 6 ? `[${ep.host}]` : ep.host}`;
      }
      // The port is the one of the output in use: syslog, or RELP with RELP_OUTPUT.
      if (ep.port !== undefined) endpoints[relp ? 'relp_port' : 'syslog_port'] = ep.port;
    }
  }

  const memoryValue = set('MEMORY_MESSAGES');
  let memoryMessages: number | undefined;
  if (memoryValue !== undefined) {
    const n = /^\s*\d+\s*$/.test(memoryValue) ? Number(memoryValue) : NaN;
    if (n >= 1 && n <= MAX_MESSAGES) memoryMessages = n;
    else problems.push(`environment MEMORY_MESSAGES: ${shown(memoryValue)} is not a whole number of messages from 1 to ${MAX_MESSAGES}`);
  }

  const diskExplicit = set('DISK_SPACE') !== undefined;
  const diskSpace = set('DISK_SPACE') ?? DEFAULT_DISK_SPACE;
  const diskBytes = parseSize(diskSpace);
  if (diskBytes === undefined) {
    problems.push(`environment DISK_SPACE: ${shown(diskSpace)} is not a size: a whole number with k, m, g or t (KiB to TiB, "b" optional, any case), e.g. 32g; 0 for memory queues only`);
  }
  const metrics = legacyMetrics(env, problems);
  return { region, endpoints, relp, memoryMessages, diskBytes: diskBytes ?? 0, diskSpace, diskExplicit, metrics };
}

/** host, host:port, [v6]:port or a bare IPv6 address; undefined when it is none of these. */
export function parseEndpoint(s: string): { host: string; port?: number } | undefined {
  const v = s.trim();
  let host: string;
  let port: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(v);
  if (bracketed) {
    host = bracketed[1] as string;
    port = bracketed[2];
    if (isIP(host) !== 6) return undefined;
  } else if (isIP(v) === 6) {
    host = v;
  } else {
    const m = /^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?::(\d+))?$/.exec(v);
    if (!m) return undefined;
    host = m[1] as string;
    port = m[2];
  }
  if (port === undefined) return { host };
  const p = Number(port);
  return p >= 1 && p <= 65535 ? { host, port: p } : undefined;
}

/** "32g", "512MB", "1t", "1048576": bytes (k, m, g, t are powers of 1024); undefined when malformed. */
export function parseSize(s: string): number | undefined {
  const m = /^\s*(\d+)\s*([kmgt]?)b?\s*$/i.exec(s);
  if (!m) return undefined;
  const bytes = Number(m[1]) * (UNITS[(m[2] as string).toLowerCase()] as number);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/**
 * The disk queues' directory must be one this process can create and write: else a problem now,
 * naming DISK_SPACE, instead of a start-up failure. A budget larger than the free space is a
 * warning: the queues only take what a backlog needs, and count as full when the disk is.
 */
export function checkQueueDir(queuesDir: string, e: LegacyEnv, problems: string[], warnings: string[]): void {
  const what = `environment DISK_SPACE: the disk queues (${e.diskSpace}${e.diskExplicit ? '' : ', the official forwarder\'s default'}) go to ${queuesDir}`;
  const fix = 'set STATE_DIRECTORY to a writable directory, or DISK_SPACE=0 for memory queues only';
  let at = queuesDir;
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  try {
    if (!statSync(at).isDirectory()) {
      problems.push(`${what}, but ${at} is not a directory: ${fix}`);
      return;
    }
    accessSync(at, constants.W_OK | constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    problems.push(`${what}, which ${at === queuesDir ? 'is' : `cannot be created: ${at} is`} not writable (${code}): ${fix}`);
    return;
  }
  let free: number;
  try {
    const fs = statfsSync(at);
    free = fs.bavail * fs.bsize;
  } catch {
    return;
  }
  if (e.diskBytes > free) {
    warnings.push(`${what}, whose file system has ${gib(free)} free: they count as full once the disk is. Set DISK_SPACE to what this disk can spare.`);
  }
}

/** A value as written, quoted, on one line, and not too long to read. */
function shown(v: string): string {
  return JSON.stringify(v.length > 64 ? `${v.slice(0, 64)}…` : v);
}

function gib(bytes: number): string {
  return `${(bytes / KiB ** 3).toFixed(1)} GiB`;
}
