// Every input type, one line each: the loader, `validate`, the start-up log and the daemon all go
// through this map (and schemas.ts, one line each too, holds their configuration schemas).

import type { InputDefinition } from '../core/component.ts';
import type { INPUT_TYPE_SCHEMAS } from './schemas.ts';
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

/** Types that can be an intake's own input, and types that can be a shared listener (as their schemas say: schemas.ts). */
type Schemas = typeof INPUT_TYPE_SCHEMAS;
type IntakeInputType = { [T in InputType]: Schemas[T]['input'] extends undefined ? never : T }[InputType];
type ListenerType = { [T in InputType]: Schemas[T]['listener'] extends undefined ? never : T }[InputType];

/**
 * An intake's input, and a shared listener, resolved (one of the types'). A type that can be both
 * tells them apart by the routes a shared listener has.
 */
type Routed = { readonly routes: unknown };
export type ResolvedInput = { [T in IntakeInputType]: Schemas[T]['listener'] extends undefined ? Resolved<T> : Exclude<Resolved<T>, Routed> }[IntakeInputType];
export type ResolvedListener = { [T in ListenerType]: Schemas[T]['input'] extends undefined ? Resolved<T> : Extract<Resolved<T>, Routed> }[ListenerType];
type AnyResolved = { [T in InputType]: Resolved<T> }[InputType];
type AnyConfig = { [T in InputType]: Parameters<Def<T>['resolve']>[0] }[InputType];

/** The definition of `c`'s type, seen through the common interface. */
export function inputOf(c: { readonly type: InputType }): InputDefinition<AnyConfig, AnyResolved> {
  // One definition per type; each takes its own configuration, which `c.type` selects.
  return INPUTS[c.type] as unknown as InputDefinition<AnyConfig, AnyResolved>;
}

/** Every input type claims the state its configured inputs own (InputDefinition.holdState), before any starts. */
export function holdInputState(dataDir: string, intakes: readonly { readonly name: string; readonly inputs: readonly ResolvedInput[] }[]): void {
  for (const def of Object.values(INPUTS) as readonly InputDefinition<AnyConfig, AnyResolved>[]) {
    if (!def.holdState) continue;
    const mine = intakes.flatMap((i) => i.inputs.filter((c) => INPUTS[c.type] === (def as unknown)).map((config) => ({ intake: i.name, config: config as AnyResolved })));
    if (mine.length > 0) def.holdState(dataDir, mine);
  }
}
