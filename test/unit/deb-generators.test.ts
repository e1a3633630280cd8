// The Debian package's generators (scripts/deb/): what they read from --help, the unit, the version
// and the changelog, and that they refuse input whose shape changed instead of writing a wrong package.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { changelog, changelogDate } from '../../scripts/deb/changelog.ts';
import { pointToCommonLicenses } from '../../scripts/deb/copyright.ts';
import { debianVersion } from '../../scripts/deb/control.ts';
import { parseHelp } from '../../scripts/deb/help-model.ts';
import { environmentRoff, manPage, referenceRoff, roffText } from '../../scripts/deb/man-page.ts';
import { ENVIRONMENT } from '../../scripts/docs/environment.ts';
import { configJsonSchema } from '../../src/config/json-schema.ts';
import { configReference } from '../../src/config/reference.ts';
import { packagedUnit } from '../../scripts/deb/unit.ts';
import { runCliSync } from '../helpers/process.ts';

/** The commands src/main.ts dispatches (`case 'run':`), whatever --help says about them. */
const DISPATCHED = [...readFileSync(new URL('../../src/main.ts', import.meta.url), 'utf8').matchAll(/^\s*case '([a-z][\w-]*)':/gm)].map((m) => m[1]!);

describe('the --help model', () => {
  const help = parseHelp(runCliSync(['--help'], { INTAKE_RELAY_CONFIG: '' }).stdout);

  it('reads every command, its options and operands, the options, examples and exit status', () => {
    expect(DISPATCHED).toContain('run');
    expect(new Set(help.commands.map((c) => c.words[0]))).toEqual(new Set(DISPATCHED));
    expect(help.commands.find((c) => c.words[0] === 'rules')?.words).toEqual(['rules', 'push']);
    const send = help.commands.find((c) => c.words[0] === 'send')!;
    expect(send.options).toEqual([{ flag: '-c', arg: 'FILE' }, { flag: '--intake', arg: 'NAME' }]);
    expect(send.operands).toBe(true);
    expect(help.commands.filter((c) => c.operands).map((c) => c.words[0])).toEqual(['send', 'help']);
    expect(help.options.map((o) => [o.short, o.long, o.arg])).toEqual([['-c', '--config', 'FILE']]);
    expect(help.other).toEqual(['--version | --help']);
    expect(help.examples.length).toBeGreaterThan(0);
    expect(help.exitStatus).toContainEqual(['78', 'configuration error']);
  });

  it('reads an option whose argument is a list of choices', () => {
    const text = 'intake-relay: x.\n\nUsage:\n  intake-relay tap [--format json|text] [--limit N]\n\nExamples:\n  a\n\nExit status: 0 ok.';
    expect(parseHelp(text).commands[0]).toMatchObject({
      options: [{ flag: '--format', arg: 'json|text', choices: ['json', 'text'] }, { flag: '--limit', arg: 'N' }],
      operands: false,
    });
  });

  it('refuses a text of another shape', () => {
    expect(() => parseHelp('intake-relay: x.\n\nExamples:\n  a\n\nExit status: 0 ok.')).toThrow(/no "Usage:" section/);
    expect(() => parseHelp('intake-relay: x.\n\nUsage:\n  intake-relay run\n  ??\n')).toThrow(/cannot place the line " {2}\?\?"/);
  });
});

describe('the packaged unit', () => {
  const source = readFileSync(new URL('../../deploy/intake-relay.service', import.meta.url), 'utf8');

  it('differs from deploy/intake-relay.service only where it names the program and its documentation', () => {
    const unit = packagedUnit(source);
    const body = (text: string): string[] => text.split('\n').filter((l) => !l.startsWith('#'));
    const changed = body(unit).filter((l) => !body(source).includes(l));
    expect(changed).toEqual([
      'Documentation=man:intake-relay(1)',
      'ExecStartPre=/usr/bin/intake-relay validate -c /etc/intake-relay/intake-relay.yaml',
      'ExecStart=/usr/bin/intake-relay run -c /etc/intake-relay/intake-relay.yaml',
    ]);
    expect(body(source).filter((l) => !body(unit).includes(l)).every((l) => /^(Documentation|ExecStartPre|ExecStart)=/.test(l))).toBe(true);
  });

  it('keeps the environment of the source unit: a missing key is refused, not sent to the emulator', () => {
    expect(packagedUnit(source).split('\n')).toContain('Environment=INTAKE_RELAY_EMULATOR=never');
  });

  it('refuses a source unit whose program lines or documentation changed shape', () => {
    // The unit before the single executable: Node.js and the built sources.
    expect(() => packagedUnit(source.replaceAll('/usr/local/bin/intake-relay', '/usr/bin/node /opt/intake-relay/dist/main.js'))).toThrow(/ExecStartPre\/ExecStart/);
    expect(() => packagedUnit(source.replace(/^ExecStartPre=.*\n/m, ''))).toThrow(/ExecStartPre\/ExecStart/);
    expect(() => packagedUnit(source.replace(/^Description=.*$/m, '$&\nDocumentation=https://example.org/intake-relay'))).toThrow(/no Documentation=/);
    expect(() => packagedUnit(source.replace(/^Description=.*\n/m, ''))).toThrow(/one Description=/);
  });
});

describe('Debian versions', () => {
  it('sort npm pre-releases before their release, and keep hyphens out of the upstream version', () => {
    expect(debianVersion('0.1.0')).toBe('0.1.0');
    expect(debianVersion('1.2.0-rc.1')).toBe('1.2.0~rc.1');
    expect(debianVersion('1.2.0-rc-1+build-5')).toBe('1.2.0~rc.1+build.5');
    expect(() => debianVersion('1.2')).toThrow(/not semver/);
  });
});

describe('the changelog', () => {
  it('has one entry for the version, dated by the build time given (never the clock) in the form policy 4.4 wants', () => {
    expect(changelogDate(0)).toBe('Thu, 01 Jan 1970 00:00:00 +0000');
    expect(changelogDate(1795446200)).toBe('Mon, 23 Nov 2026 15:03:20 +0000');
    const text = changelog({ version: '1.2.0~rc.1', maintainer: 'A Maintainer <a@example.org>', epoch: 1795446200, commit: '0123456789ab' });
    expect(text).toBe('intake-relay (1.2.0~rc.1) unstable; urgency=medium\n\n  * intake-relay 1.2.0~rc.1, built from commit 0123456789ab.\n\n -- A Maintainer <a@example.org>  Mon, 23 Nov 2026 15:03:20 +0000\n');
  });

  it('refuses a maintainer without an address, and a time that is not whole seconds', () => {
    expect(() => changelog({ version: '1.0.0', maintainer: 'A Maintainer', epoch: 0, commit: 'x' })).toThrow(/not "Name <email>"/);
    expect(() => changelogDate(1.5)).toThrow(/not seconds/);
  });
});

describe('the copyright file', () => {
  it('points to Debian\'s copy of the Apache License 2.0 instead of each full text, keeping each notice', () => {
    const full = readFileSync('/usr/share/common-licenses/Apache-2.0', 'utf8');
    const terms = full.slice(full.indexOf('Apache License'), full.indexOf('END OF TERMS AND CONDITIONS') + 'END OF TERMS AND CONDITIONS'.length);
    const bundled = `a 1.0 (Apache-2.0)\n\n${terms}\n\n   Copyright 2020 A Corp\n\n----\n\nb 2.0 (MIT)\n\nPermission is hereby granted\n\n   ${terms.replace(/\n/g, '\n   ')}\n`;
    const out = pointToCommonLicenses(bundled);
    expect(out.match(/\/usr\/share\/common-licenses\/Apache-2\.0/g)).toHaveLength(2);
    expect(out).not.toContain('TERMS AND CONDITIONS FOR USE');
    expect(out).toContain('Copyright 2020 A Corp');
    expect(out).toContain('Permission is hereby granted');
  });
});

describe('roff', () => {
  it('escapes backslashes, a leading dot or quote, and non-ASCII', () => {
    expect(roffText('^\\d{4}')).toBe('^\\ed{4}');
    expect(roffText('.ce\n\'x')).toBe('\\&.ce\n\\&\'x');
    expect(roffText('integer ≥ 1')).toBe('integer \\[u2265] 1');
  });

  it('renders the reference table, and refuses a line it does not know', () => {
    expect(referenceRoff('| key | type | default | meaning |\n|---|---|---|---|\n| `a.b` | `x` \\| `y` | `x` | The a-b. |')).toBe(
      '.SS Keys\n.TP\n\\fBa.b\\fR (\\fBx\\fR | \\fBy\\fR; default \\fBx\\fR)\nThe a-b.',
    );
    expect(() => referenceRoff('# heading')).toThrow(/does not read/);
  });

  it('renders an environment variable: its names, what it does, who reads it, its default', () => {
    const v = { names: ['no_proxy', 'NO_PROXY'], readBy: 'HTTP outputs', does: 'Hosts reached directly: `*` for all.', default: '' };
    expect(environmentRoff([v, { ...v, names: ['X'], default: '`/tmp`' }])).toBe(
      '.TP\n\\fBno_proxy\\fR, \\fBNO_PROXY\\fR\nHosts reached directly: \\fB*\\fR for all. Read by HTTP outputs.\n' +
        '.TP\n\\fBX\\fR\nHosts reached directly: \\fB*\\fR for all. Read by HTTP outputs. Default: \\fB/tmp\\fR\\&.',
    );
  });
});

describe('the man page', () => {
  it('lists every environment variable of docs/reference/environment.md, from the same table', () => {
    const help = parseHelp(runCliSync(['--help'], { INTAKE_RELAY_CONFIG: '' }).stdout);
    const reference = configReference(JSON.parse(configJsonSchema()));
    const page = manPage({ help, reference, environment: ENVIRONMENT, version: '0.1.0', date: '2026-01-01', description: 'd' });
    const section = page.slice(page.indexOf('\n.SH ENVIRONMENT\n'), page.indexOf('\n.SH FILES\n'));
    const names = ENVIRONMENT.flatMap((v) => v.names);
    expect(names.length).toBeGreaterThan(20);
    expect(names.filter((n) => !section.includes(`\\fB${n}\\fR`))).toEqual([]);
  });
});
