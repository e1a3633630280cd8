// The packaged systemd unit, derived from deploy/intake-relay.service (the source install's unit) so
// that the hardening, restart policy and directories cannot drift between the two: only what names
// the program changes. A unit whose program lines no longer have the expected shape fails the build.

/** `/usr/bin/node [node options] /opt/intake-relay/dist/main.js` at the start of an Exec line. */
const SOURCE_PROGRAM = /^(ExecStartPre|ExecStart)=\/usr\/bin\/node(?: --[\w-]+(?:=\S+)?)* \/opt\/intake-relay\/dist\/main\.js /;

const HEADER = `# intake-relay as a hardened systemd service (from the Debian package; generated from
# deploy/intake-relay.service by scripts/deb.ts). Override with: systemctl edit intake-relay
#   /usr/bin/intake-relay                   the program (Node.js built in)
#   /etc/intake-relay/intake-relay.yaml     configuration (ConfigurationDirectory)
#   /etc/intake-relay/intake-relay.env      INTAKE_KEY=... for \${INTAKE_KEY} in the config (mode 0600)
#   /var/lib/intake-relay                   state (StateDirectory)
`;

export function packagedUnit(source: string, binary = '/usr/bin/intake-relay'): string {
  const lines = source.split('\n');
  const start = lines.findIndex((l) => l.startsWith('[Unit]'));
  const body = start < 0 ? [] : lines.slice(start);
  let programs = 0;
  const out = body.map((line) => {
    if (line.startsWith('Documentation=')) return 'Documentation=man:intake-relay(1)';
    const m = SOURCE_PROGRAM.exec(line);
    if (!m) return line;
    programs++;
    // The Node options go: the single executable carries its own (execArgv, scripts/package.ts),
    // and every argument after its name is the CLI's.
    return `${m[1]}=${binary} ${line.slice(m[0].length)}`;
  });
  if (programs !== 2) {
    throw new Error('deploy/intake-relay.service: expected [Unit] and ExecStartPre/ExecStart lines running /usr/bin/node /opt/intake-relay/dist/main.js.');
  }
  return HEADER + out.join('\n');
}
