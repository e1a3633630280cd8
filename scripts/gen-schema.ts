// `npm run schema`: writes config/intake-relay.schema.json from the zod schema and the
// configuration reference in README.md from that; a test fails when either is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { configJsonSchema } from '../src/config/json-schema.ts';
import { configReference, withReference } from '../src/config/reference.ts';

const schemaFile = new URL('../config/intake-relay.schema.json', import.meta.url);
const readmeFile = new URL('../README.md', import.meta.url);
const schema = configJsonSchema();
writeFileSync(schemaFile, schema);
writeFileSync(readmeFile, withReference(readFileSync(readmeFile, 'utf8'), configReference(JSON.parse(schema))));
process.stdout.write(`wrote ${schemaFile.pathname} and the reference in ${readmeFile.pathname}\n`);
