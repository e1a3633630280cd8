// The layers of src/, checked on the import graph: a file imports only from its own folder and the
// folders below it, inputs and outputs never import each other, and there are no cycles. Adding a
// folder means placing it here.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = new URL('../../src/', import.meta.url).pathname;

/** Lowest first. A folder may import its own files and any folder of a lower layer. */
const LAYERS: Record<string, number> = {
  'version.ts': 0,
  core: 0,
  // Node and Linux helpers (the native addon, sockets, threads, locks): above the contracts, which never use them.
  platform: 1,
  syslog: 2,
  relp: 2,
  telemetry: 2,
  routing: 3,
  emulator: 3,
  inputs: 4,
  outputs: 4,
  config: 5,
  pipeline: 6,
  // The process: the threads' topologies behind one handle, the operator's views, housekeeping.
  runtime: 7,
  cli: 8,
  'main.ts': 9,
};
/** Same layer, and still not allowed to know each other. */
const APART: [string, string][] = [['inputs', 'outputs'], ['syslog', 'telemetry']];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

function graph(): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of files(SRC)) {
    const text = readFileSync(f, 'utf8');
    const deps: string[] = [];
    for (const m of text.matchAll(IMPORT)) deps.push(relative(SRC, resolve(dirname(f), (m[1] ?? m[2]) as string)));
    g.set(relative(SRC, f), deps);
  }
  return g;
}

const top = (f: string): string => f.split('/')[0] as string;

describe('architecture', () => {
  const g = graph();

  it('places every folder of src/ in a layer', () => {
    expect([...new Set([...g.keys()].map(top))].filter((t) => !(t in LAYERS))).toEqual([]);
  });

  it('has no import that goes up the layers, and inputs and outputs never import each other', () => {
    const bad: string[] = [];
    for (const [f, deps] of g) {
      for (const d of deps) {
        const [a, b] = [top(f), top(d)];
        if (a === b) continue;
        const apart = APART.some(([x, y]) => (a === x && b === y) || (a === y && b === x));
        if ((LAYERS[b] ?? 99) > (LAYERS[a] ?? -1) || ((LAYERS[b] ?? 99) === (LAYERS[a] ?? -1) && !apart && a !== b && LAYERS[a] !== 0) || apart) {
          bad.push(`${f} -> ${d}`);
        }
      }
    }
    expect(bad).toEqual([]);
  });

  it('has no import cycles', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (f: string): void => {
      state.set(f, 'open');
      stack.push(f);
      for (const d of g.get(f) ?? []) {
        if (state.get(d) === 'open') cycles.push([...stack.slice(stack.indexOf(d)), d].join(' -> '));
        else if (!state.has(d)) visit(d);
      }
      stack.pop();
      state.set(f, 'done');
    };
    for (const f of g.keys()) if (!state.has(f)) visit(f);
    expect(cycles).toEqual([]);
  });

  it('the daemon and its worker threads never load the schema library (zod and the schemas are config time only)', () => {
    // Static imports only (a command's or the loader's dynamic import() is its own).
    const STATIC = /(?:^|\n)\s*import\s(?!type\s)[^;]*?from\s+['"]([^'"]+)['"]/g;
    const reach = (entry: string): string[] => {
      const seen = new Set<string>();
      const zod: string[] = [];
      const walk = (f: string): void => {
        if (seen.has(f)) return;
        seen.add(f);
        for (const m of readFileSync(join(SRC, f), 'utf8').matchAll(STATIC)) {
          const spec = m[1] as string;
          if (spec === 'zod') zod.push(f);
          else if (spec.startsWith('.')) walk(relative(SRC, resolve(dirname(join(SRC, f)), spec)));
        }
      };
      walk(entry);
      return zod;
    };
    expect(reach('main.ts')).toEqual([]);
    expect(reach('runtime/worker-entry.ts')).toEqual([]);
  });

  it('one topology for every thread: the process and a worker both run pipeline/topology.ts, no worker-mode flag', () => {
    for (const f of ['runtime/relay.ts', 'runtime/worker-main.ts']) expect(g.get(f)).toContain('pipeline/topology.ts');
    const all = [...g.keys()].map((f) => readFileSync(join(SRC, f), 'utf8'));
    expect(all.filter((t) => /options\.worker\b|readonly worker\?:/.test(t))).toEqual([]);
  });

  it('no thread runs from source text (eval), and the native addon lets no page of the process go', () => {
    const evals = [...g.keys()].filter((f) => /eval:\s*true/.test(readFileSync(join(SRC, f), 'utf8')));
    expect(evals).toEqual([]);
    const NATIVE = new URL('../../native/', import.meta.url).pathname;
    const c = readdirSync(NATIVE).filter((f) => f.endsWith('.c') || f.endsWith('.h')).map((f) => readFileSync(join(NATIVE, f), 'utf8')).join('\n');
    expect(c).not.toMatch(/madvise|MADV_DONTNEED|smaps/);
  });
});
