// Benchmark receiver: the intake emulator in its own process, checking framing of every frame and
// the full RFC 5424 form of one frame in 1000. Reports counts over IPC; 'down' and 'up' stop and
// restart it on the same port with the same certificate (an intake outage).
import { IntakeEmulator } from '../src/emulator/intake-emulator.ts';
import { selfSignedCertificate } from '../src/emulator/self-signed.ts';

let refused = 0;
let before = 0;
const { cert, key } = selfSignedCertificate();
const make = (port: number): IntakeEmulator =>
  new IntakeEmulator({ port, cert, key, checkEvery: 1000, onMessage: (m) => { if (m.problems.length > 0) refused++; }, onProtocolError: () => refused++ });
let emulator = make(0);
await emulator.start();
const port = emulator.port;
process.send?.({ port, ca: emulator.caPem });
process.on('message', (m) => {
  if (m === 'count') process.send?.({ frames: before + emulator.frames, refused });
  if (m === 'stop') void emulator.stop().then(() => process.exit(0));
  if (m === 'down') void emulator.stop().then(() => { before += emulator.frames; process.send?.('down'); });
  if (m === 'up') {
    emulator = make(port);
    void emulator.start().then(() => process.send?.('up'));
  }
});
