// `intake-relay check`: for every intake, the path to its intake step by step (name resolution,
// TCP connect, TLS handshake with the certificate and host name verified, and the output's own
// protocol opening where it has one: RELP's open, on each host name it may use), each reported as ok or
// a precise failure; and, with an API key, GET /v1/me on the region's REST API, its 401/403/429
// explained as the platform's spec does. Nothing is sent to the intake, and no key is printed.

import { lookup } from 'node:dns/promises';
import net from 'node:net';
import tls from 'node:tls';
import { request } from 'undici';
import type { Config } from '../config/resolve.ts';
import type { TlsEndpoint } from '../core/component.ts';
import { outputOf } from '../outputs/registry.ts';
import { verifiedTlsOptions } from '../outputs/tls-options.ts';
import { REGIONS } from '../config/regions.ts';
import { classifyConnectError } from '../core/errors.ts';
import { PeerTextRedactor } from '../core/peer-text.ts';

export interface Step {
  readonly what: string;
  readonly ok: boolean;
  readonly detail: string;
}

export interface CheckReport {
  readonly subject: string;
  readonly steps: Step[];
}

/** The socket once `ready` fires, or the error (or a timeout) that came first; never throws. */
function settle<S extends net.Socket>(s: S, ready: 'connect' | 'secureConnect', timeoutMs: number): Promise<S | Error> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      s.destroy();
      resolve(Object.assign(new Error(`${ready === 'connect' ? 'connect' : 'TLS handshake'} timeout`), { code: 'ETIMEDOUT' }));
    }, timeoutMs);
    s.once(ready, () => {
      clearTimeout(timer);
      resolve(s);
    });
    s.once('error', (err) => {
      clearTimeout(timer);
      resolve(err);
    });
  });
}

/** DNS, TCP, TLS to one endpoint; stops at the first failure. */
export async function checkEndpoint(ep: TlsEndpoint, timeoutMs = 10_000): Promise<Step[]> {
  const steps: Step[] = [];
  if (net.isIP(ep.host) === 0) {
    try {
      const all = await lookup(ep.host, { all: true });
      steps.push({ what: 'dns', ok: true, detail: all.map((a) => a.address).join(', ') });
    } catch (err) {
      steps.push({ what: 'dns', ok: false, detail: classifyConnectError(err, ep.host, ep.port).message });
      return steps;
    }
  }
  const started = performance.now();
  // By name: Node tries the addresses it resolves in turn (happy eyeballs).
  const socket = await settle(net.connect({ host: ep.host, port: ep.port, autoSelectFamily: true }), 'connect', timeoutMs);
  if (socket instanceof Error) {
    steps.push({ what: 'tcp', ok: false, detail: classifyConnectError(socket, ep.host, ep.port).message });
    return steps;
  }
  steps.push({ what: 'tcp', ok: true, detail: `connected to ${socket.remoteAddress}:${ep.port} in ${Math.round(performance.now() - started)} ms` });
  if (ep.plain) {
    socket.destroy();
    return steps;
  }
  const name = ep.serverName;
  const result = await settle(
    tls.connect({ socket, ...verifiedTlsOptions({ name, ca: ep.ca, cert: ep.cert, key: ep.key }) }),
    'secureConnect',
    timeoutMs,
  );
  if (result instanceof Error) {
    socket.destroy();
    steps.push({ what: 'tls', ok: false, detail: classifyConnectError(result, ep.host, ep.port).message });
    return steps;
  }
  const cert = result.getPeerCertificate();
  steps.push({
    what: 'tls',
    ok: true,
    detail: `${result.getProtocol() ?? 'TLS'}, certificate for ${String(cert.subject?.CN ?? cert.subjectaltname ?? '?')} issued by ${String(cert.issuer?.CN ?? cert.issuer?.O ?? '?')}, valid until ${cert.valid_to}`,
  });
  result.destroy();
  return steps;
}

/** The user GET /v1/me names, or undefined when the answer is not that JSON. */
function emailOf(text: string): string | undefined {
  try {
    const me: unknown = JSON.parse(text);
    if (typeof me !== 'object' || me === null) return undefined;
    return 'email' in me && typeof me.email === 'string' ? me.email : 'unknown';
  } catch {
    return undefined;
  }
}

/** GET /v1/me with the API key, the spec's errors explained. What the API says is printed redacted. */
export async function checkApiKey(baseUrl: string, apiKey: string): Promise<Step> {
  const peer = new PeerTextRedactor([apiKey]);
  try {
    const res = await request(`${baseUrl.replace(/\/+$/, '')}/v1/me`, { headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(15_000) });
    const text = await res.body.text();
    if (res.statusCode === 200) {
      const email = emailOf(text);
      if (email === undefined) return { what: 'api key', ok: false, detail: `HTTP 200, but not the answer of GET /v1/me (is api_url the REST API?): ${peer.clean(text)}` };
      return { what: 'api key', ok: true, detail: `valid (user ${peer.clean(email)})` };
    }
    const why: Record<number, string> = {
      401: 'HTTP 401: the API key is missing, expired or invalid. Check that it was copied whole and has not expired.',
      403: 'HTTP 403: the key lacks a permission this endpoint needs (GET /v1/me needs none: is it a key for this region?).',
      429: 'HTTP 429: rate limited. Wait a little, and leave more time between requests.',
    };
    const body = peer.clean(text);
    return { what: 'api key', ok: false, detail: why[res.statusCode] ?? `HTTP ${res.statusCode}${body ? `: ${body}` : ''}` };
  } catch (err) {
    return { what: 'api key', ok: false, detail: `cannot reach ${baseUrl}: ${peer.clean(err instanceof Error ? err.message : String(err), 600)}` };
  }
}

export async function check(cfg: Config, apiKey: string | undefined, apiUrl?: string): Promise<CheckReport[]> {
  const reports = await Promise.all(
    cfg.intakes.map(async (i): Promise<CheckReport> => {
      if (i.toEmulator) return { subject: `intake "${i.name}"`, steps: [{ what: 'output', ok: true, detail: 'no key set: forwards to the local emulator' }] };
      const def = outputOf(i.output);
      const ep = def.endpoint(i.output);
      const via = def.checkNote(i.output);
      const hosts = def.checkTargets?.(i.output) ?? [ep.host];
      const steps: Step[] = [];
      for (const host of hosts) {
        // Several names (RELP: the documented one and the official forwarder's): each is tested, labelled.
        const label = hosts.length > 1 ? `${host}: ` : '';
        const at = host === ep.host ? ep : { ...ep, host, serverName: ep.serverName === ep.host ? host : ep.serverName };
        const path = await checkEndpoint(at);
        if (def.handshake && path.every((s) => s.ok)) {
          try {
            path.push({ what: 'handshake', ok: true, detail: await def.handshake(i.output, host, 10_000) });
          } catch (err) {
            path.push({ what: 'handshake', ok: false, detail: err instanceof Error ? err.message : String(err) });
          }
        }
        steps.push(...path.map((s) => ({ ...s, what: `${label}${s.what}` })));
      }
      if (hosts.length > 1) {
        const working = hosts.filter((h) => steps.some((s) => s.what === `${h}: handshake` && s.ok));
        // One name that works is enough: the others are reported, not failed.
        if (working.length > 0) {
          for (let k = 0; k < steps.length; k++) {
            const s = steps[k] as Step;
            if (!s.ok) steps[k] = { ...s, ok: true, detail: `${s.detail} (not needed: ${working.join(', ')} works${working[0] === ep.host ? '' : `; set output.host: ${working[0]}`})` };
          }
        }
      }
      return { subject: `intake "${i.name}" ${i.output.type} ${ep.host}:${ep.port}${via}`, steps };
    }),
  );
  if (apiKey) {
    const base = apiUrl ?? cfg.endpoints.api_url ?? REGIONS[cfg.region].apiBase;
    reports.push({ subject: `REST API ${base}`, steps: [await checkApiKey(base, apiKey)] });
  }
  return reports;
}
