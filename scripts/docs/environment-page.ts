// docs/reference/environment.md: every environment variable the program reads, from the table in
// scripts/docs/environment.ts (which a test holds to what src/ and the shipped configurations read).
import { ENVIRONMENT } from './environment.ts';
import { code, pageHead, table } from './markdown.ts';

export function environmentPage(): string {
  return `${pageHead('Environment variables', 'the table in [scripts/docs/environment.ts](../../scripts/docs/environment.ts), which a test holds to the variables [src/](../../src) and the shipped configurations read')}
The variables intake-relay reads, besides those a configuration names as \`\${VAR}\` (every one of
them is read the same way: an error if it is unset, unless written \`\${VAR:-default}\`). The
shipped configurations are [config/intake-relay.yaml](../../config/intake-relay.yaml) (a checkout,
the container image) and [deploy/debian/intake-relay.yaml](../../deploy/debian/intake-relay.yaml)
(the Debian package's \`/etc/intake-relay/intake-relay.yaml\`); an \`intakes.yaml\` is the official
forwarder's configuration, which intake-relay reads as it is, with the forwarder's environment: of
those, one that is set but invalid is an error that names it (exit status 78).

${table(['variable', 'read by', 'what it does', 'default'], ENVIRONMENT.map((v) => [v.names.map(code).join(', '), v.readBy, v.does, v.default]))}
`;
}
