// The configuration reference (docs/reference/configuration.md, the man page's CONFIGURATION),
// generated from the JSON Schema (itself generated from the zod schema), so the documentation
// cannot drift from what the loader accepts.

interface Node {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  default?: unknown;
  description?: string;
  properties?: Record<string, Node>;
  required?: string[];
  items?: Node;
  oneOf?: Node[];
  anyOf?: Node[];
  minimum?: number;
  maximum?: number;
  pattern?: string;
}

function typeOf(n: Node): string {
  if (n.const !== undefined) return `\`${String(n.const)}\``;
  if (n.anyOf) return n.anyOf.map(typeOf).join(' or ');
  if (n.enum) return n.enum.map((v) => `\`${String(v)}\``).join(' \\| ');
  const t = Array.isArray(n.type) ? n.type.join(' \\| ') : (n.type ?? 'any');
  if (t === 'integer' && n.maximum !== undefined && n.maximum < Number.MAX_SAFE_INTEGER) return `integer ${n.minimum ?? ''}..${n.maximum}`;
  if (t === 'integer' && n.minimum !== undefined) return `integer ≥ ${n.minimum}`;
  if (t === 'array' && n.items) return n.items.oneOf ? 'list (see below)' : `list of ${typeOf(n.items)}`;
  return t;
}

function defaultOf(n: Node, required: boolean): string {
  if (n.default !== undefined && typeof n.default !== 'object') return `\`${String(n.default)}\``;
  if (n.default !== undefined) return '';
  return required ? 'required' : '';
}

function rows(n: Node, path: string, out: string[], sections: Map<string, Node[]>): void {
  for (const [key, child] of Object.entries(n.properties ?? {})) {
    const p = path ? `${path}.${key}` : key;
    const variants = child.oneOf ?? child.items?.oneOf;
    const required = n.required?.includes(key) ?? false;
    if (child.properties) {
      out.push(`| \`${p}\` | object | | ${child.description ?? ''} |`);
      rows(child, p, out, sections);
    } else if (variants) {
      const list = child.type === 'array';
      out.push(`| \`${p}\` | ${list ? 'list' : 'object'}, by \`type\` | ${defaultOf(child, required)} | ${child.description ?? ''} See "${p}${list ? '[]' : ''}" below. |`);
      sections.set(`${p}${list ? '[]' : ''}`, variants);
    } else if (child.items?.properties) {
      out.push(`| \`${p}[]\` | list of objects | | ${child.description ?? ''} |`);
      rows(child.items, `${p}[]`, out, sections);
    } else {
      out.push(`| \`${p}\` | ${typeOf(child)} | ${defaultOf(child, required)} | ${child.description ?? ''} |`);
    }
  }
}

const HEAD = ['| key | type | default | meaning |', '|---|---|---|---|'];

export function configReference(schema: Node): string {
  const out: string[] = [];
  const sections = new Map<string, Node[]>();
  const main = [...HEAD];
  rows(schema, '', main, sections);
  out.push(...main);
  // Sections found while writing a section are written after it, in order.
  const done = new Set<string>();
  for (let pending = [...sections.keys()]; pending.length > 0; pending = [...sections.keys()].filter((k) => !done.has(k))) {
    for (const name of pending) {
      done.add(name);
      for (const v of sections.get(name) ?? []) {
        const kind = v.properties?.type?.const;
        out.push('', `**\`${name}\` with \`type: ${String(kind)}\`**: ${v.properties?.type?.description ?? ''}`, '', ...HEAD);
        const body: string[] = [];
        rows({ ...v, properties: Object.fromEntries(Object.entries(v.properties ?? {}).filter(([k]) => k !== 'type')) }, name, body, sections);
        out.push(...body);
      }
    }
  }
  return out.join('\n');
}
