// /usr/share/doc/intake-relay/changelog (Debian policy 4.4 format, installed gzip -9n as 12.7 asks):
// one entry, for the version being packaged. The package is native (its version has no Debian
// revision: control.ts), so the file is changelog.gz, not changelog.Debian.gz (lintian:
// wrong-name-for-changelog-of-native-package). Its date is the build's (the commit's, or
// SOURCE_DATE_EPOCH), not the clock's, so that one commit always gives the same package.

export interface ChangelogInput {
  /** The Debian version (debianVersion()). */
  readonly version: string;
  /** "Name <email>", the package's Maintainer. */
  readonly maintainer: string;
  /** Seconds since the epoch. */
  readonly epoch: number;
  readonly commit: string;
}

/** RFC 5322 date, as policy 4.4 wants it: "Mon, 23 Nov 2026 15:03:20 +0000". */
export function changelogDate(epoch: number): string {
  if (!Number.isInteger(epoch) || epoch < 0) throw new Error(`The build time ${epoch} is not seconds since the epoch.`);
  // toUTCString's form is fixed by ECMAScript ("Www, DD Mmm YYYY HH:mm:ss GMT"); policy wants an offset.
  return new Date(epoch * 1000).toUTCString().replace(/ GMT$/, ' +0000');
}

export function changelog(c: ChangelogInput): string {
  if (!/^[^<>\n]+ <[^<>\s]+@[^<>\s]+>$/.test(c.maintainer)) throw new Error(`The maintainer "${c.maintainer}" is not "Name <email>".`);
  // Distribution "unstable": the package is built outside any archive, and UNRELEASED would tell
  // dpkg and lintian that the entry is a draft.
  return `intake-relay (${c.version}) unstable; urgency=medium

  * intake-relay ${c.version}, built from commit ${c.commit}.

 -- ${c.maintainer}  ${changelogDate(c.epoch)}
`;
}
