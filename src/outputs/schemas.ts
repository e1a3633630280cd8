// Every output type's configuration schema, one line each, for the loader (config/schema.ts). Kept
// apart from the definitions (registry.ts) so that the running relay never loads the schema library.

import { httpOutputSchema } from './http/schema.ts';
import { relpOutputSchema } from './relp/schema.ts';
import { syslogOutputSchema } from './syslog/schema.ts';

/** The schemas, for `intakes[].output`'s discriminated union. */
export const OUTPUT_SCHEMAS = [syslogOutputSchema, httpOutputSchema, relpOutputSchema] as const;
