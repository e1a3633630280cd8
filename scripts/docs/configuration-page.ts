// docs/reference/configuration.md: every key of the configuration file, from the JSON Schema that
// is itself generated from the zod schema the loader parses with (src/config/reference.ts writes
// the tables; the man page carries the same ones).
import { configReference } from '../../src/config/reference.ts';
import { pageHead } from './markdown.ts';

export function configurationPage(schemaJson: string): string {
  return `${pageHead('Configuration reference', 'the configuration schema ([src/config/schema.ts](../../src/config/schema.ts) and the schemas of each input and output type, through [config/intake-relay.schema.json](../../config/intake-relay.schema.json))')}
One YAML file configures any number of intakes, each with its key, its inputs and its output. Unknown
keys, wrong types and unset environment variables are errors, all reported at once with their
\`file:line:column\` (exit status 78). \`\${VAR}\` is replaced by an environment variable (an error if
it is unset), \`\${VAR:-default}\` gives a default, and \`$\${\` is a literal \`\${\`. Lists whose entries
differ by \`type\` (inputs, outputs, queues) are described after the main table, one table per type.
\`intake-relay validate --print -c FILE\` shows the effective configuration, defaults filled in.

${configReference(JSON.parse(schemaJson))}
`;
}
