// /usr/share/doc/intake-relay/copyright (machine-readable format 1.0): intake-relay's licence, then
// the notices of what the binary carries inside it (the Node.js runtime and the npm modules bundled
// into it), as `npm run package` lists them from the bundle beside the binary, as MIT and ISC require.

/** Text in a copyright file field: indented by one space, an empty line as " ." (policy 5.6.13). */
export const indented = (text: string): string =>
  text
    .replace(/\r/g, '')
    .trim()
    .split('\n')
    .map((l) => (l.trim() === '' ? ' .' : ` ${l.trimEnd()}`))
    .join('\n');

export interface CopyrightInput {
  /** Who holds intake-relay's copyright. */
  readonly holder: string;
  /** build/intake-relay-THIRD-PARTY-LICENSES.txt, written by `npm run package`. */
  readonly thirdParty: string;
}

/**
 * The bundled notices with each full text of the Apache License 2.0 replaced by a pointer to
 * Debian's copy, as policy 12.5 asks (lintian: copyright-file-contains-full-apache-2-license);
 * each module's own notice (its appendix, with its copyright line) stays.
 */
export function pointToCommonLicenses(text: string): string {
  return text.replace(
    /^[ \t]*Apache License[ \t]*\n[ \t]*Version 2\.0, January 2004[\s\S]*?END OF TERMS AND CONDITIONS[ \t]*$/gm,
    'The Apache License, Version 2.0: on Debian systems in "/usr/share/common-licenses/Apache-2.0".',
  );
}

export function copyright({ holder, thirdParty }: CopyrightInput): string {
  return `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: intake-relay
Comment: /usr/bin/intake-relay is a Node.js single executable application: the Node.js
 runtime with intake-relay and the npm modules it uses bundled into it. Their notices and
 licences follow in full, under "License: bundled".

Files: *
Copyright: ${holder}
License: Apache-2.0

Files: node_modules/*
Copyright: The Node.js contributors and the authors of each npm module, as each notice below says.
License: bundled

License: Apache-2.0
 On Debian systems, the complete text of the Apache License, Version 2.0 is in
 "/usr/share/common-licenses/Apache-2.0".

License: bundled
${indented(pointToCommonLicenses(thirdParty))}
`;
}
