// Benchmark RELP receiver: rsyslog's imrelp over TLS (OpenSSL) in its own process, writing each
// message it acknowledges to a file; this process counts the file's lines and reports over IPC
// like receiver.ts. `refused` counts messages without the intake key element (a wrong frame).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';
import { imrelpConfig, TEST_CA, WrittenLines } from './imrelp.ts';

const dir = mkdtempSync(join(tmpdir(), 'relp-receiver-'));
const ca = readFileSync(TEST_CA, 'latin1');
const port = await freePort();
const out = join(dir, 'out.log');
writeFileSync(join(dir, 'rsyslog.conf'), imrelpConfig(dir, port, out));
// Its output is passed on, not inherited: an rsyslogd left behind must not hold the bench's stdout open.
const proc = spawn('/usr/sbin/rsyslogd', ['-n', '-f', join(dir, 'rsyslog.conf'), '-i', join(dir, 'pid')], { stdio: ['ignore', 'pipe', 'pipe'] });
proc.stdout.on('data', (d: Buffer) => process.stderr.write(d));
proc.stderr.on('data', (d: Buffer) => process.stderr.write(d));
process.on('exit', () => proc.kill('SIGKILL'));
const written = new WrittenLines(out);
// Ready once imrelp listens (read from /proc/net/tcp: a test connection would log a failed TLS handshake).
const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')} `;
for (let i = 0; !readFileSync('/proc/net/tcp', 'latin1').split('\n').some((l) => l.includes(hexPort) && / 0A /.test(l)); i++) {
  if (i > 200) throw new Error('rsyslog imrelp did not start');
  await new Promise((r) => setTimeout(r, 50));
}
process.send?.({ port, ca, pid: proc.pid });
process.on('message', (m) => {
  if (m === 'count') {
    written.count();
    process.send?.({ frames: written.lines, refused: written.keyless });
  }
  if (m === 'stop') {
    proc.once('exit', () => process.exit(0));
    proc.kill('SIGTERM');
  }
});
