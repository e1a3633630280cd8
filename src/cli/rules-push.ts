// `intake-relay rules push`: creates an intake's filters on the platform as agent-level
// optimization rules (POST /v1/sic/conf/intakes/optimization_rules/, needs SIC_WRITE_CONF_INTAKES),
// for users who prefer them applied there. Errors are explained as the platform's spec does. The
// API key is sent as a Bearer token and never printed.

import { request } from 'undici';
import type { Config } from '../config/resolve.ts';
import { REGIONS } from '../config/regions.ts';
import { PeerTextRedactor } from '../core/peer-text.ts';
import { parseRetryAfter } from '../outputs/http/sink.ts';

export const RULES_PATH = '/v1/sic/conf/intakes/optimization_rules/';
/** `action` value the spec documents for dropping matching events. */
const ACTION_DROP = 1;

export interface PushOutcome {
  readonly intake: string;
  readonly rule: string;
  readonly ok: boolean;
  readonly detail: string;
}

function explain(status: number, text: string, peer: PeerTextRedactor): string {
  const body = peer.clean(text);
  if (status === 401) return 'HTTP 401: the API key is missing, expired or invalid. Check that it was copied whole and has not expired.';
  if (status === 403) return 'HTTP 403: the API key lacks the permission SIC_WRITE_CONF_INTAKES. Add it to the key, or use a key that has it.';
  if (status === 429) return 'HTTP 429: rate limited by the API, still after waiting. Wait a while and run the command again.';
  return `HTTP ${status}${body ? `: ${body}` : ''}`;
}

export async function pushRules(
  cfg: Config,
  apiKey: string,
  options: { intake?: string; apiUrl?: string; dryRun?: boolean; maxWaits?: number; sleep?: (ms: number) => Promise<void> },
): Promise<PushOutcome[]> {
  const base = (options.apiUrl ?? cfg.endpoints.api_url ?? REGIONS[cfg.region].apiBase).replace(/\/+$/, '');
  const url = `${base}${RULES_PATH}`;
  // The API (or a proxy before it) may echo the Authorization header in an error body.
  const peer = new PeerTextRedactor([apiKey]);
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const out: PushOutcome[] = [];
  const intakes = cfg.intakes.filter((i) => !options.intake || i.name.toLowerCase() === options.intake.toLowerCase());
  if (intakes.length === 0) throw new Error(`No intake is named "${options.intake}".`);
  for (const intake of intakes) {
    const rules = intake.filters.filter((f) => f.enabled);
    if (rules.length === 0) continue;
    if (!intake.platform) {
      out.push({ intake: intake.name, rule: '*', ok: false, detail: 'no platform: { community_uuid, format_uuid } in its configuration; the API needs them.' });
      continue;
    }
    for (const rule of rules) {
      const body = {
        format_uuid: intake.platform.format_uuid,
        community_uuid: intake.platform.community_uuid,
        ...(intake.platform.intake_uuid ? { intake_uuid: intake.platform.intake_uuid } : {}),
        description: rule.description,
        action: ACTION_DROP,
        enabled: true,
        filters: rule.filters.map((f) => ({ field: f.field, operator: f.operator, value: Array.isArray(f.value) ? f.value.map(String) : String(f.value) })),
      };
      if (options.dryRun) {
        out.push({ intake: intake.name, rule: rule.description, ok: true, detail: `would POST ${url} ${JSON.stringify(body)}` });
        continue;
      }
      let outcome: PushOutcome | undefined;
      for (let attempt = 0; !outcome; attempt++) {
        try {
          const res = await request(url, {
            method: 'POST',
            headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(30_000),
          });
          const text = await res.body.text();
          if (res.statusCode === 429 && attempt < (options.maxWaits ?? 3)) {
            await sleep(parseRetryAfter(res.headers['retry-after']) ?? 2000 * (attempt + 1));
            continue;
          }
          const ok = res.statusCode >= 200 && res.statusCode < 300;
          outcome = { intake: intake.name, rule: rule.description, ok, detail: ok ? `created (HTTP ${res.statusCode})` : explain(res.statusCode, text, peer) };
        } catch (err) {
          outcome = { intake: intake.name, rule: rule.description, ok: false, detail: `cannot reach ${base}: ${peer.clean(err instanceof Error ? err.message : String(err), 600)}` };
        }
      }
      out.push(outcome);
    }
  }
  return out;
}
