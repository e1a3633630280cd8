// V8's full collections, for the process's housekeeping and its memory guard. The launchers give
// --expose-gc for them (bin/intake-relay.js, `npm start`, the single executable); run without it,
// there are none and nothing is collected ahead of V8.
// - The memory-reducing one runs when a thread's outputs fall idle (runtime/housekeeping.ts): it
//   compacts the heap and gives its emptied pages back, where V8's own collections keep them for
//   the next burst. After the start, a relay at rest held 24-25 MiB of anonymous memory; one such
//   collection brought it to 19-20 (the start's garbage: module loading, configuration).
// - The plain one runs under load when memory nears memory_bytes (runtime/memory-guard.ts): it
//   frees the dead buffers waiting in the old generation in one pass (the memory-reducing one
//   collects again and again while that frees more).

type ExposedGc = (options?: { type: 'major'; execution: 'sync'; flavor?: 'last-resort' }) => void;

function exposedGc(): ExposedGc | undefined {
  const gc = (globalThis as { gc?: ExposedGc }).gc;
  return typeof gc === 'function' ? gc : undefined;
}

/** The memory-reducing collection, or undefined where Node was started without --expose-gc. */
export function memoryReducingGc(): (() => void) | undefined {
  const gc = exposedGc();
  return gc && (() => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }));
}

/** A full collection (V8 keeps its emptied pages), or undefined without --expose-gc. */
export function majorGc(): (() => void) | undefined {
  const gc = exposedGc();
  return gc && (() => gc({ type: 'major', execution: 'sync' }));
}
