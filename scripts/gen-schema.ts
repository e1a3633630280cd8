// Writes config/intake-relay.schema.json from the zod schema (`npm run schema`); a test fails when
// the committed file is stale.
import { writeFileSync } from 'node:fs';
import { configJsonSchema } from '../src/config/json-schema.ts';

const out = new URL('../config/intake-relay.schema.json', import.meta.url);
writeFileSync(out, configJsonSchema());
process.stdout.write(`wrote ${out.pathname}\n`);
