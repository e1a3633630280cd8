// JSON Schema of the configuration file, generated from the zod schema (editor completion).
import { z } from 'zod';
import { configSchema } from './schema.ts';

export function configJsonSchema(): string {
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' });
  return `${JSON.stringify({ ...schema, title: 'intake-relay configuration' }, null, 2)}\n`;
}
