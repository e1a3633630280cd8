// Every relative link and anchor in README.md and docs/ leads somewhere: the file exists, and an
// anchor (#heading) names a heading of that file, made into an anchor as GitHub makes it.

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

function markdown(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? markdown(p) : p.endsWith('.md') ? [p] : [];
  });
}

/** The text outside fenced code blocks and inline code spans, where links are links. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '``');
}

/** GitHub's anchors: lower case, punctuation dropped (letters, digits, spaces, - and _ kept), spaces to -, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const body = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of body.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const heading = (m[1] as string).replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/<[^>]+>/g, '');
    const slug = heading.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  for (const m of body.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(m[1] as string);
  return out;
}

/** [text](target) and [label]: target, relative targets only. */
function links(text: string): string[] {
  const p = prose(text);
  const inline = [...p.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string);
  const defs = [...p.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1] as string);
  return [...inline, ...defs].filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

describe('documentation links', () => {
  const pages = [join(ROOT, 'README.md'), ...(existsSync(join(ROOT, 'docs')) ? markdown(join(ROOT, 'docs')) : [])];
  const anchorCache = new Map<string, Set<string>>();
  const anchorsOf = (file: string): Set<string> => {
    let a = anchorCache.get(file);
    if (!a) anchorCache.set(file, (a = anchors(readFileSync(file, 'utf8'))));
    return a;
  };

  it('reads the README and the docs', () => {
    expect(pages.length).toBeGreaterThan(1);
  });

  it('has no broken relative link or anchor', () => {
    const broken: string[] = [];
    for (const page of pages) {
      for (const target of links(readFileSync(page, 'utf8'))) {
        const [path, anchor] = target.split('#', 2) as [string, string | undefined];
        const file = path === '' ? page : resolve(dirname(page), decodeURIComponent(path));
        const where = `${relative(ROOT, page)}: ${target}`;
        if (!existsSync(file)) {
          broken.push(`${where} (no such file)`);
          continue;
        }
        if (anchor !== undefined && anchor !== '' && file.endsWith('.md') && !anchorsOf(file).has(decodeURIComponent(anchor))) {
          broken.push(`${where} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('makes anchors as GitHub does', () => {
    const a = anchors('# Disk queue: nothing lost across outages, restarts and crashes\n## `run` and `validate`\n## Docker\n## Docker\n```\n# not a heading\n```\n');
    expect([...a]).toEqual(['disk-queue-nothing-lost-across-outages-restarts-and-crashes', 'run-and-validate', 'docker', 'docker-1']);
  });
});

describe('README.md', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

  it('stays short: the rest lives in docs/', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
  });

  it('shows a configuration example that is valid as it is', () => {
    const blocks = [...readme.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string).filter((b) => /^intakes:/m.test(b));
    expect(blocks).toHaveLength(1);
    const c = parseConfig(blocks[0] as string, 'README.md', { FIREWALL_KEY: 'ReadmeExampleKey0000000000000001', WEB_KEY: 'ReadmeExampleKey0000000000000002' });
    expect(c.intakes.map((i) => i.name)).toEqual(['firewalls', 'web-servers']);
  });
});

describe('configuration examples in docs/', () => {
  const TLS = join(ROOT, 'test/fixtures/tls/');
  const FILES: Record<string, string> = { cert_file: `${TLS}server.crt`, key_file: `${TLS}server.key`, ca_file: `${TLS}ca.crt`, client_ca_file: `${TLS}ca.crt` };
  const guides = existsSync(join(ROOT, 'docs/guides')) ? markdown(join(ROOT, 'docs/guides')) : [];
  const examples = guides.flatMap((page) =>
    [...readFileSync(page, 'utf8').matchAll(/^```ya?ml\n([\s\S]*?)^```$/gm)]
      .map((m) => m[1] as string)
      .filter((b) => /^intakes:/m.test(b))
      .map((text, i) => ({ where: `${relative(ROOT, page)} example ${i + 1}`, text })),
  );

  it('finds the guides\' examples', () => {
    expect(examples.length).toBeGreaterThan(10);
  });

  it('are valid configurations (their TLS files stood in for by the test fixtures)', () => {
    const invalid: string[] = [];
    for (const { where, text } of examples) {
      // A certificate or key named in an example is the reader's: the fixtures take its place.
      const yaml = text.replace(/\b(cert_file|key_file|ca_file|client_ca_file):\s*[^,}\s]+/g, (_m, k: string) => `${k}: ${FILES[k]}`);
      // Keys for the variables an example needs (those with a default keep it); an intakes.yaml's certificates from the fixtures.
      const env: Record<string, string> = { CERTS_DIR: TLS.slice(0, -1) };
      for (const [, name] of yaml.matchAll(/\$\{(\w+)\}/g)) env[name as string] = /PORT$/.test(name as string) ? '1514' : `DocsExampleKey${String(Object.keys(env).length).padStart(18, '0')}`;
      try {
        parseConfig(yaml, where, env);
      } catch (err) {
        invalid.push(`${where}: ${(err as Error).message}`);
      }
    }
    expect(invalid).toEqual([]);
  });
});

describe('docs/guides/troubleshooting.md', () => {
  it('explains every error code the relay can report, under its own heading', () => {
    // Every code the source writes as a literal: core's and each component's own.
    const sources = execFileSync('grep', ['-rhoE', "'ERELAY_[A-Z_]+'", join(ROOT, 'src')], { encoding: 'utf8' });
    const codes = [...new Set(sources.split('\n').filter(Boolean).map((c) => c.slice(1, -1)))].filter((c) => c !== 'ERELAY_RELP' /* a prefix matched */);
    expect(codes.length).toBeGreaterThan(20);
    const headings = anchors(readFileSync(join(ROOT, 'docs/guides/troubleshooting.md'), 'utf8'));
    expect(codes.filter((c) => !headings.has(c.toLowerCase()))).toEqual([]);
  });
});
