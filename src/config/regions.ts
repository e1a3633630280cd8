// The platform's regions and their endpoints (../shared/intake-facts.md). An unknown region is a
// configuration error, never a silent fall-back to fra1.

export interface RegionEndpoints {
  /** The intake host (syslog over TLS, RELP: each output type keeps its own port). */
  readonly syslogHost: string;
  readonly httpBase: string;
  readonly apiBase: string;
}

export const REGIONS = {
  fra1: { syslogHost: 'intake.sekoia.io', httpBase: 'https://intake.sekoia.io', apiBase: 'https://api.sekoia.io' },
  fra2: { syslogHost: 'intake.fra2.sekoia.io', httpBase: 'https://intake.fra2.sekoia.io/api/v1/intake-http', apiBase: 'https://app.fra2.sekoia.io/api' },
  mco1: { syslogHost: 'intake.mco1.sekoia.io', httpBase: 'https://intake.mco1.sekoia.io/api/v1/intake-http', apiBase: 'https://app.mco1.sekoia.io/api' },
  uae1: { syslogHost: 'intake.uae1.sekoia.io', httpBase: 'https://intake.uae1.sekoia.io/api/v1/intake-http', apiBase: 'https://app.uae1.sekoia.io/api' },
  usa1: { syslogHost: 'intake.usa1.sekoia.io', httpBase: 'https://intake.usa1.sekoia.io/api/v1/intake-http', apiBase: 'https://app.usa1.sekoia.io/api' },
  // The HTTP intake path suffix for sgp1 is not documented: set endpoints.http_url if it differs.
  sgp1: { syslogHost: 'intake.sgp1.sekoia.io', httpBase: 'https://intake.sgp1.sekoia.io', apiBase: 'https://api.sgp1.sekoia.io' },
} as const satisfies Record<string, RegionEndpoints>;

export type Region = keyof typeof REGIONS;
export const REGION_NAMES = Object.keys(REGIONS) as Region[];

export function isRegion(s: string): s is Region {
  return Object.hasOwn(REGIONS, s);
}
