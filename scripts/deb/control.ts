// DEBIAN/control of the package: the version mapped from npm's to Debian's ordering, the
// dependencies dpkg-shlibdeps computes from the binary, the description from package.json.

export interface ControlInput {
  readonly version: string;
  readonly arch: string;
  readonly maintainer: string;
  readonly depends: string;
  readonly installedSizeKiB: number;
  readonly synopsis: string;
  readonly description: string;
  readonly homepage?: string;
}

/** npm's 1.2.0-rc.1 sorts before 1.2.0; in Debian only `~` does that: 1.2.0~rc.1. */
export function debianVersion(npmVersion: string): string {
  if (!/^\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]*)?$/.test(npmVersion)) throw new Error(`package.json version "${npmVersion}" is not semver.`);
  const plus = npmVersion.indexOf('+');
  const core = plus < 0 ? npmVersion : npmVersion.slice(0, plus);
  const build = plus < 0 ? '' : npmVersion.slice(plus);
  const dash = core.indexOf('-');
  // A hyphen would start a Debian revision: the pre-release's own hyphens become dots.
  const upstream = dash < 0 ? core : `${core.slice(0, dash)}~${core.slice(dash + 1).replaceAll('-', '.')}`;
  return upstream + build.replaceAll('-', '.');
}

/** An extended description: lines start with a space; an empty line is " ." (Debian policy 5.6.13). */
function extended(text: string): string {
  const words = text.split(/\s+/).filter(Boolean);
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line && line.length + w.length + 1 > 78) {
      lines.push(line);
      line = w;
    } else {
      line = line ? `${line} ${w}` : w;
    }
  }
  if (line) lines.push(line);
  return lines.map((l) => ` ${l}`).join('\n');
}

export function control(c: ControlInput): string {
  if (c.synopsis.length > 80) throw new Error(`The synopsis is over 80 characters: ${c.synopsis}`);
  const fields: [string, string | undefined][] = [
    ['Package', 'intake-relay'],
    ['Version', c.version],
    ['Architecture', c.arch],
    ['Maintainer', c.maintainer],
    ['Installed-Size', String(c.installedSizeKiB)],
    ['Depends', c.depends || undefined],
    ['Section', 'admin'],
    ['Priority', 'optional'],
    ['Homepage', c.homepage],
    ['Description', `${c.synopsis}\n${extended(c.description)}`],
  ];
  return `${fields
    .filter((f): f is [string, string] => f[1] !== undefined)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n')}\n`;
}
