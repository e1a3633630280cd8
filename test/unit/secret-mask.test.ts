// One mask for every secret this thread knows: each log line as written (whatever logged it), and
// the secrets found wherever a resolved configuration holds them.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, setLogLevel } from '../../src/telemetry/log.ts';
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

describe('errors in the log', () => {
  const line = (err: unknown): Record<string, unknown> => {
    let out = '';
    const log = createLogger('info', new Writable({ write(c: Buffer, _e, cb) { out += c.toString(); cb(); } }));
    log.warn({ err }, 'x');
    return JSON.parse(out) as Record<string, unknown>;
  };

  it('a routine network failure is its code and message, one line, no stack trace', () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, syscall: 'read' });
    expect(line(reset).err).toEqual({ type: 'Error', code: 'ECONNRESET', message: 'read ECONNRESET' });
  });

  it('a coded RelayError says what failed and its cause, no stack trace', async () => {
    const { RelayError } = await import('../../src/core/errors.ts');
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED', syscall: 'connect' });
    const err = new RelayError('ERELAY_CONNECT_REFUSED', 'Connection to 127.0.0.1:1 refused: nothing listens there, or a firewall rejects it.', { cause });
    expect(line(err).err).toEqual({ type: 'RelayError', code: 'ERELAY_CONNECT_REFUSED', message: err.message, cause: 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1' });
  });

  it('the unexpected keeps its stack', () => {
    const bug = new TypeError('x is not a function');
    expect(line(bug).err).toMatchObject({ type: 'TypeError', message: 'x is not a function', stack: expect.stringContaining('TypeError: x is not a function') });
  });
});

describe('log level', () => {
  it('a new level (a reload) reaches the root logger and every logger made from it, children of children too', () => {
    const lines: string[] = [];
    const root = createLogger('info', new Writable({ write(c: Buffer, _e, cb) { lines.push(c.toString()); cb(); } }));
    const child = root.child({ intake: 'a' });
    const grandchild = child.child({ input: 'udp' });
    grandchild.debug('hidden');
    setLogLevel(root, 'debug');
    grandchild.debug('shown');
    child.debug('shown too');
    setLogLevel(root, 'warn');
    root.info('hidden again');
    grandchild.info('hidden again');
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['shown', 'shown too']);
  });
});
