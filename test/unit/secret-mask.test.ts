// One mask for every secret this thread knows: each log line as written (whatever logged it), and
// the secrets found wherever a resolved configuration holds them.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/telemetry/log.ts';
import { SecretMask, secretMask, secretsOf } from '../../src/telemetry/secret-mask.ts';

describe('secret mask', () => {
  it('masks every known secret in each log line, wherever it appears; short values are not secrets', () => {
    let out = '';
    const log = createLogger('info', new Writable({ write(c: Buffer, _e, cb) { out += c.toString(); cb(); } }));
    secretMask.add(['LogMaskKey0000000000000000000001', 'abc']);
    log.warn({ message: 'x LogMaskKey0000000000000000000001 y', nested: { text: 'LogMaskKey0000000000000000000001' } }, 'quoted LogMaskKey0000000000000000000001 here, abc');
    expect(out).not.toContain('LogMaskKey0000000000000000000001');
    expect(JSON.parse(out)).toMatchObject({ message: 'x [redacted] y', nested: { text: '[redacted]' }, msg: 'quoted [redacted] here, abc' });
  });

  it('a secret containing another is masked whole; a rotated one stays', () => {
    const m = new SecretMask();
    m.add(['Secret0123', 'Secret0123456789']);
    m.add(['Other999999']);
    expect(m.mask('a Secret0123456789 b Secret0123 c Other999999')).toBe('a [redacted] b [redacted] c [redacted]');
    expect(m.mask('Secret0123456789', '<intake key>')).toBe('<intake key>');
  });

  it('finds the intake keys and bearer tokens of a resolved configuration, not file contents', () => {
    const cfg = {
      intakes: [{ name: 'a', intakeKey: 'KeyA000000000000', output: { ca: Buffer.from('KeyA000000000000') } }],
      listeners: [{ type: 'http', routes: [{ path: '/x', bearer_token: 'TokenTokenToken0' }] }],
    };
    expect(secretsOf(cfg).sort()).toEqual(['KeyA000000000000', 'TokenTokenToken0']);
  });
});
