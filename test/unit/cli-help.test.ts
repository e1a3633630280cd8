// The command line as the binary answers it: every command's own help (`CMD --help`, `help CMD`)
// names its options and an example and exits 0; a misspelt command or option, or an option the
// command does not take, is one line with the right suggestion and exit 64.
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { commandHelp, COMMANDS, usageProblem } from '../../src/cli/commands.ts';
import { suggest } from '../../src/core/suggest.ts';
import { runCliSync } from '../helpers/process.ts';

describe('suggestions', () => {
  it('finds slips, not other words', () => {
    expect(suggest('vaildate', ['run', 'validate', 'tap'])).toBe('validate');
    expect(suggest('max_event', ['max_events', 'max_bytes'])).toBe('max_events');
    expect(suggest('maxevents', ['max_events', 'max_bytes'])).toBe('max_events');
    expect(suggest('hello', ['run', 'validate', 'tap'])).toBeUndefined();
    expect(suggest('ab', ['tap'])).toBeUndefined();
  });
});

describe('every command', () => {
  for (const c of COMMANDS) {
    const words = c.words.join(' ');
    it(`${words}: --help and help ${words} print its usage, options and an example, and exit 0`, () => {
      const a = runCliSync([...c.words, '--help'], { INTAKE_RELAY_CONFIG: '' });
      const b = runCliSync(['help', ...c.words], { INTAKE_RELAY_CONFIG: '' });
      expect(a.code).toBe(0);
      expect(a.stdout).toBe(b.stdout);
      expect(a.stdout).toBe(`${commandHelp(c)}\n`);
      expect(a.stdout).toContain(`Usage: intake-relay ${words}`);
      for (const o of c.options) expect(a.stdout).toContain(`--${o}`);
      expect(a.stdout).toContain(`Example:\n  ${c.example}`);
      expect(Math.max(...a.stdout.split('\n').map((l) => l.length))).toBeLessThanOrEqual(80);
    });
  }
});

describe('mistakes', () => {
  const cases: [string[], RegExp][] = [
    [['vaildate'], /^Unknown command "vaildate" \(did you mean "validate"\?\): intake-relay --help lists them\.$/],
    [['rules', 'psuh'], /^Unknown command "rules psuh" \(did you mean "rules push"\?\)/],
    [['frobnicate'], /^Unknown command "frobnicate": intake-relay --help lists them\.$/],
    [['tap', '--limt', '5'], /^Unknown option "--limt" \(did you mean "--limit"\?\): intake-relay tap --help lists the options\.$/],
    [['validate', '--prnt'], /^Unknown option "--prnt" \(did you mean "--print"\?\): intake-relay validate --help/],
    [['validate', '--limit', '5'], /^intake-relay validate does not take --limit: intake-relay validate --help lists its options\.$/],
    [['emulate', '-c', 'x.yaml'], /^intake-relay emulate does not take --config/],
    [['help', 'nope'], /^Unknown command "nope"/],
  ];
  for (const [args, want] of cases) {
    it(`${args.join(' ')}: one line, exit 64`, () => {
      const r = runCliSync(args, { INTAKE_RELAY_CONFIG: '' });
      expect(r.code).toBe(64);
      expect(r.stdout).toBe('');
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr.trimEnd()).toMatch(want);
    });
  }

  it('knows every command it dispatches', () => {
    for (const c of COMMANDS) expect(usageProblem(c.words, [])).toBeUndefined();
  });
});

describe('routine failures', () => {
  it('emulate on a port in use, or with a certificate that is not there: one line naming it, exit 1, no stack', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    try {
      const r = runCliSync(['emulate', '--port', String(port)]);
      expect(r.code).toBe(1);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toContain(`cannot listen on 127.0.0.1:${port}: the address is in use`);
    } finally {
      busy.close();
    }
    const m = runCliSync(['emulate', '--port', '0', '--cert-file', '/nonexistent/cert.pem', '--key-file', '/nonexistent/key.pem']);
    expect(m.code).toBe(1);
    expect(m.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(m.stderr).toContain('/nonexistent/cert.pem');
    expect(m.stderr).not.toMatch(/\n\s+at /);
  });
});
