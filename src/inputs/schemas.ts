// Every input type's configuration schemas, one line each, for the loader (config/schema.ts): its
// schema under `intakes[].inputs` (input) and under `listeners` (listener), undefined where the
// type cannot be one. Kept apart from the definitions (registry.ts) so that the running relay,
// which uses only those, never loads the schema library.

import { fileInputSchema } from './file/config.ts';
import { httpListenerSchema } from './http/config.ts';
import { relpInputSchema, relpListenerSchema } from './relp/schema.ts';
import { tcpInputSchema, tcpListenerSchema } from './tcp/schema.ts';
import { udpInputSchema, udpListenerSchema } from './udp/schema.ts';

export const INPUT_TYPE_SCHEMAS = {
  udp: { input: udpInputSchema, listener: udpListenerSchema },
  tcp: { input: tcpInputSchema, listener: tcpListenerSchema },
  file: { input: fileInputSchema, listener: undefined },
  http: { input: undefined, listener: httpListenerSchema },
  relp: { input: relpInputSchema, listener: relpListenerSchema },
} as const;

type Schemas = typeof INPUT_TYPE_SCHEMAS;
type InputSchema = NonNullable<Schemas[keyof Schemas]['input']>;
type ListenerSchema = NonNullable<Schemas[keyof Schemas]['listener']>;

/** The schemas of `intakes[].inputs` and of `listeners`, for their discriminated unions. */
export const INPUT_SCHEMAS = Object.values(INPUT_TYPE_SCHEMAS).flatMap((d) => (d.input ? [d.input] : [])) as [InputSchema, ...InputSchema[]];
export const LISTENER_SCHEMAS = Object.values(INPUT_TYPE_SCHEMAS).flatMap((d) => (d.listener ? [d.listener] : [])) as [ListenerSchema, ...ListenerSchema[]];
