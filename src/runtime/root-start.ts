// A start as root with INTAKE_RELAY_USER (the container image): before the configuration is loaded,
// the TLS files of the official forwarder's /certs that the user could not read are copied where
// it can (the configuration then names the copies); once it is loaded, the user is given its state
// directories and the process becomes that user, before the relay opens anything. Started as any
// other user, nothing happens. Also the start-up lines about the forwarder's layout.

import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { translateExtendedConf } from '../config/extended-conf.ts';
import type { ForwarderLayout } from '../config/forwarder-layout.ts';
import type { Config } from '../config/resolve.ts';
import { ownedStateDirs } from '../pipeline/state-dirs.ts';
import { dropTo, isRoot, parseRunAs, privateCopy, takeOwnership, type RunAs } from '../platform/privileges.ts';
import type { Logger } from '../telemetry/log.ts';

export interface RootStart {
  /** Gives the user its state and becomes it (logged); false after logging why it could not. */
  becomeUser(config: Config, log: Logger): boolean;
}

/** Reads INTAKE_RELAY_USER (throws when malformed) and, in the forwarder's layout, copies its TLS files. */
export function rootStart(layout: ForwarderLayout | undefined): RootStart {
  const who = parseRunAs(process.env.INTAKE_RELAY_USER);
  if (!who || !isRoot()) return { becomeUser: () => true };
  const tls = layout ? copyTls(who) : undefined;
  return { becomeUser: (config, log) => becomeUser(config, log, who, tls) };
}

function copyTls(who: RunAs): string | undefined {
  const certs = process.env.CERTS_DIR;
  if (!certs) return undefined;
  const copy = privateCopy(certs, join(tmpdir(), 'intake-relay-certs'), who);
  if (!copy) return undefined;
  process.env.CERTS_DIR = copy.dir;
  return `copied ${copy.copied.join(', ')} from ${certs}, which user ${who.uid} could not read, into ${copy.dir}`;
}

function becomeUser(config: Config, log: Logger, who: RunAs, tls: string | undefined): boolean {
  try {
    const changed = takeOwnership(ownedStateDirs(config), who);
    dropTo(who);
    const gave = changed.length > 0 ? `gave user ${who.uid} its state (${changed.slice(0, 3).join(', ')}${changed.length > 3 ? ', ...' : ''}); ` : '';
    log.info({ user: who.uid, group: who.gid, owned: changed.length, ...(tls ? { tls } : {}) }, `Started as root: ${gave}running as user ${who.uid} from now on.`);
    return true;
  } catch (err) {
    // Root without CAP_CHOWN, CAP_SETUID or CAP_SETGID (cap_drop: [ALL]): it must not go on as root.
    const perm = (err as NodeJS.ErrnoException).code === 'EPERM';
    log.error({ err }, perm
      ? `Started as root without the capabilities to give user ${who.uid} its state and become it (INTAKE_RELAY_USER): start it as that user (docker run --user ${who.uid}:${who.gid}, compose's user:), or keep CAP_CHOWN, CAP_SETUID and CAP_SETGID.`
      : `Could not become user ${who.uid} (INTAKE_RELAY_USER).`);
    return false;
  }
}

/** What the image found of the official forwarder's layout, for validate. */
export function layoutLines(layout: ForwarderLayout): string[] {
  return ['The official forwarder\'s layout (no configuration given):', ...layout.found.map((f) => `  ${f}`)];
}

/** At start: what was found, and a warning for each extended_conf file (never read). */
export function logLayout(layout: ForwarderLayout, log: Logger): void {
  log.info({ found: layout.found }, 'The official forwarder\'s layout: no configuration was given, so its files are used.');
  if (!layout.extendedConf) return;
  for (const f of translateExtendedConf(layout.extendedConf)) {
    const file = join(layout.extendedConf, f.file);
    log.warn(
      { file, equivalent: f.equivalent !== undefined },
      `${file} is rsyslog configuration, which intake-relay does not read: ${f.equivalent ? 'its native equivalent (a shared listener with routes) is printed by `intake-relay validate`' : 'write its native equivalent with shared listeners and routes (docs/guides/routing-and-filters.md)'}.`,
    );
  }
}
