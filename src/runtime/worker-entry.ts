// Where a worker thread starts from dist/ or src/ (worker-handle.ts); the single executable starts
// its workers from its own bundle, whose main script (main.ts) calls runWorker() instead.
import { runWorker } from './worker-main.ts';

await runWorker();
