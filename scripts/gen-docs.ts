// `npm run docs` (and its old name, `npm run schema`): writes config/intake-relay.schema.json from
// the zod schema and every page of docs/reference/ from the code it describes
// (scripts/docs/pages.ts); test/unit/docs-reference.test.ts fails when one is stale.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedFiles } from './docs/pages.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
for (const { path, text } of generatedFiles()) {
  mkdirSync(dirname(join(ROOT, path)), { recursive: true });
  writeFileSync(join(ROOT, path), text);
  process.stdout.write(`wrote ${path}\n`);
}
