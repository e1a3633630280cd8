// The RELP output type: RFC 5424 messages as RELP transactions, each acknowledged by the intake
// (port 11514, TLS). Its configuration, how it is resolved (region defaults, TLS files), and how it
// is built, described and checked (the sink is sink.ts, the session opening session.ts).

import type { OutputDefinition } from '../../core/component.ts';
import { PeerTextRedactor } from '../../core/peer-text.ts';
import type { RelpEndpoints, RelpOutputConfig } from './schema.ts';
import { Rfc5424Formatter } from '../../syslog/format.ts';
import { checkTlsFiles } from '../tls-check.ts';
import { openSession } from './session.ts';
import { RelpSink } from './sink.ts';


export interface ResolvedRelpOutput extends RelpOutputConfig {
  readonly host: string;
  readonly port: number;
  /** The host came from the region (not set by hand): `check` also tries the forwarder's relp.<host>. */
  readonly regionHost: boolean;
  readonly caPem: Buffer | undefined;
  readonly clientCertPem: Buffer | undefined;
  readonly clientKeyPem: Buffer | undefined;
}

/** The platform's RELP port. */
const RELP_PORT = 11514;

export const relpOutput = {

  resolve(o, ctx) {
    // `endpoints:` as this type reads it (its schema validated it).
    const e = ctx.endpoints.overrides as RelpEndpoints;
    if ((o.client_cert_file === undefined) !== (o.client_key_file === undefined)) ctx.problem([], 'client_cert_file and client_key_file go together');
    if (!o.tls && (o.ca_file || o.client_cert_file || o.server_name)) ctx.problem(['tls'], 'ca_file, client_cert_file and server_name need tls: true');
    if (!o.tls) ctx.warn('tls: false sends events and the intake key in clear text: only for a RELP server of your own on a trusted network.');
    const caPem = o.ca_file ? ctx.readFile(o.ca_file, ['ca_file']) : undefined;
    const clientCertPem = o.client_cert_file ? ctx.readFile(o.client_cert_file, ['client_cert_file']) : undefined;
    const clientKeyPem = o.client_key_file ? ctx.readFile(o.client_key_file, ['client_key_file']) : undefined;
    checkTlsFiles(ctx, caPem, o.ca_file, clientCertPem && clientKeyPem ? { cert: clientCertPem, key: clientKeyPem, certFile: o.client_cert_file ?? '', keyFile: o.client_key_file ?? '' } : undefined);
    return {
      ...o,
      host: o.host ?? e.relp_host ?? e.syslog_host ?? ctx.endpoints.region.intakeHost,
      port: o.port ?? e.relp_port ?? RELP_PORT,
      // The region's host: `check` also tries the official forwarder's name for it.
      regionHost: o.host === undefined && e.relp_host === undefined && e.syslog_host === undefined,
      caPem,
      clientCertPem,
      clientKeyPem,
    };
  },

  create(o, ctx) {
    return new RelpSink({
      ...endpointOf(o),
      window: o.window,
      ackTimeoutMs: o.ack_timeout_ms,
      formatter: new Rfc5424Formatter(ctx.intakeKey, o.timestamp),
      peerText: new PeerTextRedactor([ctx.intakeKey]),
    });
  },

  describe: (o) =>
    `RELP over ${o.tls ? 'TLS' : 'plain TCP'} to ${o.host}:${o.port}${o.server_name ? ` (certificate name ${o.server_name})` : ''}${o.tls ? `, CA ${o.ca_file ?? 'system store'}` : ''}, window ${o.window}, timestamp ${o.timestamp}`,
  where: (o) => `${o.host}:${o.port}`,
  endpoint: (o) => ({ plain: !o.tls, host: o.host, port: o.port, serverName: o.server_name ?? o.host, ca: o.caPem, cert: o.clientCertPem, key: o.clientKeyPem }),
  effective: ({ regionHost: _r, caPem: _c, clientCertPem: _cc, clientKeyPem: _ck, ...o }) => o,
  checkNote: () => '',
  maxRetries: () => undefined,
  // What the intake has not answered within this time is written again by the next sink.
  confirmation: 'answer every RELP transaction',
  handOverMs: (o) => Math.min(5_000, o.ack_timeout_ms),
  backoff: (o) => ({ initialMs: o.backoff.initial_ms, maxMs: o.backoff.max_ms }),

  /** For `check`: the configured host, and the official forwarder's relp.<host> when the host is the region's. */
  checkTargets: (o) => (o.regionHost && !o.host.startsWith('relp.') ? [o.host, `relp.${o.host}`] : [o.host]),
  /** For `check`: opens a RELP session (after TCP and TLS) and closes it; nothing is sent. */
  async handshake(o, host, timeoutMs) {
    const open = await openSession({ ...endpointOf(o), host, serverName: o.server_name ?? host, connectTimeoutMs: timeoutMs }, AbortSignal.timeout(timeoutMs));
    open.socket.destroy();
    return `RELP session opened${open.software ? ` (server ${open.software})` : ''}, syslog command accepted`;
  },
} satisfies OutputDefinition<RelpOutputConfig, ResolvedRelpOutput>;

function endpointOf(o: ResolvedRelpOutput) {
  return {
    host: o.host,
    port: o.port,
    tls: o.tls,
    serverName: o.server_name,
    ca: o.caPem,
    cert: o.clientCertPem,
    key: o.clientKeyPem,
    connectTimeoutMs: o.connect_timeout_ms,
  };
}
