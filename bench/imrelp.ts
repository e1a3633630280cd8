// The RELP receiver of `npm run bench -- relp`: rsyslog's imrelp over TLS (OpenSSL) with the
// committed test certificates (localhost / 127.0.0.1, signed by the test CA: rsyslog's omrelp
// refuses the emulator's self-signed CA certificate as a server certificate), writing each
// message it acknowledges to `out`. The relay's runs and rsyslog's use the same configuration.
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';

export const TEST_TLS = new URL('../test/fixtures/tls/', import.meta.url).pathname;
export const TEST_CA = join(TEST_TLS, 'ca.crt');

export function imrelpConfig(dir: string, port: number, out: string): string {
  return `global(workDirectory="${dir}")
module(load="imrelp" tls.tlslib="openssl")
input(type="imrelp" port="${port}" address="127.0.0.1" tls="on" tls.myCert="${TEST_TLS}server.crt" tls.myPrivKey="${TEST_TLS}server.key" maxDataSize="256k")
template(name="raw" type="string" string="%rawmsg%\\n")
action(type="omfile" file="${out}" template="raw")
`;
}

/**
 * The lines the receiver has written so far, read incrementally: `lines`, and `keyless`, those
 * without the intake key element (a frame that is not what the relay or rsyslog should send).
 */
export class WrittenLines {
  readonly #file: string;
  readonly #buf = Buffer.alloc(1 << 22);
  #offset = 0;
  #partial = '';
  lines = 0;
  keyless = 0;

  constructor(file: string) {
    this.#file = file;
  }

  /** Reads what was appended since the last call; returns the lines counted so far. */
  count(): number {
    let size: number;
    try {
      size = statSync(this.#file).size;
    } catch {
      return this.lines;
    }
    if (size <= this.#offset) return this.lines;
    const fd = openSync(this.#file, 'r');
    try {
      while (this.#offset < size) {
        const n = readSync(fd, this.#buf, 0, Math.min(this.#buf.length, size - this.#offset), this.#offset);
        if (n <= 0) break;
        this.#offset += n;
        const parts = (this.#partial + this.#buf.toString('latin1', 0, n)).split('\n');
        this.#partial = parts.pop() ?? '';
        for (const line of parts) {
          this.lines++;
          if (!line.includes('[SEKOIA@53288 intake_key="')) this.keyless++;
        }
      }
    } finally {
      closeSync(fd);
    }
    return this.lines;
  }
}
