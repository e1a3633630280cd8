// docs/reference/: every page is what `npm run docs` writes from the code now, the environment page
// lists every variable the program reads (found by scanning src/ and the shipped configurations),
// and the operations page names every path and query parameter the server answers.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configurationReads, environmentReads, sourceReads } from '../../scripts/docs/env-scan.ts';
import { ENVIRONMENT } from '../../scripts/docs/environment.ts';
import { generatedFiles, REFERENCE_DIR } from '../../scripts/docs/pages.ts';

const ROOT = new URL('../../', import.meta.url).pathname;
const read = (path: string): string => (existsSync(join(ROOT, path)) ? readFileSync(join(ROOT, path), 'utf8') : '');

describe('the generated reference', () => {
  const files = generatedFiles();

  it('is committed as npm run docs writes it now', () => {
    const stale = files.filter((f) => read(f.path) !== f.text).map((f) => f.path);
    expect(stale, 'stale: run npm run docs').toEqual([]);
  });

  it('has no page in docs/reference/ that npm run docs does not write', () => {
    const written = files.map((f) => f.path);
    const pages = readdirSync(join(ROOT, REFERENCE_DIR)).filter((f) => f.endsWith('.md')).map((f) => `${REFERENCE_DIR}/${f}`);
    expect(pages.filter((p) => !written.includes(p))).toEqual([]);
    expect(written).toContain(`${REFERENCE_DIR}/README.md`);
  });

  it('names every path the operations server answers, and every query parameter it reads', () => {
    const server = read('src/telemetry/ops-server.ts');
    const paths = [...server.matchAll(/\burl === '(\/[\w-]+)'/g)].map((m) => m[1]!);
    const params = [...server.matchAll(/\bq\.get\('(\w+)'\)|\bintParam\(q, '(\w+)'/g)].map((m) => (m[1] ?? m[2])!);
    expect(new Set(paths)).toEqual(new Set(['/metrics', '/healthz', '/readyz', '/status', '/snapshot', '/senders', '/tap']));
    expect(new Set(params)).toEqual(new Set(['intake', 'input', 'silent', 'limit', 'rate']));
    const page = read(`${REFERENCE_DIR}/ops-endpoints.md`);
    expect(paths.filter((p) => !page.includes(`\n## \`${p}\`\n`))).toEqual([]);
    expect(params.filter((p) => !page.includes(`| \`${p}\` |`))).toEqual([]);
  });
});

describe('the environment reference', () => {
  const listed = new Set(ENVIRONMENT.flatMap((v) => v.names));

  it('finds reads of every shape the code uses', () => {
    const ts = [
      "const a = process.env.INTAKE_RELAY_X ?? process.env['Y_VAR'];",
      "// process.env.IN_A_COMMENT is not read",
      'const p = env.METRICS_ADDRESS?.trim(); const d = r.env[\'STATE_DIRECTORY\']; const m = this.#env.metrics;',
      "const set = (name: string): string | undefined => (env[name] === '' ? undefined : env[name]);",
      "const region = set('REGION');",
      'const dir = mkdtempSync(join(tmpdir(), "x"));',
    ].join('\n');
    expect(sourceReads('x.ts', ts).map((r) => r.name).sort()).toEqual(['INTAKE_RELAY_X', 'METRICS_ADDRESS', 'REGION', 'STATE_DIRECTORY', 'TMPDIR', 'Y_VAR']);
    expect(sourceReads('x.ts', ts).find((r) => r.name === 'REGION')?.where).toBe('x.ts:5');
    const yaml = 'region: ${REGION:-fra1}\n# key: ${IN_A_COMMENT}\nkey: ${INTAKE_KEY} # ${ALSO_A_COMMENT}\nliteral: $${NOT_A_VAR}\n';
    expect(configurationReads('c.yaml', yaml)).toEqual([{ name: 'REGION', where: 'c.yaml:1' }, { name: 'INTAKE_KEY', where: 'c.yaml:3' }]);
  });

  it('lists every variable src/ and the shipped configurations read (add it to scripts/docs/environment.ts)', () => {
    const reads = environmentReads(ROOT);
    // The scan sees the three ways in: the entry point, a helper of the forwarder's variables, a configuration.
    for (const name of ['INTAKE_RELAY_CONFIG', 'RELP_OUTPUT', 'STATE_DIRECTORY', 'INTAKE_KEY', 'TMPDIR']) expect(reads.map((r) => r.name)).toContain(name);
    expect(reads.filter((r) => !listed.has(r.name)).map((r) => `${r.name} (${r.where})`)).toEqual([]);
  });

  it('lists no variable that nothing reads, unless it says who reads it outside the code', () => {
    const read = new Set(environmentReads(ROOT).map((r) => r.name));
    const unread = ENVIRONMENT.filter((v) => v.outside === undefined).flatMap((v) => v.names).filter((n) => !read.has(n));
    expect(unread, 'read nowhere: remove it from scripts/docs/environment.ts').toEqual([]);
    // An `outside` that the scan now sees is no longer outside.
    const seen = ENVIRONMENT.filter((v) => v.outside !== undefined).flatMap((v) => v.names).filter((n) => read.has(n));
    expect(seen, 'found in the code: drop its `outside`').toEqual([]);
    expect(ENVIRONMENT.flatMap((v) => v.names).length).toBe(listed.size);
  });

  it('describes them in text the man page can render too: code spans, no links or emphasis', () => {
    const texts = ENVIRONMENT.flatMap((v) => [v.readBy, v.does, v.default]);
    expect(texts.filter((t) => /\]\(|\*\*/.test(t) || (t.split('`').length - 1) % 2 !== 0)).toEqual([]);
  });
});
