// Benchmark receiver: the intake emulator in its own process, checking framing of every frame and
// the full RFC 5424 form of one frame in 1000. Reports counts over IPC; 'down' and 'up' stop and
// restart it on the same port with the same certificate (an intake outage). With the argument
// "test-ca" it serves the committed test certificate (signed by test/fixtures/tls/ca.crt), which
// rsyslog's OpenSSL driver accepts (it refuses the emulator's self-signed CA as a server certificate).
import { readFileSync } from 'node:fs';
import { IntakeEmulator } from '../src/emulator/intake-emulator.ts';
import { selfSignedCertificate } from '../src/emulator/self-signed.ts';

const TEST_TLS = new URL('../test/fixtures/tls/', import.meta.url).pathname;

let refused = 0;
let before = 0;
const testCa = process.argv.includes('test-ca');
const { cert, key } = testCa ? { cert: readFileSync(`${TEST_TLS}server.crt`, 'latin1'), key: readFileSync(`${TEST_TLS}server.key`, 'latin1') } : selfSignedCertificate();
const make = (port: number): IntakeEmulator =>
  new IntakeEmulator({ port, cert, key, checkEvery: 1000, onMessage: (m) => { if (m.problems.length > 0) refused++; }, onProtocolError: () => refused++ });
let emulator = make(0);
await emulator.start();
const port = emulator.port;
process.send?.({ port, ca: testCa ? readFileSync(`${TEST_TLS}ca.crt`, 'latin1') : emulator.caPem });
process.on('message', (m) => {
  if (m === 'count') process.send?.({ frames: before + emulator.frames, refused });
  if (m === 'stop') void emulator.stop().then(() => process.exit(0));
  if (m === 'down') void emulator.stop().then(() => { before += emulator.frames; process.send?.('down'); });
  if (m === 'up') {
    emulator = make(port);
    void emulator.start().then(() => process.send?.('up'));
  }
});
