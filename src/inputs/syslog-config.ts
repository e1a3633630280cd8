// What the syslog inputs (UDP, TCP/TLS) share as a configured component: the default label, the
// routes of a shared listener checked against the intakes, and their lines in `validate`'s summary.

import type { ResolveContext } from '../core/component.ts';
import { compileRoutes, type Router } from '../routing/router.ts';
import { routeLines, routesFeed } from '../routing/route-lines.ts';
import type { RouteConfig } from '../routing/schema.ts';
import type { HeaderDefaults } from '../syslog/parse.ts';

interface SyslogListening {
  readonly name?: string | undefined;
  readonly address: string;
  readonly port: number;
  readonly max_message_bytes: number;
  readonly oversize?: string;
  /** Only as a shared listener. */
  readonly routes?: readonly RouteConfig[];
  readonly default?: string;
  readonly proxy_protocol?: string;
  readonly trusted_proxies?: string | readonly string[] | undefined;
}

/** Its label ("<kind>/<port>" unless named); a shared listener's routes must name intakes that exist. */
export function syslogLabel(c: SyslogListening, kind: string, ctx: ResolveContext): string {
  if (c.routes) {
    const { problems, warnings } = compileRoutes(c.routes, c.default ?? 'drop', ctx.intakeIndex);
    for (const rp of problems) ctx.problem(rp.path, rp.message);
    for (const w of warnings) ctx.warn(`${w.path.map((k, i) => (typeof k === 'number' ? `[${k}]` : `${i > 0 ? '.' : ''}${String(k)}`)).join('')}: ${w.message}`);
  }
  return c.name ?? `${kind}/${c.port}`;
}

export function describeSyslog(c: SyslogListening & { readonly label: string }, kind: string): string[] {
  if (c.proxy_protocol && c.proxy_protocol !== 'off') {
    const trusted = typeof c.trusted_proxies === 'string' ? [c.trusted_proxies] : c.trusted_proxies ?? [];
    kind += `, PROXY protocol ${c.proxy_protocol} from ${trusted.join(' ')}`;
  }
  if (!c.routes) return [`input ${c.label}: ${kind} on ${c.address}:${c.port}, max ${c.max_message_bytes} bytes per event (${c.oversize ?? 'drop'})`];
  const fallback = c.default ?? 'drop';
  return [
    `listener ${c.label}: ${kind.replace(/ \(.*/, '')} on ${c.address}:${c.port}, ${c.routes.length} route${c.routes.length === 1 ? '' : 's'}`,
    ...routeLines(c.routes, fallback).map((l) => `  ${l}`),
  ];
}

/** The header fields a plain line gets, from an input's `defaults`. */
export function headerDefaults(d: { readonly facility: number; readonly severity: number; readonly hostname?: string | undefined; readonly app_name?: string | undefined; readonly procid?: string | undefined }): HeaderDefaults {
  return { pri: d.facility * 8 + d.severity, hostname: d.hostname ?? '', appName: d.app_name ?? '', procId: d.procid ?? '' };
}

/** A shared listener's router over its routes; undefined for an intake's own input. */
export function syslogRouter(c: SyslogListening, index: (name: string) => number): Router | undefined {
  return c.routes ? compileRoutes(c.routes, c.default ?? 'drop', index).router : undefined;
}

export function syslogFeeds(c: SyslogListening, name: string): boolean {
  return c.routes !== undefined && routesFeed(c.routes, c.default ?? 'drop', name);
}
