// Where a relay's memory goes under load: preloaded into the relay by the bench
//   RELAY_NODE_FLAGS=--import=$PWD/bench/memory-sampler.mjs MEMORY_SAMPLES=/tmp/mem npm run bench -- tcp
// it samples process.memoryUsage() every 50 ms and writes, to $MEMORY_SAMPLES/mem-<pid>.json, the
// maximum of each field and the whole sample taken at the highest RSS (MB), once a second and at exit.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.MEMORY_SAMPLES ?? '/tmp';
mkdirSync(dir, { recursive: true });
const max = {};
let atMaxRss = {};
setInterval(() => {
  const m = process.memoryUsage();
  if (m.rss >= (max.rss ?? 0)) atMaxRss = m;
  for (const [k, v] of Object.entries(m)) max[k] = Math.max(max[k] ?? 0, v);
}, 50).unref();
const mb = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v / 1048576)]));
const dump = () => writeFileSync(join(dir, `mem-${process.pid}.json`), `${JSON.stringify({ max: mb(max), atMaxRss: mb(atMaxRss) })}\n`);
setInterval(dump, 1000).unref();
process.on('exit', dump);
