// Benchmark receiver: the intake emulator in its own process, checking framing of every frame and
// the full RFC 5424 form of one frame in 1000. Reports counts over IPC.
import { IntakeEmulator } from '../src/emulator/intake-emulator.ts';

let refused = 0;
const emulator = new IntakeEmulator({ port: 0, checkEvery: 1000, onMessage: (m) => { if (m.problems.length > 0) refused++; }, onProtocolError: () => refused++ });
await emulator.start();
process.send?.({ port: emulator.port, ca: emulator.caPem });
process.on('message', (m) => {
  if (m === 'count') process.send?.({ frames: emulator.frames, refused });
  if (m === 'stop') void emulator.stop().then(() => process.exit(0));
});
