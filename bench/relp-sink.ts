// Benchmark RELP receiver that answers at the speed of TLS: a RELP server over TLS (the committed
// test certificate, as bench/relp-receiver.ts's imrelp) that answers every "syslog" frame 200 and
// writes the answers to one read's frames in one write (one TLS record), with Nagle off. rsyslog's
// imrelp, the real peer, spends ~10 µs per message and writes each answer on its own, Nagle on: at
// 60,000-80,000 messages/s it fills its core, so it measures itself, not the sender. This one lets
// the relay's RELP output reach its own limit. Reports over IPC like receiver.ts; `refused` counts
// messages without the intake key element.
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { RelpDeframer } from '../src/relp/frame.ts';

const TEST_TLS = new URL('../test/fixtures/tls/', import.meta.url).pathname;
const KEY_ELEMENT = Buffer.from('[SEKOIA@53288 intake_key="');
const OFFERS = 'relp_version=0\nrelp_software=bench-relp-sink\ncommands=syslog';

let frames = 0;
let refused = 0;
const server = tls.createServer({ cert: readFileSync(`${TEST_TLS}server.crt`), key: readFileSync(`${TEST_TLS}server.key`) }, (socket) => {
  socket.setNoDelay(true);
  let answers = '';
  let close = false;
  const deframer = new RelpDeframer(256 * 1024, {
    frame(txnr, command, buf, start, end) {
      if (command === 'syslog') {
        frames++;
        const at = buf.indexOf(KEY_ELEMENT, start);
        if (at < 0 || at >= end) refused++;
        answers += `${txnr} rsp 6 200 OK\n`;
      } else if (command === 'open') {
        answers += `${txnr} rsp ${Buffer.byteLength(OFFERS) + 7} 200 OK\n${OFFERS}\n`;
      } else if (command === 'close') {
        answers += `${txnr} rsp 0\n`;
        close = true;
      }
    },
    oversized() {
      refused++;
    },
  });
  socket.on('data', (chunk: Buffer) => {
    deframer.push(chunk);
    if (answers.length > 0) {
      socket.write(answers);
      answers = '';
    }
    if (close) socket.end();
  });
  socket.on('error', () => socket.destroy());
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ port: typeof address === 'object' && address ? address.port : 0, ca: readFileSync(`${TEST_TLS}ca.crt`, 'latin1') });
});
process.on('message', (m) => {
  if (m === 'count') process.send?.({ frames, refused });
  if (m === 'stop') server.close(() => process.exit(0));
});
