// Finds the files a file input's globs match, walking only the directories a pattern can reach
// (from its last directory without glob characters, as deep as its segments allow; `**` any depth,
// up to MAX_DEPTH). Symlinks to files are followed; symlinks to directories are not (no loops).
// A directory that cannot be read is reported, never fatal: the other matches still count.

import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, join, matchesGlob, sep } from 'node:path';

const GLOB_CHARS = /[*?[{]/;
const MAX_DEPTH = 32;

export interface GlobProblem {
  /** The directory or file that could not be read. */
  readonly path: string;
  /** The system error code (EACCES, ENOTDIR, ELOOP, ...). */
  readonly code: string;
}

export interface GlobResult {
  readonly files: string[];
  readonly problems: GlobProblem[];
}

/** The directory to walk from, and how many directory levels below it a pattern can match. */
export function globBase(pattern: string): { base: string; depth: number } {
  const parts = pattern.split(sep);
  let i = 0;
  while (i < parts.length - 1 && !GLOB_CHARS.test(parts[i] as string)) i++;
  const base = parts.slice(0, i).join(sep) || sep;
  const rest = parts.slice(i);
  const depth = rest.includes('**') ? MAX_DEPTH : rest.length - 1;
  return { base, depth };
}

/** A file is excluded by a pattern with "/" matching its path, or one without matching its base name. */
function excluded(path: string, exclude: readonly string[]): boolean {
  for (const x of exclude) {
    if (x.includes('/') ? matchesGlob(path, x) : matchesGlob(basename(path), x)) return true;
  }
  return false;
}

export async function expandGlobs(patterns: readonly string[], exclude: readonly string[]): Promise<GlobResult> {
  const files = new Set<string>();
  const problems: GlobProblem[] = [];
  for (const pattern of patterns) {
    const { base, depth } = globBase(pattern);
    await walk(base, depth, pattern, exclude, files, problems);
  }
  return { files: [...files], problems };
}

async function walk(dir: string, depth: number, pattern: string, exclude: readonly string[], out: Set<string>, problems: GlobProblem[]): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
    // A directory that does not exist (yet) is not a problem: files may appear later.
    if (code !== 'ENOENT') problems.push({ path: dir, code });
    return;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      if (depth > 0) await walk(path, depth - 1, pattern, exclude, out, problems);
      continue;
    }
    if (!matchesGlob(path, pattern) || excluded(path, exclude)) continue;
    if (e.isFile()) {
      out.add(path);
    } else if (e.isSymbolicLink()) {
      try {
        if ((await stat(path)).isFile()) out.add(path);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
        if (code !== 'ENOENT') problems.push({ path, code });
      }
    }
  }
}
