// The single executable a package is built from, checked before anything is written: it exists, it
// is for this machine's architecture (it is run here, and its libraries resolved here), and it is
// this checkout's build (its --version names the same version and commit); then its --help.
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { parseHelp, type HelpModel } from './help-model.ts';

export interface CheckedBinary {
  readonly path: string;
  /** Debian's name for its architecture. */
  readonly arch: string;
  readonly help: HelpModel;
  /** build/intake-relay-THIRD-PARTY-LICENSES.txt: the notices of what it bundles. */
  readonly thirdParty: string;
}

/** The Debian architecture of an ELF file, from its header's machine field. */
function elfArch(file: string): string | undefined {
  const head = Buffer.alloc(20);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, head, 0, 20, 0);
  } finally {
    closeSync(fd);
  }
  if (head.readUInt32BE(0) !== 0x7f454c46) return undefined;
  return ({ 0x3e: 'amd64', 0xb7: 'arm64' } as Record<number, string>)[head.readUInt16LE(18)];
}

export function checkBinary(path: string, version: string, commit: string): CheckedBinary {
  if (!existsSync(path)) throw new Error(`${path} is missing: build it with npm run package.`);
  const arch = elfArch(path);
  const hostArch = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch];
  if (!arch) throw new Error(`${path} is not an x86-64 or arm64 ELF executable.`);
  if (arch !== hostArch) throw new Error(`${path} is for ${arch}: build its package on an ${arch} machine.`);
  // It runs with nothing of the builder's environment: what it prints must not depend on who builds.
  const run = (arg: string): string => {
    const r = spawnSync(path, [arg], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' } });
    if (r.error || r.status !== 0) throw new Error(`${path} ${arg} failed (${r.error?.message ?? `exit status ${r.status}`}): ${r.stderr}`);
    return r.stdout;
  };
  const said = run('--version');
  // A binary left from another commit would be packaged under this one's name.
  const [, v, c] = /^intake-relay (\S+) \(commit (\w+)/.exec(said) ?? [];
  if (v !== version || c !== commit) {
    throw new Error(`${path} says "${said.trim()}", but this checkout is ${version}, commit ${commit}: rebuild it with npm run package.`);
  }
  const thirdParty = join(dirname(path), 'intake-relay-THIRD-PARTY-LICENSES.txt');
  if (!existsSync(thirdParty)) throw new Error(`${thirdParty} is missing: npm run package writes it beside the binary.`);
  return { path, arch, help: parseHelp(run('--help')), thirdParty };
}
