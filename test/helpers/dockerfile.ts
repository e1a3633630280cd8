// Reads the repository's Dockerfile as the builder does (stages, instructions, ARG substitution,
// COPY sources and destinations), for the tests that check its rules and rebuild its final stage's
// filesystem layout without a container engine.
import { readFileSync } from 'node:fs';

export const DOCKERFILE = new URL('../../Dockerfile', import.meta.url).pathname;

export interface Instruction {
  readonly keyword: string;
  readonly args: string;
  readonly line: number;
}

export interface Stage {
  /** As written (`${BUILD_IMAGE}`), and with the global ARGs' defaults in place. */
  readonly image: string;
  readonly imageDefault: string;
  readonly name: string | undefined;
  readonly platform: string | undefined;
  readonly instructions: readonly Instruction[];
}

export interface Copy {
  readonly from: string | undefined;
  /** "uid:gid" as written, or undefined: root's. */
  readonly chown: string | undefined;
  readonly sources: readonly string[];
  readonly dest: string;
}

/** Instructions by stage: continuation lines joined, comments and parser directives left out. */
export function parseDockerfile(text: string = readFileSync(DOCKERFILE, 'utf8')): Stage[] {
  const stages: { image: string; imageDefault: string; name: string | undefined; platform: string | undefined; instructions: Instruction[] }[] = [];
  /** ARGs before the first FROM: what FROM lines may use. */
  const globals: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let logical = lines[i]!;
    if (/^\s*(#|$)/.test(logical)) continue;
    while (logical.endsWith('\\') && i + 1 < lines.length) {
      logical = logical.slice(0, -1);
      // Comment lines inside a continued instruction are dropped, as the builder does.
      do i++; while (i < lines.length && /^\s*#/.test(lines[i]!));
      logical += ` ${lines[i] ?? ''}`;
    }
    const m = /^\s*(\S+)\s*(.*)$/.exec(logical);
    if (!m) continue;
    const keyword = m[1]!.toUpperCase();
    const args = m[2]!.trim();
    if (keyword === 'FROM') {
      const from = /^(?:--platform=(\S+)\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!from) throw new Error(`Dockerfile:${start + 1}: FROM ${args}: not understood`);
      const imageDefault = from[2]!.replace(/\$\{?([A-Za-z_]\w*)\}?/g, (_m, n: string) => globals[n] ?? '');
      stages.push({ platform: from[1], image: from[2]!, imageDefault, name: from[3], instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage && keyword === 'ARG') {
      Object.assign(globals, keyValues(args));
      continue;
    }
    if (!stage) throw new Error(`Dockerfile:${start + 1}: ${keyword} before FROM`);
    stage.instructions.push({ keyword, args, line: start + 1 });
  }
  return stages;
}

/** KEY=value pairs (ENV, LABEL, ARG), double-quoted values unquoted. */
export function keyValues(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of args.matchAll(/([A-Za-z_][\w.-]*)(?:=("(?:[^"\\]|\\.)*"|\S*))?/g)) {
    const raw = m[2] ?? '';
    out[m[1]!] = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
  }
  return out;
}

/** An exec-form argument list: ["a", "b"]. */
export function execForm(args: string): string[] {
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) throw new Error(`not an exec form: ${args}`);
  return parsed;
}

export function parseCopy(args: string): Copy {
  const words = args.split(/\s+/);
  let from: string | undefined;
  let chown: string | undefined;
  while (words[0]?.startsWith('--')) {
    const [flag, value] = words.shift()!.slice(2).split('=', 2);
    if (flag === 'from') from = value;
    else if (flag === 'chown') chown = value;
    else if (flag === 'mount') continue;
    else throw new Error(`COPY --${flag}: not used by this project's Dockerfile`);
  }
  const dest = words.pop();
  if (!dest || words.length === 0) throw new Error(`COPY ${args}: no source or destination`);
  return { from, chown, sources: words, dest };
}

/** $NAME and ${NAME} replaced by the stage's ARG defaults (what a build without --build-arg gets). */
export function substitute(value: string, stage: Stage): string {
  const args: Record<string, string> = {};
  for (const i of stage.instructions) if (i.keyword === 'ARG') Object.assign(args, keyValues(i.args));
  return value.replace(/\$\{?([A-Za-z_]\w*)\}?/g, (_m, name: string) => args[name] ?? '');
}

export function all(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((i) => i.keyword === keyword);
}

/** The last one, which is what counts for USER, ENTRYPOINT, CMD, HEALTHCHECK. */
export function last(stage: Stage, keyword: string): Instruction | undefined {
  return all(stage, keyword).at(-1);
}

/** The image: its final stage's user, entrypoint, command, environment and labels. */
export function imageConfig(stages: readonly Stage[] = parseDockerfile()): {
  readonly final: Stage;
  /** The USER the container starts as. */
  readonly user: { readonly uid: number; readonly gid: number } | undefined;
  /** The user the daemon runs as: INTAKE_RELAY_USER (it drops to it when started as root), else USER. */
  readonly daemonUser: { readonly uid: number; readonly gid: number } | undefined;
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly labels: Readonly<Record<string, string>>;
  readonly volumes: readonly string[];
} {
  const final = stages.at(-1)!;
  const user = /^(\d+)(?::(\d+))?$/.exec(last(final, 'USER')?.args ?? '');
  const env: Record<string, string> = {};
  for (const i of all(final, 'ENV')) Object.assign(env, keyValues(i.args));
  const labels: Record<string, string> = {};
  for (const i of all(final, 'LABEL')) for (const [k, v] of Object.entries(keyValues(i.args))) labels[k] = substitute(v, final);
  const entry = last(final, 'ENTRYPOINT');
  const cmd = last(final, 'CMD');
  const asUser = (m: RegExpExecArray | null): { uid: number; gid: number } | undefined => (m ? { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) } : undefined);
  return {
    final,
    user: asUser(user),
    daemonUser: asUser(/^(\d+)(?::(\d+))?$/.exec(env.INTAKE_RELAY_USER ?? '')) ?? asUser(user),
    entrypoint: entry ? execForm(entry.args) : [],
    cmd: cmd ? execForm(cmd.args) : [],
    env,
    labels,
    volumes: all(final, 'VOLUME').flatMap((i) => execForm(i.args)),
  };
}
