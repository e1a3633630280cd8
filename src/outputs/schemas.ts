// Every output type's configuration schema, one line each, for the loader (config/schema.ts). Kept
// apart from the definitions (registry.ts) so that the running relay never loads the schema library.

import type { z } from 'zod';
import { httpEndpointKeys, httpOutputSchema } from './http/schema.ts';
import { relpEndpointKeys, relpOutputSchema } from './relp/schema.ts';
import { syslogEndpointKeys, syslogOutputSchema } from './syslog/schema.ts';

/** The schemas, for `intakes[].output`'s discriminated union. */
export const OUTPUT_SCHEMAS = [syslogOutputSchema, httpOutputSchema, relpOutputSchema] as const;

/** The `endpoints:` keys each output type reads, for the configuration's `endpoints`. */
export const OUTPUT_ENDPOINT_KEYS = { ...syslogEndpointKeys, ...relpEndpointKeys, ...httpEndpointKeys };

/** An output type's schema: a strict object whose `type` is a literal. */
export type OutputSchema = z.ZodObject<{ type: z.ZodLiteral<string> } & z.ZodRawShape>;

const REGISTERED: OutputSchema[] = [];

/** The schema of an output type added with registerOutput() (registry.ts). */
export function registerOutputSchema(schema: OutputSchema): void {
  REGISTERED.push(schema);
}

/** The schemas of the output types added at run time. */
export function registeredOutputSchemas(): readonly OutputSchema[] {
  return REGISTERED;
}
