// Configuration values and helpers that the running relay needs as well as the loader: sizes, the
// intake's event limit, file-safe names, the PROXY protocol settings. Nothing here loads zod, so
// the daemon's threads never load the schema library (config-parts.ts holds the schema pieces).

import { availableParallelism } from 'node:os';
import { addressList } from './address-list.ts';

export const KiB = 1024;
export const MiB = 1024 * KiB;

/** `workers: auto` uses the cores the process may use, up to this many. */
export const AUTO_WORKERS_MAX = 8;

/** How many threads run the network inputs (1: the main thread alone, as without workers). */
export function workerCount(setting: number | 'auto'): number {
  return setting === 'auto' ? Math.min(availableParallelism(), AUTO_WORKERS_MAX) : setting;
}

/** The intake refuses events over 250 KiB. */
export const INTAKE_MAX_EVENT_BYTES = 250 * KiB;

/** A name as part of a file name: letters, digits, . _ - kept, anything else %-escaped. */
export function fileSafe(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** A listener's PROXY protocol settings, checked; undefined when off. Problems go to `problem`. */
export interface ProxyProtocolSettings {
  readonly versions: readonly ('v1' | 'v2')[];
  readonly trusted: readonly string[];
}

export function proxyProtocolSettings(
  c: { readonly proxy_protocol: 'off' | 'v1' | 'v2' | 'auto'; readonly trusted_proxies?: string | readonly string[] | undefined },
  problem: (key: readonly PropertyKey[], message: string) => void,
): ProxyProtocolSettings | undefined {
  const trusted = c.trusted_proxies === undefined ? [] : typeof c.trusted_proxies === 'string' ? [c.trusted_proxies] : [...c.trusted_proxies];
  if (c.proxy_protocol === 'off') {
    if (trusted.length > 0) problem(['trusted_proxies'], 'is set but proxy_protocol is off: set proxy_protocol (v1, v2 or auto) or remove trusted_proxies');
    return undefined;
  }
  if (trusted.length === 0) {
    problem(['trusted_proxies'], `is required with proxy_protocol: ${c.proxy_protocol} (the addresses or CIDRs of your load balancers; 0.0.0.0/0 and ::/0 trust everyone)`);
    return undefined;
  }
  trusted.forEach((s, i) => {
    if (addressList([s]).bad.length > 0) problem(typeof c.trusted_proxies === 'string' ? ['trusted_proxies'] : ['trusted_proxies', i], `"${s}" is not an IP address or CIDR`);
  });
  return { versions: c.proxy_protocol === 'auto' ? ['v1', 'v2'] : [c.proxy_protocol], trusted };
}
