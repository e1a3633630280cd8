// TLS files are checked when the configuration loads: not PEM, a key that does not match its
// certificate, an encrypted key, an expired certificate are configuration errors at their place
// (exit 78); a certificate that ends soon is a warning.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/load.ts';
import { selfSignedCertificate } from '../../src/emulator/self-signed.ts';
import { TEST_KEY, TLS } from '../helpers/relay.ts';
import { runCliSync } from '../helpers/process.ts';

const dir = mkdtempSync(join(tmpdir(), 'tls-material-'));
const file = (name: string, content: string | Buffer): string => {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
};
const DAY = 86_400_000;

function load(cert: string, key: string, output = ''): { problems: string[]; warnings: string[] } {
  const yaml = `intakes:\n  - name: t\n    intake_key: ${TEST_KEY}\n    inputs:\n      - { type: tcp, port: 6514, tls: { cert_file: ${cert}, key_file: ${key} } }\n${output}`;
  try {
    return { problems: [], warnings: [...parseConfig(yaml, join(dir, 'relay.yaml'), {}).warnings] };
  } catch (err) {
    if (err instanceof ConfigError) return { problems: [...err.problems], warnings: [] };
    throw err;
  }
}

describe('TLS files at load', () => {
  const good = selfSignedCertificate('good');
  const cert = file('good.crt', good.cert);
  const key = file('good.key', good.key);

  it('a matching PEM pair in date loads', () => {
    expect(load(cert, key)).toEqual({ problems: [], warnings: [] });
    expect(load(`${TLS}server.crt`, `${TLS}server.key`)).toEqual({ problems: [], warnings: [] });
  });

  it('a key that is not PEM, or a certificate file holding a key, is named with its place', () => {
    const der = file('key.der', Buffer.from([0x30, 0x82, 0x01, 0x22, 0x02, 0x01]));
    const [problem] = load(cert, der).problems;
    expect(problem?.startsWith(`${join(dir, 'relay.yaml')}:5:`)).toBe(true);
    expect(problem).toMatch(/^[^ ]+:5:\d+: intakes\[0\]\.inputs\[0\]\.tls\.key_file: /);
    expect(problem?.endsWith(`${der} is not a PEM private key (no "-----BEGIN ... PRIVATE KEY-----")`)).toBe(true);
    expect(load(key, key).problems).toEqual([expect.stringMatching(/tls\.cert_file: .*good\.key holds a PRIVATE KEY, not a PEM certificate$/)]);
  });

  it('an EC certificate with an RSA key, or another pair\'s key, does not match', () => {
    const rsa = file('rsa.key', generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
    expect(load(cert, rsa).problems).toEqual([expect.stringMatching(/tls\.key_file: .*rsa\.key does not match the certificate \(a RSA key for a EC certificate/)]);
    const other = file('other.key', selfSignedCertificate('other').key);
    expect(load(cert, other).problems).toEqual([expect.stringMatching(/tls\.key_file: .*other\.key does not match the certificate/)]);
  });

  it('an encrypted key is refused with how to decrypt it', () => {
    const enc = file('enc.key', generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'secret' }) as string);
    expect(load(cert, enc).problems).toEqual([expect.stringMatching(/tls\.key_file: .*enc\.key is encrypted: .*openssl pkey/)]);
  });

  it('an expired certificate is an error; one that ends within 14 days a warning', () => {
    const now = Date.now();
    const old = selfSignedCertificate('old', 30, now - 40 * DAY, now - 10 * DAY);
    expect(load(file('old.crt', old.cert), file('old.key', old.key)).problems).toEqual([expect.stringMatching(/tls\.cert_file: .*old\.crt holds a certificate that expired on \d{4}-\d\d-\d\d \(CN=old\)/)]);
    const soon = selfSignedCertificate('soon', 30, now - DAY, now + 5 * DAY);
    const r = load(file('soon.crt', soon.cert), file('soon.key', soon.key));
    expect(r.problems).toEqual([]);
    expect(r.warnings).toEqual([expect.stringMatching(/^intakes\[0\]\.inputs\[0\]\.tls\.cert_file: the certificate expires on \d{4}-\d\d-\d\d, in [56] days$/)]);
  });

  it('an output\'s CA bundle and client certificate are checked the same way', () => {
    const notPem = file('ca.txt', 'not a certificate\n');
    const r = load(cert, key, `    output: { type: syslog, host: 127.0.0.1, ca_file: ${notPem}, client_cert_file: ${cert}, client_key_file: ${file('o.key', selfSignedCertificate('o').key)} }\n`);
    expect(r.problems).toEqual([
      expect.stringMatching(/intakes\[0\]\.output\.ca_file: .*ca\.txt is not PEM/),
      expect.stringMatching(/intakes\[0\]\.output\.client_key_file: .*o\.key does not match the certificate/),
    ]);
  });

  it('validate exits 78 with the problem and no OpenSSL text', () => {
    const rsa = file('rsa2.key', generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
    const cfg = file('cli.yaml', `intakes:\n  - name: t\n    intake_key: ${TEST_KEY}\n    inputs: [{ type: tcp, port: 6514, tls: { cert_file: ${cert}, key_file: ${rsa} } }]\n`);
    const r = runCliSync(['validate', '-c', cfg]);
    expect(r.code).toBe(78);
    expect(r.stderr + r.stdout).toMatch(/tls\.key_file: .*does not match the certificate/);
    expect(r.stderr + r.stdout).not.toMatch(/error:[0-9A-F]{8}|routines/);
    expect(readFileSync(cfg, 'utf8')).toContain(TEST_KEY);
  });
});
