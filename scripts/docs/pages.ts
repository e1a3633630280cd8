// Every file `npm run docs` writes: the configuration's JSON Schema and the pages of
// docs/reference/, each from the code it describes, and the index of those pages.
import { configJsonSchema } from '../../src/config/json-schema.ts';
import { cliPage } from './cli-page.ts';
import { configurationPage } from './configuration-page.ts';
import { environmentPage } from './environment-page.ts';
import { exitCodesPage } from './exit-codes-page.ts';
import { helpModel } from './help-text.ts';
import { pageHead } from './markdown.ts';
import { metricsPage } from './metrics-page.ts';
import { opsEndpointsPage } from './ops-endpoints-page.ts';

export interface GeneratedFile {
  /** Relative to the checkout. */
  readonly path: string;
  readonly text: string;
}

export const REFERENCE_DIR = 'docs/reference';

interface Page {
  readonly file: string;
  /** One line for the index: what the page answers. */
  readonly about: string;
  readonly text: string;
}

function indexPage(pages: readonly Page[]): string {
  const title = (p: Page): string => /^# (.+)$/m.exec(p.text)?.[1] ?? p.file;
  return `${pageHead('Reference', '[scripts/docs/](../../scripts/docs) with the pages it lists')}
Each page is generated from the code it describes, and a test fails when one is stale.

${pages.map((p) => `- [${title(p)}](${p.file}): ${p.about}.`).join('\n')}
`;
}

export function generatedFiles(): GeneratedFile[] {
  const schema = configJsonSchema();
  const help = helpModel();
  const pages: Page[] = [
    { file: 'configuration.md', about: 'every key of the configuration file, with its type, default and meaning', text: configurationPage(schema) },
    { file: 'cli.md', about: 'every command and option of `intake-relay`', text: cliPage(help) },
    { file: 'environment.md', about: 'every environment variable the relay reads, who reads it and its default', text: environmentPage() },
    { file: 'metrics.md', about: 'every metric `/metrics` exports, with its labels, and why events are dropped', text: metricsPage() },
    { file: 'ops-endpoints.md', about: '`/metrics`, `/healthz`, `/readyz`, `/status`, `/senders` and `/tap`, and who may call them', text: opsEndpointsPage(schema) },
    { file: 'exit-codes.md', about: 'what each exit status means', text: exitCodesPage(help) },
  ];
  return [
    { path: 'config/intake-relay.schema.json', text: schema },
    ...[...pages, { file: 'README.md', about: '', text: indexPage(pages) }].map((p) => ({ path: `${REFERENCE_DIR}/${p.file}`, text: p.text })),
  ];
}
