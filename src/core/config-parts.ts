// Pieces of configuration that several component types share: ports, sizes, the fields every
// listening input has, a TLS server's files, header defaults, backoff. Component schemas build on
// them; the loader checks them the same way wherever they appear.

import { z } from 'zod';
import { INTAKE_MAX_EVENT_BYTES, KiB, MiB } from './config-values.ts';

// The values and helpers the running relay needs too live in config-values.ts (no zod there: the
// daemon does not load the schema library).
export { INTAKE_MAX_EVENT_BYTES, KiB, MiB };

export const port = z.int().min(0).max(65535);
export const positive = z.int().min(1);

export const printable = (max: number) => z.string().regex(new RegExp(`^[\\x21-\\x7e]{1,${max}}$`), `must be 1 to ${max} printable ASCII characters without spaces`);

export const headerDefaults = z
  .strictObject({
    hostname: printable(255).optional().describe('HOSTNAME for lines without one. Default: the sender\'s IP address.'),
    app_name: printable(48).optional().describe('APP-NAME for lines without a header or tag. Default: none (-).'),
    procid: printable(128).optional().describe('PROCID for lines without a header. Default: none (-).'),
    facility: z.int().min(0).max(23).default(1).describe('Facility for lines without a PRI (1 = user).'),
    severity: z.int().min(0).max(7).default(5).describe('Severity for lines without a PRI (5 = notice).'),
  })
  .describe('Header fields used for lines that arrive without a syslog header.');

/** Fields of every input that listens on a port. */
export const listener = {
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.:\/-]{0,63}$/, 'must be letters, digits, _ . : / - (at most 64)').optional()
    .describe('Name of this input in metrics and logs. Default: "<type>/<port>".'),
  address: z.string().min(1).default('0.0.0.0').describe('Address to listen on ("0.0.0.0" all IPv4, "::" all IPv6, "127.0.0.1" local only).'),
  port: port.describe('Port to listen on (0 picks a free port, for tests).'),
  max_message_bytes: z.int().min(64).max(INTAKE_MAX_EVENT_BYTES).default(INTAKE_MAX_EVENT_BYTES)
    .describe('Largest event accepted, in bytes (the intake refuses events over 250 KiB).'),
  oversize: z.enum(['drop', 'truncate']).default('drop').describe('What to do with a larger event: drop it (counted as too_large) or truncate it (counted as truncated).'),
  defaults: headerDefaults.prefault({}),
};

export const tlsServer = z.strictObject({
  cert_file: z.string().min(1).describe('PEM certificate (chain) presented to senders.'),
  key_file: z.string().min(1).describe('PEM private key of cert_file.'),
  client_ca_file: z.string().min(1).optional().describe('PEM CA bundle: when set, senders must present a certificate it signed (mutual TLS).'),
});

export const backoff = z
  .strictObject({
    initial_ms: positive.default(500).describe('First retry delay.'),
    max_ms: positive.default(30_000).describe('Longest retry delay.'),
  })
  .describe('Capped exponential backoff with jitter between delivery attempts. Retries go on forever (HTTP: unless max_retries is set).');

/** One value, or a non-empty list of them. */
export const oneOrMany = <T extends z.ZodType>(t: T) => z.union([t, z.array(t).min(1)]);

/** Who sends to an input: the table in /status and /senders, silent senders, per-sender metrics. */
export const senders = z
  .strictObject({
    silent_after_ms: z.int().min(0).default(1_800_000)
      .describe('A sender that has sent nothing for this long is reported silent: a warning naming it (once), intake_relay_senders_silent, /status (0 = never).'),
    known_within_ms: positive.default(86_400_000)
      .describe('Only a sender seen within this long counts as known: one silent for longer is forgotten (and no longer reported silent).'),
    max_tracked: positive.max(1_000_000).default(10_000)
      .describe('Most senders tracked per input; when full, the one seen longest ago makes room.'),
    metrics: z.boolean().default(false)
      .describe('One intake_relay_sender_events_total series per sender (label sender: an address or hostname). Off by default: series grow with senders.'),
    max_series: positive.max(100_000).default(1000)
      .describe('With metrics: most sender series per input; events of senders beyond it are counted in intake_relay_sender_series_overflow_total.'),
  })
  .superRefine((s, ctx) => {
    if (s.silent_after_ms > 0 && s.known_within_ms <= s.silent_after_ms) {
      ctx.addIssue({ code: 'custom', path: ['known_within_ms'], message: `must be more than silent_after_ms (${s.silent_after_ms}): a sender is forgotten after known_within_ms, before it could be reported silent` });
    }
  })
  .describe('Who sends to the inputs: per sender (address; hostname for file and HTTP inputs) events, bytes, first and last seen, in /status and /senders; silent senders reported.');

export type SendersConfig = z.output<typeof senders>;

/** The PROXY protocol on a stream listener (TCP, TLS, RELP, HTTP): who may tell us who connected. */
export const proxyProtocol = {
  proxy_protocol: z.enum(['off', 'v1', 'v2', 'auto']).default('off')
    .describe('Read the PROXY protocol header a load balancer in trusted_proxies puts first on each connection (v1: text, v2: binary, auto: either), so that routes, HOSTNAME defaults, the sender table and metrics see the original sender. See "Behind a load balancer".'),
  trusted_proxies: oneOrMany(z.string().min(1)).optional()
    .describe('Addresses or CIDRs of the load balancers allowed to send the PROXY header (10.0.0.0/8, 2001:db8::/32, 192.0.2.7). Required with proxy_protocol.'),
};

