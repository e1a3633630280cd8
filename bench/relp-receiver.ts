// Benchmark RELP receiver: rsyslog's imrelp over TLS (OpenSSL) in its own process, writing each
// message it acknowledges to a file; this process counts the file's lines and reports over IPC
// like receiver.ts. `refused` counts messages without the intake key element (a wrong frame).
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';

const dir = mkdtempSync(join(tmpdir(), 'relp-receiver-'));
// The committed test certificates (localhost / 127.0.0.1, signed by the test CA): rsyslog's omrelp
// refuses the emulator's self-signed CA certificate as a server certificate.
const tls = new URL('../test/fixtures/tls/', import.meta.url).pathname;
const ca = readFileSync(join(tls, 'ca.crt'), 'latin1');
const port = await freePort();
const out = join(dir, 'out.log');
writeFileSync(
  join(dir, 'rsyslog.conf'),
  `global(workDirectory="${dir}")
module(load="imrelp" tls.tlslib="openssl")
input(type="imrelp" port="${port}" address="127.0.0.1" tls="on" tls.myCert="${tls}server.crt" tls.myPrivKey="${tls}server.key" maxDataSize="256k")
template(name="raw" type="string" string="%rawmsg%\\n")
action(type="omfile" file="${out}" template="raw")
`,
);
// Its output is passed on, not inherited: an rsyslogd left behind must not hold the bench's stdout open.
const proc = spawn('/usr/sbin/rsyslogd', ['-n', '-f', join(dir, 'rsyslog.conf'), '-i', join(dir, 'pid')], { stdio: ['ignore', 'pipe', 'pipe'] });
proc.stdout.on('data', (d: Buffer) => process.stderr.write(d));
proc.stderr.on('data', (d: Buffer) => process.stderr.write(d));
process.on('exit', () => proc.kill('SIGKILL'));
let frames = 0;
let refused = 0;
let offset = 0;
let partial = '';
const buf = Buffer.alloc(1 << 22);
/** Counts the lines written since the last look; a line without the intake key element is refused. */
function scan(): void {
  let size: number;
  try {
    size = statSync(out).size;
  } catch {
    return;
  }
  if (size <= offset) return;
  const fd = openSync(out, 'r');
  while (offset < size) {
    const n = readSync(fd, buf, 0, Math.min(buf.length, size - offset), offset);
    if (n <= 0) break;
    offset += n;
    const text = partial + buf.toString('latin1', 0, n);
    const parts = text.split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      frames++;
      if (!line.includes('[SEKOIA@53288 intake_key="')) refused++;
    }
  }
}
// Ready once imrelp listens (read from /proc/net/tcp: a test connection would log a failed TLS handshake).
const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')} `;
for (let i = 0; !readFileSync('/proc/net/tcp', 'latin1').split('\n').some((l) => l.includes(hexPort) && / 0A /.test(l)); i++) {
  if (i > 200) throw new Error('rsyslog imrelp did not start');
  await new Promise((r) => setTimeout(r, 50));
}
process.send?.({ port, ca, pid: proc.pid });
process.on('message', (m) => {
  if (m === 'count') {
    scan();
    process.send?.({ frames, refused });
  }
  if (m === 'stop') {
    proc.once('exit', () => process.exit(0));
    proc.kill('SIGTERM');
  }
});
