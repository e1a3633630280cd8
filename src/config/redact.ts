// Scrubs secrets from what the configuration loader reports (problems and warnings). Known secrets
// (intake keys, bearer tokens, what ${VAR} put into them, key files' contents, secret-named
// environment variables) go with their base64 forms; and since a key written under the wrong field
// is not known to be one, any credential-shaped token goes too.

export const REDACTED = '[redacted]';

/** Fields whose value is a secret: intake_key, bearer_token, api_key, ... (never *_file paths). */
const SECRET_FIELD = /(^|_)(key|token|secret|password|credentials?)$/i;
const SECRET_ENV = /KEY|TOKEN|SECRET|PASSW|CREDENTIAL/i;
/** Intake keys are 32 letters and digits, tokens may have - and _; shorter runs are words and names. */
const CREDENTIAL_SHAPE = /[A-Za-z0-9_-]{20,}/g;
/** Shorter values would scrub ordinary words out of messages; no real secret is this short. */
const MIN_SECRET_LENGTH = 6;

export function isSecretField(name: unknown): boolean {
  return typeof name === 'string' && SECRET_FIELD.test(name);
}

export class SecretScrubber {
  readonly #secrets = new Set<string>();
  #sorted: string[] | undefined;

  /** Starts with the values of the environment's secret-named variables (INTAKE_KEY, ..._API_KEY). */
  constructor(env: NodeJS.ProcessEnv = {}) {
    for (const [name, value] of Object.entries(env)) if (SECRET_ENV.test(name)) this.add(value);
  }

  add(value: string | undefined): void {
    const v = value?.trim();
    if (!v || v.length < MIN_SECRET_LENGTH) return;
    const b64 = Buffer.from(v).toString('base64').replace(/=+$/, '');
    for (const form of [v, b64, b64.replace(/\+/g, '-').replace(/\//g, '_')]) this.#secrets.add(form);
    this.#sorted = undefined;
  }

  scrub(text: string): string {
    // Longest first, so that a secret containing another goes whole.
    this.#sorted ??= [...this.#secrets].sort((a, b) => b.length - a.length);
    let out = text;
    for (const s of this.#sorted) if (out.includes(s)) out = out.replaceAll(s, REDACTED);
    // Letters of one case are words; digits or mixed case look like a key.
    return out.replace(CREDENTIAL_SHAPE, (m) => (/[0-9]/.test(m) || (/[a-z]/.test(m) && /[A-Z]/.test(m)) ? REDACTED : m));
  }
}
