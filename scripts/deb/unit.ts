// The packaged systemd unit, derived from deploy/intake-relay.service (the unit of the executable
// installed by hand in /usr/local/bin) so that the hardening, restart policy, environment and
// directories cannot drift between the two: only the program's path changes, and the package adds
// its man page as Documentation= (a hand install has none, so the source unit names none). A unit
// whose program lines or [Unit] section no longer have the expected shape fails the build.

/** `/usr/local/bin/intake-relay ` at the start of an Exec line: every argument after it is the CLI's. */
const SOURCE_PROGRAM = /^(ExecStartPre|ExecStart)=\/usr\/local\/bin\/intake-relay /;

const HEADER = `# intake-relay as a hardened systemd service (from the Debian package; generated from
# deploy/intake-relay.service by scripts/deb.ts). Override with: systemctl edit intake-relay
#   /usr/bin/intake-relay                   the program (Node.js built in)
#   /etc/intake-relay/intake-relay.yaml     configuration (ConfigurationDirectory)
#   /etc/intake-relay/intake-relay.env      INTAKE_KEY=... for \${INTAKE_KEY} in the config (mode 0600)
#   /var/lib/intake-relay                   state (StateDirectory)
`;

const SHAPE = 'deploy/intake-relay.service: expected [Unit] with one Description= and no Documentation=, and ExecStartPre/ExecStart lines running /usr/local/bin/intake-relay.';

export function packagedUnit(source: string, binary = '/usr/bin/intake-relay'): string {
  const lines = source.split('\n');
  const start = lines.findIndex((l) => l.startsWith('[Unit]'));
  const body = start < 0 ? [] : lines.slice(start);
  let programs = 0;
  let descriptions = 0;
  const out = body.flatMap((line) => {
    // A Documentation= in the source would name something the package does not install, or the
    // man page twice.
    if (line.startsWith('Documentation=')) throw new Error(SHAPE);
    if (line.startsWith('Description=')) {
      descriptions++;
      return [line, 'Documentation=man:intake-relay(1)'];
    }
    const m = SOURCE_PROGRAM.exec(line);
    if (!m) return [line];
    programs++;
    return [`${m[1]}=${binary} ${line.slice(m[0].length)}`];
  });
  if (programs !== 2 || descriptions !== 1) throw new Error(SHAPE);
  return HEADER + out.join('\n');
}
