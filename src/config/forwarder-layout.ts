// The official forwarder's container layout, found by the image by itself, so that its compose
// file runs intake-relay with only the image line changed: `/intakes.yaml` mounted is the
// configuration (read as the forwarder reads it, legacy.ts), `/var/spool/rsyslog` mounted holds
// the disk queues (STATE_DIRECTORY), `/certs` the TLS inputs' files (CERTS_DIR, the forwarder's
// names), and `/extended_conf` raw rsyslog files, which are named, never read as configuration
// (extended-conf.ts). It applies only where the image asks for it (INTAKE_RELAY_FORWARDER_LAYOUT=auto)
// and no configuration was given (-c, INTAKE_RELAY_CONFIG).

import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const FORWARDER_PATHS = {
  config: '/intakes.yaml',
  spool: '/var/spool/rsyslog',
  certs: '/certs',
  extendedConf: '/extended_conf',
} as const;

export interface ForwarderLayout {
  /** The configuration file: the forwarder's intakes.yaml. */
  readonly config: string;
  /** Environment the configuration is read with (STATE_DIRECTORY for the spool), set only where unset. */
  readonly env: Readonly<Record<string, string>>;
  /** The forwarder's extended_conf directory, when it is there. */
  readonly extendedConf?: string;
  /** What was found, one line each, for the start-up log and validate. */
  readonly found: readonly string[];
}

const isDir = (p: string): boolean => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
};

/**
 * The layout, where it applies: `env` is the process's environment, `configGiven` whether -c was
 * on the command line, `root` a prefix for the paths (tests).
 */
export function forwarderLayout(env: NodeJS.ProcessEnv, configGiven: boolean, root = ''): ForwarderLayout | undefined {
  if (env.INTAKE_RELAY_FORWARDER_LAYOUT !== 'auto' || configGiven || (env.INTAKE_RELAY_CONFIG ?? '') !== '') return undefined;
  const config = join(root, FORWARDER_PATHS.config);
  if (!existsSync(config)) return undefined;
  const found = [`${FORWARDER_PATHS.config}: the official forwarder's configuration`];
  const out: Record<string, string> = {};
  const spool = join(root, FORWARDER_PATHS.spool);
  if (isDir(spool) && (env.STATE_DIRECTORY ?? '') === '') {
    out.STATE_DIRECTORY = spool;
    found.push(`${FORWARDER_PATHS.spool}: the disk queues (in its queues/ directory)`);
  }
  const certs = join(root, FORWARDER_PATHS.certs);
  if (isDir(certs)) {
    if ((env.CERTS_DIR ?? '') === '') out.CERTS_DIR = certs;
    found.push(`${FORWARDER_PATHS.certs}: the TLS inputs' certificates and keys`);
  }
  const extended = join(root, FORWARDER_PATHS.extendedConf);
  return { config, env: out, found, ...(isDir(extended) ? { extendedConf: extended } : {}) };
}
