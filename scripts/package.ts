// `npm run package`: the self-contained `intake-relay` executable, which needs no Node.js on the host.
// src/main.ts is bundled by esbuild into one CommonJS file (what a Node 24 single executable
// application runs), made into a SEA blob by that Node, and injected with postject into a copy of the
// Node 24 binary of the `node` devDependency: build/intake-relay-linux-<arch>, with its .sha256 and
// the licences of what it contains. The host's architecture comes from node_modules; another one
// (arm64 on x64) is the same Node version's npm platform package, fetched once into build/cache.
//   node scripts/package.ts [--arch x64,arm64] [--out DIR]     (default: x64,arm64 into build/)
// --out lets tests build their own copy while another build writes build/.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build, type Metafile, type Plugin } from 'esbuild';
import { gitCommit } from './build-info.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CACHE = join(ROOT, 'build', 'cache');
const require = createRequire(import.meta.url);

/**
 * The launchers' V8 flags (bin/intake-relay.js, `npm start`, which says why each): the young
 * generation's size, gc() for the housekeeping and the memory guard (src/platform/v8-gc.ts), and no
 * allocation-site pretenuring. And one for the executable only: its start-up made two functions (Node's internal
 * require, the logger's redaction path parser) hot enough for Maglev at the default 400, and that
 * one compilation kept 2.2 MiB of the compiler's code resident in a relay that then saw no traffic
 * (`npm run bench:floor`: 60.7 -> 59.0 MiB at rest); under load every hot function still passes
 * 1,500 within microseconds (same CPU per event, measured). From dist/ the ES module loader makes
 * dozens of functions hot at start, so the flag changes nothing there. V8 keeps the flags in its
 * code cache's check, so the blob is made with them too.
 */
const EXEC_ARGV = ['--max-semi-space-size=2', '--heap-growing-percent=50', '--expose-gc', '--no-allocation-site-pretenuring', '--invocation-count-for-maglev=1500'];
/**
 * NODE_OPTIONS meant for some other Node program on the host (a --require, a heap limit) must not
 * reach the daemon; an operator who wants a Node flag says so on its command line instead:
 * `intake-relay --node-options="--max-old-space-size=512" run ...`.
 */
const EXEC_ARGV_EXTENSION = 'cli';
/** Node's documented sentinel: the binary checks it to know that a blob was injected. */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/** ELF e_machine of each architecture, to refuse a binary of the wrong one. */
const ELF_MACHINE: Record<string, number> = { x64: 0x3e, arm64: 0xb7 };

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** The Node binary of the `node` devDependency (the host's architecture). */
function hostNode(): string {
  return join(dirname(require.resolve('node/package.json')), 'bin', 'node');
}

/** Node `version` for `arch` from the npm registry's platform package, cached in build/cache. */
function fetchedNode(version: string, arch: string): { node: string; license: string } {
  const dir = join(CACHE, `node-linux-${arch}-${version}`);
  if (!existsSync(join(dir, 'package', 'bin', 'node'))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    log(`fetching node-linux-${arch}@${version} from the npm registry`);
    const tgz = execFileSync('npm', ['pack', '--silent', `node-linux-${arch}@${version}`, '--pack-destination', dir], { encoding: 'utf8' }).trim().split('\n').pop() as string;
    execFileSync('tar', ['-xzf', join(dir, tgz), '-C', dir, 'package/bin/node', 'package/LICENSE']);
    rmSync(join(dir, tgz));
  }
  return { node: join(dir, 'package', 'bin', 'node'), license: join(dir, 'package', 'LICENSE') };
}

/**
 * postject, as a process: its ELF parser (LIEF) prints "Can't find string offset for section name"
 * for each of Node's .note sections, noise that says nothing about the result (the executable is
 * run right after); anything else it says is shown.
 */
function injectBlob(node: string, executable: string, blob: string): void {
  const cli = join(dirname(require.resolve('postject/package.json')), 'dist', 'cli.js');
  const r = spawnSync(node, [cli, executable, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE], { encoding: 'utf8' });
  const noise = /^warning: Can't find string offset for section name '\.note[.\d]*'$/;
  if (r.status !== 0) throw new Error(`postject failed (${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  for (const l of r.stderr.split('\n')) if (l && !noise.test(l)) log(`postject: ${l}`);
}

function elfMachine(file: string): number {
  const head = Buffer.alloc(20);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, head, 0, 20, 0);
  } finally {
    closeSync(fd);
  }
  if (head.readUInt32BE(0) !== 0x7f454c46) throw new Error(`${file} is not an ELF executable.`);
  return head.readUInt16LE(18);
}

/**
 * src/version.ts reads package.json and .git through import.meta.url, which a CommonJS bundle lacks;
 * with INTAKE_RELAY_BUILD defined those lines never run, but esbuild warns about them. They get the
 * executable's own file URL instead, so that any other module's import.meta still warns.
 */
const versionFileUrl: Plugin = {
  name: 'version-file-url',
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/]version\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes('import.meta.url')) throw new Error(`${args.path} no longer reads import.meta.url: drop this plugin.`);
      return { contents: text.replaceAll('import.meta.url', "require('node:url').pathToFileURL(__filename).href"), loader: 'ts' };
    });
  },
};

/**
 * Libraries that only the configuration's loader (a child process at start and reload), the commands
 * and the HTTP output use. Every thread keeps its main script in its heap as text, where these were
 * 1.7 of the 2.3 MB without being run by the daemon: each is bundled apart, an asset that the
 * executable compiles the first time something requires it (lazyLibrary).
 */
const LAZY_LIBRARIES = ['undici', 'zod', 'yaml'];
const lazyAsset = (name: string): string => `lib/${name}.cjs`;

/** What `import ... from '<name>'` becomes in the main bundle: the library's asset, compiled there and then. */
const lazyLibrary: Plugin = {
  name: 'lazy-library',
  setup(b) {
    b.onResolve({ filter: new RegExp(`^(${LAZY_LIBRARIES.join('|')})$`) }, (args) => ({ path: args.path, namespace: 'lazy-library' }));
    b.onLoad({ filter: /.*/, namespace: 'lazy-library' }, (args) => ({
      loader: 'js',
      contents: `const asset = ${JSON.stringify(lazyAsset(args.path))};
require('node:vm').compileFunction(require('node:sea').getAsset(asset, 'utf8'), ['exports', 'require', 'module'], { filename: asset })(module.exports, require, module);
`,
    }));
  },
};

/** Options common to the main bundle and the libraries' bundles. */
const BUNDLE_OPTIONS = {
  absWorkingDir: ROOT,
  bundle: true,
  platform: 'node',
  target: 'node24',
  // A Node 24 SEA runs its main script as CommonJS.
  format: 'cjs',
  // Names stay: stack traces in logs must stay readable; whitespace alone is most of the saving.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
} as const;

/** The bundle: every dependency inlined but the lazy libraries, version and commit as constants (src/version.ts). */
async function bundle(work: string, version: string, commit: string): Promise<{ file: string; metafile: Metafile }> {
  const file = join(work, 'intake-relay.cjs');
  const result = await build({
    ...BUNDLE_OPTIONS,
    entryPoints: [join(ROOT, 'src', 'main.ts')],
    outfile: file,
    define: { INTAKE_RELAY_BUILD: JSON.stringify({ version, commit }) },
    plugins: [versionFileUrl, lazyLibrary],
  });
  return { file, metafile: result.metafile };
}

/** The UDP receive thread's own small bundle (Node's built-in modules only): it runs in threads with a small heap. */
async function bundleReceiveThread(work: string): Promise<{ file: string; metafile: Metafile }> {
  const file = join(work, 'udp-receive-thread.cjs');
  const result = await build({ ...BUNDLE_OPTIONS, entryPoints: [join(ROOT, 'src', 'inputs', 'udp', 'receive-thread-entry.ts')], outfile: file });
  return { file, metafile: result.metafile };
}

/** Each lazy library as a CommonJS bundle of its own (ES module exports, as the main bundle imported them): asset name → file. */
async function bundleLibraries(work: string): Promise<{ files: Record<string, string>; metafiles: Metafile[] }> {
  const files: Record<string, string> = {};
  const metafiles: Metafile[] = [];
  for (const name of LAZY_LIBRARIES) {
    const file = join(work, lazyAsset(name));
    const result = await build({ ...BUNDLE_OPTIONS, stdin: { contents: `export * from ${JSON.stringify(name)};\n`, resolveDir: ROOT, loader: 'js' }, outfile: file });
    files[lazyAsset(name)] = file;
    metafiles.push(result.metafile);
  }
  return { files, metafiles };
}

/** The licences of the npm packages the bundle contains, then Node's own. */
function licences(metafiles: Metafile[], nodeLicense: string | undefined, nodeVersion: string): string {
  const packages = new Set<string>();
  for (const input of metafiles.flatMap((m) => Object.keys(m.inputs))) {
    const m = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m) packages.add(input.slice(0, (m.index ?? 0) + m[0].length));
  }
  const parts = [...packages].sort().map((dir) => {
    const pkg = JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as { name: string; version: string; license?: string };
    const file = readdirSync(join(ROOT, dir)).find((f) => /^(licen[cs]e|copying)/i.test(f));
    const text = file ? readFileSync(join(ROOT, dir, file), 'utf8').trim() : `(no licence file; package.json says ${pkg.license ?? 'nothing'})`;
    return `${pkg.name} ${pkg.version} (${pkg.license ?? 'unknown'})\n\n${text}`;
  });
  const node = nodeLicense && existsSync(nodeLicense)
    ? readFileSync(nodeLicense, 'utf8').trim()
    : `See https://github.com/nodejs/node/blob/v${nodeVersion}/LICENSE`;
  parts.push(`Node.js ${nodeVersion} (MIT, and the licences of the libraries it contains)\n\n${node}`);
  return `intake-relay's single executable contains the following software.\n\n${parts.join(`\n\n${'-'.repeat(72)}\n\n`)}\n`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { arch: { type: 'string', default: 'x64,arm64' }, out: { type: 'string', default: join(ROOT, 'build') } } });
  const out = resolve(values.out);
  const work = join(out, 'sea');
  const arches = values.arch.split(',').filter(Boolean);
  for (const a of arches) if (!(a in ELF_MACHINE)) throw new Error(`--arch ${a}: only ${Object.keys(ELF_MACHINE).join(', ')}.`);
  const started = Date.now();
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const commit = gitCommit();
  const host = hostNode();
  const nodeVersion = execFileSync(host, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const { file: main, metafile } = await bundle(work, version, commit);
  const libraries = await bundleLibraries(work);
  const receiveThread = await bundleReceiveThread(work);
  const kib = (file: string): string => `${(readFileSync(file).length / 1024).toFixed(0)} KiB`;
  log(`bundled src/main.ts: ${kib(main)}, and apart ${Object.entries(libraries.files).map(([asset, file]) => `${asset} ${kib(file)}`).join(', ')} (intake-relay ${version}, commit ${commit}, Node.js ${nodeVersion})`);
  let nodeLicense: string | undefined = join(dirname(require.resolve('node/package.json')), 'node_modules', `node-linux-${process.arch}`, 'LICENSE');

  for (const arch of arches) {
    const native = arch === process.arch;
    const fetched = native ? undefined : fetchedNode(nodeVersion, arch);
    const node = fetched?.node ?? host;
    if (elfMachine(node) !== ELF_MACHINE[arch]) throw new Error(`${node} is not a linux-${arch} binary.`);
    if (fetched) nodeLicense = fetched.license;
    // The blob is made by the same Node version it goes into. V8's code cache only loads on the
    // architecture that compiled it, so a foreign architecture's blob goes without it.
    const config = join(work, `sea-config-${arch}.json`);
    const blob = join(work, `sea-${arch}.blob`);
    // The bundle is also an asset: worker threads (workers: N) run it, written to a temporary file,
    // and so is the UDP receive thread's own bundle. So are the lazy
    // libraries (LAZY_LIBRARIES), and the native addon, built for this machine's architecture only
    // (no cross compiler): another architecture's executable receives UDP with Node's dgram, and
    // locks its state directories with flock(1).
    const assets: Record<string, string> = { 'intake-relay.cjs': main, 'udp-receive-thread.cjs': receiveThread.file, ...libraries.files };
    if (native) {
      const built = spawnSync(host, [join(ROOT, 'native', 'compile.mjs'), '--strict'], { encoding: 'utf8' });
      if (built.status === 0) assets['relay.node'] = join(ROOT, 'native', 'build', 'relay.node');
      else log(`native addon not included: ${built.stderr.trim()}`);
    }
    writeFileSync(config, JSON.stringify({ main, output: blob, assets, disableExperimentalSEAWarning: true, useSnapshot: false, useCodeCache: native, execArgv: EXEC_ARGV, execArgvExtension: EXEC_ARGV_EXTENSION }, null, 2));
    execFileSync(host, [...EXEC_ARGV, '--experimental-sea-config', config], { stdio: ['ignore', 'ignore', 'inherit'] });

    const exe = join(out, `intake-relay-linux-${arch}`);
    const partial = `${exe}.partial`;
    copyFileSync(node, partial);
    chmodSync(partial, 0o755);
    injectBlob(host, partial, blob);
    if (native) {
      // The executable must start and know what it is before it replaces a previous one.
      const v = execFileSync(partial, ['--version'], { encoding: 'utf8', env: { PATH: '/nonexistent' } });
      if (!v.startsWith(`intake-relay ${version} (commit ${commit}, Node.js v${nodeVersion}`)) throw new Error(`${partial} --version printed: ${v}`);
    }
    renameSync(partial, exe);
    const bytes = readFileSync(exe);
    writeFileSync(`${exe}.sha256`, `${createHash('sha256').update(bytes).digest('hex')}  intake-relay-linux-${arch}\n`);
    log(`wrote ${exe}: ${(bytes.length / 2 ** 20).toFixed(1)} MiB${native ? '' : ' (not run here: another architecture)'}`);
  }
  writeFileSync(join(out, 'intake-relay-THIRD-PARTY-LICENSES.txt'), licences([metafile, ...libraries.metafiles], nodeLicense, nodeVersion));
  log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

await main();
