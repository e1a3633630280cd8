// The configuration file as YAML: a bounded read, strict UTF-8, and every problem the yaml library
// finds reported by its code and position in our own words. Its messages quote the text where it
// stopped, which may be an intake key, so they are never copied. Duplicate keys (found in linear
// time: the library's own check is quadratic), undefined aliases and alias bombs are problems with
// a position too, never an exception.

import { LineCounter, isAlias, isMap, isNode, isScalar, isSeq, parseDocument, visit, type Document, type ErrorCode, type Node } from 'yaml';

import { MAX_CONFIG_BYTES } from './read-bounded.ts';

/** Alias expansions allowed (the yaml library's default): a "billion laughs" document stops here. */
const MAX_ALIAS_COUNT = 100;
/** A broken bracket can make every later line an error: the first ones say where to look. */
const MAX_REPORTED = 20;

const YAML_PROBLEMS: Record<ErrorCode, string> = {
  ALIAS_PROPS: 'an alias (*) cannot have an anchor or a tag',
  BAD_ALIAS: 'a malformed alias (*)',
  BAD_COLLECTION_TYPE: 'a collection does not match its tag',
  BAD_DIRECTIVE: 'an unknown or malformed % directive',
  BAD_DQ_ESCAPE: 'an invalid \\ escape in a double-quoted string',
  BAD_INDENT: 'bad indentation (or an unclosed [ or {)',
  BAD_PROP_ORDER: 'a misplaced anchor (&) or tag (!)',
  BAD_SCALAR_START: 'a value cannot start with this character unquoted: quote the value',
  BLOCK_AS_IMPLICIT_KEY: 'a block collection cannot be a key',
  BLOCK_IN_FLOW: 'a block collection cannot be inside [ ] or { }',
  DUPLICATE_KEY: 'Map keys must be unique: this key is already set in the same mapping',
  IMPOSSIBLE: 'unreadable YAML',
  KEY_OVER_1024_CHARS: 'a key longer than 1024 characters (a missing newline?)',
  MISSING_CHAR: 'a closing quote or bracket is missing',
  MULTILINE_IMPLICIT_KEY: 'a key cannot span lines (a missing ":" or quote?)',
  MULTIPLE_ANCHORS: 'a node with two anchors (&)',
  MULTIPLE_DOCS: 'a second YAML document (---): the configuration is one document',
  MULTIPLE_TAGS: 'a node with two tags (!)',
  NON_STRING_KEY: 'a key must be a plain value',
  RESOURCE_EXHAUSTION: 'the document is nested too deeply',
  TAB_AS_INDENT: 'a tab in indentation: indent with spaces',
  TAG_RESOLVE_FAILED: 'a value does not match its tag (!)',
  UNEXPECTED_TOKEN: 'unexpected text here (a missing ":", quote or indentation?)',
};

export type YamlSource =
  | { readonly ok: true; readonly doc: Document; readonly at: (node: Node | undefined | null) => string }
  | { readonly ok: false; readonly problems: string[] };

export type YamlValue = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problems: string[] };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Parses and checks the document; `at` gives a node's "file:line:col" (or the file). */
export function readYaml(input: string | Uint8Array, file: string): YamlSource {
  if (input.length > MAX_CONFIG_BYTES) return fail(`${file}: the file is larger than ${MAX_CONFIG_BYTES / 1024 / 1024} MiB: not a configuration file`);
  let text: string;
  if (typeof input === 'string') text = input;
  else {
    try {
      text = utf8.decode(input);
    } catch {
      const offset = Math.max(0, firstInvalidUtf8(input));
      const lineStart = input.lastIndexOf(0x0a, offset - 1) + 1;
      const line = 1 + input.subarray(0, lineStart).filter((b) => b === 0x0a).length;
      const col = 1 + Buffer.from(input.subarray(lineStart, offset)).toString('utf8').length;
      return fail(`${file}:${line}:${col}: the file is not UTF-8 (byte 0x${(input[offset] ?? 0).toString(16).padStart(2, '0')}): save it as UTF-8`);
    }
  }
  const lineCounter = new LineCounter();
  // logLevel error: the library's warnings go to process.emitWarning (stderr) and quote the text.
  const doc = parseDocument(text, { lineCounter, uniqueKeys: false, prettyErrors: false, logLevel: 'error' });
  const pos = (offset: number): string => {
    const { line, col } = lineCounter.linePos(offset);
    return `${file}:${line}:${col}`;
  };
  const at = (node: Node | undefined | null): string => (node?.range ? pos(node.range[0]) : file);
  // One kind of error repeated on a line (a stack overflow unwinding) is reported once.
  const seen = new Set<string>();
  const problems: string[] = [];
  for (const e of doc.errors) {
    const k = `${e.code} ${lineCounter.linePos(e.pos[0]).line}`;
    if (!seen.has(k)) problems.push(`${pos(e.pos[0])}: YAML: ${YAML_PROBLEMS[e.code] ?? 'a syntax error'} (${e.code})`);
    seen.add(k);
  }
  if (problems.length > 0) return { ok: false, problems: firstOf(problems, file) };

  const anchors = new Set<string>();
  visit(doc, (_key, node) => {
    if (isAlias(node)) {
      if (!anchors.has(node.source)) problems.push(`${at(node)}: YAML: this alias (*) names no anchor (&) set before it (UNDEFINED_ALIAS)`);
      return;
    }
    if ((isMap(node) || isSeq(node) || isScalar(node)) && node.anchor) anchors.add(node.anchor);
    if (isMap(node)) {
      const keys = new Set<unknown>();
      for (const pair of node.items) {
        if (!isScalar(pair.key)) {
          if (isNode(pair.key)) problems.push(`${at(pair.key)}: YAML: a key must be a plain value, not a list, a mapping or an alias (NON_STRING_KEY)`);
          continue;
        }
        if (keys.has(pair.key.value)) problems.push(`${at(pair.key)}: YAML: ${YAML_PROBLEMS.DUPLICATE_KEY} (DUPLICATE_KEY)`);
        keys.add(pair.key.value);
      }
    }
  });
  if (problems.length > 0) return { ok: false, problems: firstOf(problems, file) };
  if (doc.contents === null) return fail(`${file}:1:1: the file holds no configuration (it is empty or only comments): it needs an "intakes:" list`);
  if (!isMap(doc.contents)) {
    const kind = isSeq(doc.contents) ? 'a list' : isAlias(doc.contents) ? 'an alias' : 'a single value';
    return fail(`${at(doc.contents)}: the top level must be a mapping of keys such as "intakes:", not ${kind}`);
  }
  return { ok: true, doc, at };
}

/** The document as plain data; an alias bomb or a structure too deep to walk is a problem. */
export function yamlValue(doc: Document, file: string, at: (node: Node | undefined | null) => string): YamlValue {
  try {
    return { ok: true, value: doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) };
  } catch (err) {
    if (err instanceof RangeError) return fail(`${file}: YAML: the document is nested too deeply (RESOURCE_EXHAUSTION)`);
    if (!(err instanceof ReferenceError)) throw err;
    let first: Node | undefined;
    visit(doc, { Alias: (_key, node) => { first = node; return visit.BREAK; } });
    return fail(`${at(first)}: YAML: aliases (*) expand to more than ${MAX_ALIAS_COUNT} copies (RESOURCE_EXHAUSTION)`);
  }
}

function fail(problem: string): { ok: false; problems: string[] } {
  return { ok: false, problems: [problem] };
}

function firstOf(problems: string[], file: string): string[] {
  if (problems.length <= MAX_REPORTED) return problems;
  return [...problems.slice(0, MAX_REPORTED), `${file}: YAML: ${problems.length - MAX_REPORTED} more errors after these`];
}

/** The smallest code point of an n-continuation-byte sequence (smaller is an overlong encoding). */
const MIN_CODE_POINT = [0, 0x80, 0x800, 0x10000];

/** Offset of the first byte that does not start a valid UTF-8 sequence (or -1). */
function firstInvalidUtf8(b: Uint8Array): number {
  for (let i = 0; i < b.length; ) {
    const c = b[i] as number;
    if (c < 0x80) {
      i++;
      continue;
    }
    const n = c >= 0xc2 && c <= 0xdf ? 1 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xf0 && c <= 0xf4 ? 3 : 0;
    if (n === 0) return i;
    let cp = c & (0x3f >> n);
    for (let k = 1; k <= n; k++) {
      const d = b[i + k];
      if (d === undefined || (d & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < (MIN_CODE_POINT[n] ?? 0) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return -1;
}
