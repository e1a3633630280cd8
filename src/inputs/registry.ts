// Every input type, one line each: the configuration schema (intakes' inputs and shared
// listeners), the loader, `validate`, the start-up log and the daemon all go through this map.

import type { InputDefinition } from '../core/component.ts';
import { fileInput } from './file/definition.ts';
import { httpInput } from './http/definition.ts';
import { relpInput } from './relp/definition.ts';
import { tcpInput } from './tcp/definition.ts';
import { udpInput } from './udp/definition.ts';

export const INPUTS = {
  udp: udpInput,
  tcp: tcpInput,
  file: fileInput,
  http: httpInput,
  relp: relpInput,
} as const;

export type InputType = keyof typeof INPUTS;
type Def<T extends InputType> = (typeof INPUTS)[T];
type Resolved<T extends InputType> = ReturnType<Def<T>['resolve']>;

/** Types that can be an intake's own input, and types that can be a shared listener. */
type IntakeInputType = { [T in InputType]: Def<T>['inputSchema'] extends undefined ? never : T }[InputType];
type ListenerType = { [T in InputType]: Def<T>['listenerSchema'] extends undefined ? never : T }[InputType];

type InputSchema = NonNullable<Def<IntakeInputType>['inputSchema']>;
type ListenerSchema = NonNullable<Def<ListenerType>['listenerSchema']>;

/** The schemas of `intakes[].inputs` and of `listeners`, for their discriminated unions. */
export const INPUT_SCHEMAS = Object.values(INPUTS).flatMap((d) => (d.inputSchema ? [d.inputSchema] : [])) as [InputSchema, ...InputSchema[]];
export const LISTENER_SCHEMAS = Object.values(INPUTS).flatMap((d) => (d.listenerSchema ? [d.listenerSchema] : [])) as [ListenerSchema, ...ListenerSchema[]];

/**
 * An intake's input, and a shared listener, resolved (one of the types'). A type that can be both
 * tells them apart by the routes a shared listener has.
 */
type Routed = { readonly routes: unknown };
export type ResolvedInput = { [T in IntakeInputType]: Def<T>['listenerSchema'] extends undefined ? Resolved<T> : Exclude<Resolved<T>, Routed> }[IntakeInputType];
export type ResolvedListener = { [T in ListenerType]: Def<T>['inputSchema'] extends undefined ? Resolved<T> : Extract<Resolved<T>, Routed> }[ListenerType];
type AnyResolved = { [T in InputType]: Resolved<T> }[InputType];
type AnyConfig = { [T in InputType]: Parameters<Def<T>['resolve']>[0] }[InputType];

/** The definition of `c`'s type, seen through the common interface. */
export function inputOf(c: { readonly type: InputType }): InputDefinition<AnyConfig, AnyResolved> {
  // One definition per type; each takes its own configuration, which `c.type` selects.
  return INPUTS[c.type] as unknown as InputDefinition<AnyConfig, AnyResolved>;
}
