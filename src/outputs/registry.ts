// Every output type, one line each: the loader, `validate`, `check`, `send`, the start-up log and
// the daemon all go through this map (and schemas.ts, one line each too, holds their schemas).
// A type that is not built in (a test's, a plug-in's) is added with registerOutput() here and
// registerOutputSchema() in schemas.ts, before the configuration is loaded.

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


/** Output types added at run time, by their type. */
const REGISTERED = new Map<string, OutputDefinition<never, unknown>>();

/** Adds an output type that is not built in; its configuration schema goes to registerOutputSchema() (schemas.ts). */
export function registerOutput<Config, Resolved>(type: string, definition: OutputDefinition<Config, Resolved>): void {
  if (Object.hasOwn(OUTPUTS, type)) throw new Error(`output type "${type}" is built in`);
  REGISTERED.set(type, definition as unknown as OutputDefinition<never, unknown>);
}

/** The definition of `o`'s type, seen through the common interface. */
export function outputOf(o: { readonly type: OutputType }): OutputDefinition<OutputConfig, ResolvedOutput> {
  // One definition per type; each takes its own configuration, which `o.type` selects.
  const def = Object.hasOwn(OUTPUTS, o.type) ? OUTPUTS[o.type] : REGISTERED.get(o.type);
  if (!def) throw new Error(`no output type "${o.type}"`);
  return def as unknown as OutputDefinition<OutputConfig, ResolvedOutput>;
}
