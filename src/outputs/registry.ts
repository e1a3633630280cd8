// Every output type, one line each: the loader, `validate`, `check`, `send`, the start-up log and
// the daemon all go through this map (and schemas.ts, one line each too, holds their schemas).

import type { OutputDefinition } from '../core/component.ts';
import { httpOutput } from './http/definition.ts';
import { relpOutput } from './relp/definition.ts';
import { syslogOutput } from './syslog/definition.ts';

export const OUTPUTS = {
  syslog: syslogOutput,
  http: httpOutput,
  relp: relpOutput,
} as const;

export type OutputType = keyof typeof OUTPUTS;
type Def<T extends OutputType> = (typeof OUTPUTS)[T];
/** An output's configuration as written (one of the types'). */
export type OutputConfig = { [T in OutputType]: Parameters<Def<T>['resolve']>[0] }[OutputType];
/** An output's configuration, resolved (one of the types'). */
export type ResolvedOutput = { [T in OutputType]: ReturnType<Def<T>['resolve']> }[OutputType];


/** The definition of `o`'s type, seen through the common interface. */
export function outputOf(o: { readonly type: OutputType }): OutputDefinition<OutputConfig, ResolvedOutput> {
  // One definition per type; each takes its own configuration, which `o.type` selects.
  return OUTPUTS[o.type] as unknown as OutputDefinition<OutputConfig, ResolvedOutput>;
}
