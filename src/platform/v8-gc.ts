// V8's memory-reducing full collection, which the process's housekeeping runs when its outputs
// fall idle (runtime/housekeeping.ts): it compacts the heap and gives its emptied pages back, where
// V8's own collections keep them for the next burst. After the start, a relay at rest held 24-25
// MiB of anonymous memory; one such collection brought it to 19-20 (the start's garbage: module
// loading, configuration). The launchers give --expose-gc for it (bin/intake-relay.js, `npm start`,
// the single executable); run without it, there is none and nothing is collected ahead of V8.

type ExposedGc = (options?: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/** The collection, or undefined where Node was started without --expose-gc. */
export function memoryReducingGc(): (() => void) | undefined {
  const gc = (globalThis as { gc?: ExposedGc }).gc;
  return typeof gc === 'function' ? () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }) : undefined;
}

/** A full collection (not memory-reducing: V8 keeps its emptied pages), or undefined without --expose-gc. */
export function majorGc(): (() => void) | undefined {
  const gc = (globalThis as { gc?: (options?: { type: 'major'; execution: 'sync' }) => void }).gc;
  return typeof gc === 'function' ? () => gc({ type: 'major', execution: 'sync' }) : undefined;
}
