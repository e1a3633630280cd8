// Where a relay's memory goes under load: preloaded into the relay by the bench
//   RELAY_NODE_FLAGS=--require=$PWD/bench/memory-sampler.cjs MEMORY_SAMPLES=/tmp/mem npm run bench -- tcp
// (CommonJS and --require: a single executable, RELAY_BIN, preloads with --require only)
// it samples process.memoryUsage(), the resident split of /proc/self/status (anonymous, file) and
// V8's heap spaces every 50 ms and writes, to $MEMORY_SAMPLES/mem-<pid>.json, the maximum of each
// field and the whole sample taken at the highest RSS (MiB), once a second and at exit.
'use strict';
const { mkdirSync, readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const v8 = require('node:v8');

const dir = process.env.MEMORY_SAMPLES ?? '/tmp';
mkdirSync(dir, { recursive: true });
const max = {};
let atMaxRss = {};
const kib = (status, field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) * 1024;
function sample() {
  const status = readFileSync('/proc/self/status', 'latin1');
  const m = { ...process.memoryUsage(), rssAnon: kib(status, 'RssAnon'), rssFile: kib(status, 'RssFile') };
  for (const s of v8.getHeapSpaceStatistics()) m[`committed_${s.space_name}`] = s.physical_space_size;
  return m;
}
setInterval(() => {
  const m = sample();
  if (m.rss >= (max.rss ?? 0)) atMaxRss = m;
  for (const [k, v] of Object.entries(m)) max[k] = Math.max(max[k] ?? 0, v);
}, 50).unref();
const mib = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round((10 * v) / 1048576) / 10]));
const dump = () => writeFileSync(join(dir, `mem-${process.pid}.json`), `${JSON.stringify({ max: mib(max), atMaxRss: mib(atMaxRss) }, null, 1)}\n`);
setInterval(dump, 1000).unref();
process.on('exit', dump);
