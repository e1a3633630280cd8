// The HTTP input type (the server is receiver.ts): a listener shared by the intakes, serving the
// intake's own API routed by the key the sender presents, and per-intake paths.

import type { InputDefinition } from '../../core/component.ts';
import type { InputTools } from '../../telemetry/tools.ts';
import { httpInputTelemetry } from './instruments.ts';
import { proxyProtocolSettings } from '../../core/config-values.ts';
import { readTlsFiles } from '../tls-files.ts';
import { INTAKE_API_PATHS } from './api-paths.ts';
import type { HttpListenerConfig, ResolvedHttpListener } from './config.ts';
import { HttpReceiver } from './receiver.ts';

export const httpInput = {
  resolve(l, ctx) {
    (l.intakes ?? []).forEach((name, j) => {
      if (ctx.intakeIndex(name) < 0) ctx.problem(['intakes', j], `no intake is named "${name}"`);
    });
    // Parsing JSON takes about twice its text on top of it; gzip holds raw and inflated at once.
    const needed = Math.max(3 * l.max_body_bytes, l.max_body_bytes + l.max_decompressed_bytes, 3 * l.max_decompressed_bytes);
    if (l.max_inflight_bytes < needed) {
      ctx.warn(`max_inflight_bytes (${l.max_inflight_bytes}) cannot hold one JSON body at max_body_bytes and max_decompressed_bytes (about ${needed}): such bodies get 413. Raise it, or lower those limits (line bodies need no parsing).`);
    }
    const paths = new Set<string>();
    l.paths.forEach((r, j) => {
      if (ctx.intakeIndex(r.intake) < 0) ctx.problem(['paths', j, 'intake'], `no intake is named "${r.intake}"`);
      if (INTAKE_API_PATHS.includes(r.path)) ctx.problem(['paths', j, 'path'], `${r.path} is the intake API's own path`);
      if (paths.has(r.path)) ctx.problem(['paths', j, 'path'], `path ${r.path} is used twice`);
      paths.add(r.path);
    });
    return { ...l, label: l.name ?? `${l.tls ? 'https' : 'http'}/${l.port}`, tlsFiles: readTlsFiles(l.tls, ctx), proxy: proxyProtocolSettings(l, ctx.problem) };
  },
  listening: (l) => ({ proto: 'tcp', address: l.address, port: l.port }),
  // It picks the intake by the key a sender presents, not by routes.
  router: () => undefined,
  feeds(l, name) {
    const me = name.toLowerCase();
    return !l.intakes || l.intakes.some((n) => n.toLowerCase() === me) || l.paths.some((p) => p.intake.toLowerCase() === me);
  },
  impstats: () => undefined,
  describe: (l) => [
    `listener ${l.label}: ${l.tls ? 'https' : 'http'} on ${l.address}:${l.port}${l.proxy_protocol === 'off' ? '' : `, PROXY protocol ${l.proxy_protocol} from ${[l.trusted_proxies ?? []].flat().join(' ')}`}`,
    `  intake API (/jsons, /plain, /plain/batch, /batch, /array) for the keys of: ${l.intakes ? l.intakes.join(', ') : 'all intakes'}`,
    ...l.paths.map((r) => `  path ${r.path} -> intake "${r.intake}" (${r.format}${r.bearer_token ? ', bearer token required' : ''})`),
  ],
  // It answers "later" (429) instead: whole requests are admitted or refused.
  senderKey: 'hostname',
  offerMode: 'drop',
  create: (l, ctx) => new HttpReceiver(l, ctx.inlet, httpInputTelemetry(ctx.tools.metrics, ctx.tools.log, ctx.tools.input, ctx.tools.senders)),
} satisfies InputDefinition<HttpListenerConfig, ResolvedHttpListener, InputTools>;
