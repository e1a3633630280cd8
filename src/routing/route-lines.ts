// What a shared listener's routes say, for `validate` and the daemon (which intakes a listener
// feeds): no schema library here, the running relay needs these too.

import type { RouteConfig } from './schema.ts';

/** A shared listener's routes, for `validate`'s summary: one line each, then the default. */
export function routeLines(routes: readonly RouteConfig[], fallback: string): string[] {
  const lines = routes.map((r, i) => {
    const conds = Object.entries(r.match).map(([k, v]) => `${k} ${JSON.stringify(v)}`).join(' and ') || 'everything';
    return `${i + 1}. ${conds} -> ${r.intake ? `intake "${r.intake}"` : 'drop'}`;
  });
  lines.push(`otherwise -> ${fallback === 'drop' ? 'drop (counted)' : `intake "${fallback}"`}`);
  return lines;
}

/** Whether routes (or their default) can send events to the intake named `name`. */
export function routesFeed(routes: readonly RouteConfig[], fallback: string, name: string): boolean {
  const me = name.toLowerCase();
  return fallback.toLowerCase() === me || routes.some((r) => r.intake?.toLowerCase() === me);
}
