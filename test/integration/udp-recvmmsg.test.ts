// The UDP input's native batched receive (native/udp-recvmmsg.c: recvmmsg by the addon's reader
// thread into a bounded backlog, or polled on the thread's loop; one JavaScript call per batch) and
// its fallback, Node's dgram: the same events either way (each datagram once, from its own sender,
// oversized ones counted, invalid UTF-8 repaired); a burst while the main thread is blocked is
// read by the reader thread, not dropped by the kernel, and what passes the backlog's bound is
// counted; a stop reads what the reader and the kernel hold, so every datagram sent is received or
// counted as a drop; a port in use is a clear error. The tests peers' script installs gcc, so the
// addon is built at `npm ci`.
import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { nativeUdp } from '../../src/inputs/udp/native.ts';
import { books, startRelay } from '../helpers/relay.ts';
import { holdUdpPort, recvmmsgFailingShim, sendUdp, startTestIntake, udpBurstWhileBlocked } from '../helpers/peers.ts';
import { expectBurstWhileBlockedArrivesWhole } from '../helpers/udp-burst.ts';
import { relayYaml } from '../helpers/config.ts';
import { track } from '../helpers/cleanup.ts';

const input = (port = 0, extra = ''): string => `      - { type: udp, address: 127.0.0.1, port: ${port}, max_message_bytes: 2048${extra} }`;

afterEach(() => {
  delete process.env.INTAKE_RELAY_UDP_RECVMMSG;
  vi.restoreAllMocks();
});

describe('native UDP receive (recvmmsg)', () => {
  it('is built and loads on this machine', () => {
    // Built by native/compile.mjs (npm ci, npm run build) with the compiler the test peers' script installs.
    expect(nativeUdp().reason).toBe('recvmmsg');
  });

  // Polled (a receive thread's loop) and with the addon's reader thread (a backlog bound given).
  for (const backlog of [0, 1 << 20]) {
    const mode = backlog ? 'reader thread' : 'polled';
    it(`the addon (${mode}): IPv6 senders, close() from inside a batch callback, errors with their code`, async () => {
      const udp = nativeUdp().udp;
      if (!udp) throw new Error('native UDP receive not built');
      const h = udp.open('::1', 0, true, false, 0);
      const [port] = udp.info(h);
      const got: string[] = [];
      let batches = 0;
      const closed = new Promise<void>((resolve) => {
        udp.start(h, (buf, ends, from, addrs) => {
          batches++;
          let start = 0;
          for (let i = 0; i < ends.length; i++) {
            got.push(`${addrs[from[i] as number]} ${buf.toString('utf8', start, ends[i])}`);
            start = ends[i] as number;
          }
          // Closing from inside the callback: no further call, nothing freed under it.
          udp.close(h);
          resolve();
        }, () => {}, backlog);
      });
      const s = dgram.createSocket('udp6');
      await new Promise<void>((r) => s.bind(0, '::1', () => r()));
      await new Promise<void>((r) => s.send('héllo', port, '::1', () => r()));
      await closed;
      await new Promise<void>((r) => s.send('after close', port, '::1', () => r()));
      await new Promise((r) => setTimeout(r, 100));
      s.close();
      expect(batches).toBe(1);
      expect(got).toEqual(['::1 héllo']);
      // A bound port: the errno's name as code, as Node's own errors have it.
      const holder = udp.open('127.0.0.1', 0, false, false, 0);
      try {
        expect(() => udp.open('127.0.0.1', udp.info(holder)[0], false, false, 0)).toThrow(expect.objectContaining({ code: 'EADDRINUSE', syscall: 'bind' }));
        expect(() => udp.open('not an address', 0, false, false, 0)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
      } finally {
        udp.close(holder);
      }
    });

    it(`the addon (${mode}): a worker thread that ends with a receiver open, or throws in its callback, does not bring the process down`, () => {
      // The main thread never loads the addon here: each worker's copy goes with the worker, so the
      // receiver must be closed before Node unloads it (an async cleanup hook), or the process crashes.
      const addon = new URL('../../native/build/relay.node', import.meta.url).pathname;
      const child = spawnSync(process.execPath, ['-e', `
        const { Worker } = require('node:worker_threads');
        const body = \`
          const { parentPort, workerData } = require('node:worker_threads');
          const m = { exports: {} }; process.dlopen(m, workerData.addon);
          const h = m.exports.open('127.0.0.1', 0, false, false, 0);
          m.exports.start(h, () => { if (workerData.throwIn) throw new Error('thrown in onBatch'); }, () => {}, ${backlog});
          const port = m.exports.info(h)[0];
          if (workerData.throwIn) require('node:dgram').createSocket('udp4').send('x', port, '127.0.0.1');
          parentPort.postMessage('ready');\`;
        (async () => {
          for (const throwIn of [false, true, false]) {
            const w = new Worker(body, { eval: true, workerData: { addon: ${JSON.stringify(addon)}, throwIn } });
            w.on('error', () => {});
            await new Promise((r) => w.once(throwIn ? 'exit' : 'message', r));
            await w.terminate();
          }
          await new Promise((r) => setTimeout(r, 200));
          console.log('survived');
        })();`], { encoding: 'utf8' });
      expect(child.stderr).toBe('');
      expect({ status: child.status, signal: child.signal, out: child.stdout }).toEqual({ status: 0, signal: null, out: 'survived\n' });
    });

    it(`the addon (${mode}): a read that keeps failing is retried every 100 ms, not in a loop that takes the whole core`, () => {
      // recvmmsg made to fail with ENOBUFS (a preloaded shim, built here with the same compiler):
      // the datagram stays readable, so without a pause the poll would call again at once, forever.
      const shim = recvmmsgFailingShim();
      const addon = new URL('../../native/build/relay.node', import.meta.url).pathname;
      const child = spawnSync(process.execPath, ['-e', `
        const m = { exports: {} }; process.dlopen(m, ${JSON.stringify(addon)});
        const h = m.exports.open('127.0.0.1', 0, false, false, 0);
        let errors = 0, code = 0;
        m.exports.start(h, () => {}, (errno) => { errors++; code = errno; }, ${backlog});
        const s = require('node:dgram').createSocket('udp4');
        s.send('x', m.exports.info(h)[0], '127.0.0.1', () => s.close());
        setTimeout(() => { m.exports.close(h); console.log(JSON.stringify({ errors, code })); process.exit(0); }, 1000);`], { encoding: 'utf8', env: { ...process.env, LD_PRELOAD: shim } });
      expect(child.stderr).toBe('');
      const r = JSON.parse(child.stdout) as { errors: number; code: number };
      expect(r.code).toBe(105); // ENOBUFS
      expect(r.errors).toBeGreaterThanOrEqual(3);
      expect(r.errors).toBeLessThanOrEqual(20);
    });

  }

  it('the addon (reader thread): while the loop is blocked the reader drains the socket; past the backlog\'s bound datagrams are dropped and counted', () => {
    // The loop is blocked (spawnSync) while another process sends 1,000 datagrams of 1,000 bytes:
    // the backlog is bounded at 512 KiB, two chunks of 256 KiB, 252 such datagrams each.
    // Received + dropped at the bound + dropped by the kernel = sent, and the bound held.
    const addon = new URL('../../native/build/relay.node', import.meta.url).pathname;
    const child = spawnSync(process.execPath, ['-e', `
      const { spawnSync } = require('node:child_process');
      const m = { exports: {} }; process.dlopen(m, ${JSON.stringify(addon)});
      const h = m.exports.open('127.0.0.1', 0, false, false, 4194304);
      const port = m.exports.info(h)[0];
      let received = 0, dropped = 0, bytes = 0, calls = 0;
      m.exports.start(h, (buf, ends, from, addrs, d) => { calls++; received += ends.length; bytes += buf.length; dropped += d; }, () => {}, 524288);
      spawnSync(process.execPath, ['-e', "const s = require('node:dgram').createSocket('udp4'); const p = Buffer.alloc(1000, 97); let i = 0; const next = () => { if (i++ === 1000) return s.close(); s.send(p, " + port + ", '127.0.0.1', next); }; next();"]);
      // Still blocked a while, so that the reader has read (and held, or dropped) every datagram however slow this machine is.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
      setTimeout(() => {
        const drops = require('node:fs').readFileSync('/proc/net/udp', 'latin1').split('\\n').find((l) => l.includes(':' + port.toString(16).toUpperCase().padStart(4, '0') + ' ')).trim().split(/\\s+/).pop();
        m.exports.close(h);
        console.log(JSON.stringify({ received, dropped, bytes, calls, kernel: Number(drops) }));
      }, 300);`], { encoding: 'utf8' });
    expect(child.stderr).toBe('');
    const r = JSON.parse(child.stdout) as { received: number; dropped: number; bytes: number; calls: number; kernel: number };
    expect(r.kernel).toBe(0);
    expect(r.received + r.dropped).toBe(1000);
    expect(r.bytes).toBe(r.received * 1000);
    // Records of 1,000 bytes and a 40-byte header: at most 2 x 252 held while the loop was blocked.
    expect(r.received).toBeGreaterThan(0);
    expect(r.received).toBeLessThanOrEqual(504);
    expect(r.dropped).toBeGreaterThanOrEqual(1000 - 504);
  });

  it('the addon (reader thread): a drain whose callback throws stops there and throws; the next drain hands over the rest, in order', () => {
    // The loop is blocked while another process sends 1,000 numbered datagrams: the reader holds
    // them. The first batch handed over (256) throws: drain() throws it, and what the reader held
    // after that batch is kept, first, for the next drain.
    const addon = new URL('../../native/build/relay.node', import.meta.url).pathname;
    const child = spawnSync(process.execPath, ['-e', `
      const { spawnSync } = require('node:child_process');
      const m = { exports: {} }; process.dlopen(m, ${JSON.stringify(addon)});
      const h = m.exports.open('127.0.0.1', 0, false, false, 4194304);
      const port = m.exports.info(h)[0];
      const got = []; let throwNext = false;
      m.exports.start(h, (buf, ends) => {
        if (throwNext) { throwNext = false; throw new Error('thrown in onBatch'); }
        let s = 0; for (const e of ends) { got.push(buf.toString('latin1', s, e)); s = e; }
      }, () => {}, 1 << 22);
      spawnSync(process.execPath, ['-e', "const s = require('node:dgram').createSocket('udp4'); let i = 0; const next = () => { if (i === 1000) return s.close(); s.send('n ' + i++, " + port + ", '127.0.0.1', next); }; next();"]);
      // Still blocked a while, so that the reader holds every datagram however slow this machine is.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
      throwNext = true;
      let threw = '';
      try { m.exports.drain(h); } catch (e) { threw = e.message; }
      m.exports.drain(h);
      m.exports.close(h);
      console.log(JSON.stringify({ threw, count: got.length, first: got[0], inOrder: got.every((g, i) => g === 'n ' + (i + 256)) }));`], { encoding: 'utf8' });
    expect(child.stderr).toBe('');
    expect(JSON.parse(child.stdout)).toEqual({ threw: 'thrown in onBatch', count: 744, first: 'n 256', inOrder: true });
  });

  it('the addon: a receive buffer beyond net.core.rmem_max where the process has CAP_NET_ADMIN (as rsyslog\'s imudp), capped by it without', () => {
    // Linux reports twice what it grants. Asked: twice the host's limit and a page.
    const rmemMax = Number(readFileSync('/proc/sys/net/core/rmem_max', 'utf8'));
    const asked = 2 * rmemMax + 4096;
    const addon = new URL('../../native/build/relay.node', import.meta.url).pathname;
    const script = `
      const m = { exports: {} }; process.dlopen(m, ${JSON.stringify(addon)});
      const h = m.exports.open('127.0.0.1', 0, false, false, ${asked});
      console.log(m.exports.info(h)[1]); m.exports.close(h);`;
    const granted = (prefix: string[]): number => {
      const argv = [...prefix, process.execPath, '-e', script];
      const r = spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      return Number(r.stdout);
    };
    // CAP_NET_ADMIN (bit 12) in this process's effective set: root on a host has it, root in a
    // container usually not, another user not.
    const capEff = BigInt(`0x${/CapEff:\s+([0-9a-f]+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0'}`);
    const netAdmin = ((capEff >> 12n) & 1n) === 1n;
    // Without the capability (where this process has it, setpriv takes it out of the bounding set).
    expect(granted(netAdmin ? ['setpriv', '--bounding-set=-net_admin'] : [])).toBe(2 * rmemMax);
    // With it (only where this process has it to give).
    if (netAdmin) expect(granted([])).toBe(2 * asked);
  });

  it('the addon: a closed handle stays closed (close twice, drain, info, start)', () => {
    const udp = nativeUdp().udp;
    if (!udp) throw new Error('native UDP receive not built');
    const h = udp.open('127.0.0.1', 0, false, false, 0);
    udp.close(h);
    udp.close(h);
    udp.drain(h);
    expect(() => udp.info(h)).toThrow('UDP receiver closed');
    expect(() => udp.start(h, () => {}, () => {})).toThrow('UDP receiver closed');
    expect(() => udp.start(h, () => {}, () => {}, 1 << 20)).toThrow('UDP receiver closed');
  });

  it('a burst while the main thread is blocked is read by the addon\'s reader thread, not dropped by the kernel', async () => {
    // The socket's receive buffer is the kernel's default (net.core.rmem_default).
    await expectBurstWhileBlockedArrivesWhole(input());
  });

  it('what the reader holds ahead of a blocked thread derives from memory_bytes: 16 MiB takes an 8 MB burst whole, 48 MiB (2.67 MiB) drops and counts the rest', async () => {
    const intake = track(await startTestIntake());
    const sent = 8_000;
    const outcome = async (memory: string) => {
      const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs: input(0, ', receive_buffer_bytes: 4194304'), extra: `shutdown_timeout_ms: 1000\n${memory}` })));
      const port = relay.port('t', 'udp/0');
      await udpBurstWhileBlocked(port, { count: sent, perTick: 80, tickMs: 10, blockMs: 4_000, prefix: '<14>burst ' });
      const count = async () => ({
        received: await relay.metric('intake_relay_events_received_total'),
        receiveDrops: await relay.metric('intake_relay_udp_receive_drops_total'),
        kernelDrops: await relay.metric('intake_relay_udp_kernel_drops_total'),
      });
      await vi.waitFor(async () => {
        const c = await count();
        expect(c.received + c.receiveDrops + c.kernelDrops).toBe(sent);
      }, { timeout: 15_000 });
      const c = await count();
      await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: c.received, sent: c.received, dropped: 0, balanced: true }), { timeout: 15_000 });
      await relay.stop();
      return c;
    };
    // The default budget: the intake's share is 96 MiB, a sixth of it past the 16 MiB bound.
    expect(await outcome('')).toEqual({ received: sent, receiveDrops: 0, kernelDrops: 0 });
    // 48 MiB: a 16 MiB share, 2.67 MiB of backlog: ten chunks of 256 KiB, each ~250 datagrams of 1,000 bytes.
    const tight = await outcome('memory_bytes: 50331648');
    // The burst (about 1 s) falls within the 4 s block: what was taken is what the backlog held.
    expect(tight.received).toBeGreaterThan(2_000);
    expect(tight.received).toBeLessThanOrEqual(2_800);
    // The rest was read and dropped at the backlog's bound (the kernel's buffer, 4 MiB, is kept drained).
    expect(tight.receiveDrops).toBeGreaterThan(3_000);
    // One intake for both relays: what each received reached it.
    await vi.waitFor(() => expect(intake.received).toHaveLength(sent + tight.received));
  });

  for (const path of ['recvmmsg', 'dgram'] as const) {
    it(`${path}: every datagram once from its own sender; oversized dropped and counted; invalid UTF-8 repaired; empty ones ignored`, async () => {
      const udp = nativeUdp().udp;
      if (!udp) throw new Error('native UDP receive not built');
      const start = vi.spyOn(udp, 'start');
      if (path === 'dgram') process.env.INTAKE_RELAY_UDP_RECVMMSG = '0';
      const intake = track(await startTestIntake());
      const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs: input(0, ', receive_buffer_bytes: 4194304') })));
      expect(start).toHaveBeenCalledTimes(path === 'recvmmsg' ? 1 : 0);
      const port = relay.port('t', 'udp/0');
      const lines = (tag: string): string[] => Array.from({ length: 700 }, (_, i) => `<14>Nov 22 10:00:00 ${tag}-host app[${i}]: ${tag} ${i}\n`);
      // Plain lines (no header) take the sender's address as HOSTNAME.
      const plain = Array.from({ length: 150 }, (_, i) => `plain ${i}`);
      const odd = [Buffer.alloc(3000, 0x61), Buffer.from([0x3c, 0x31, 0x34, 0x3e, 0x62, 0x61, 0x64, 0x20, 0xff, 0xfe]), Buffer.alloc(0), Buffer.from('\n')];
      await Promise.all([sendUdp('127.0.0.2', port, lines('a')), sendUdp('127.0.0.3', port, lines('b')), sendUdp('127.0.0.4', port, [...plain, ...odd])]);
      const expected = 700 + 700 + 150 + 1; // the oversized, empty and LF-only datagrams are not events
      await vi.waitFor(async () => expect([intake.received.length, await relay.metric('intake_relay_udp_kernel_drops_total')]).toEqual([expected, 0]), { timeout: 20_000 });
      const messages = intake.received.map((m) => m.message);
      expect(new Set(messages).size).toBe(expected);
      for (const tag of ['a', 'b']) {
        const mine = intake.received.filter((m) => m.message.startsWith(`${tag} `));
        expect(mine).toHaveLength(700);
        expect(new Set(mine.map((m) => m.hostname))).toEqual(new Set([`${tag}-host`]));
        // Order per sender is kept.
        expect(mine.map((m) => Number(m.message.split(' ')[1]))).toEqual(Array.from({ length: 700 }, (_, i) => i));
      }
      expect(new Set(intake.received.filter((m) => m.message.startsWith('plain ')).map((m) => m.hostname))).toEqual(new Set(['127.0.0.4']));
      expect(messages).toContain('bad \uFFFD\uFFFD');
      expect(await relay.metric('intake_relay_events_modified_total', { reason: 'invalid_utf8' })).toBe(1);
      expect(await relay.metric('intake_relay_framing_errors_total', { reason: 'too_large' })).toBe(1);
      expect(await relay.metric('intake_relay_udp_kernel_drops_total')).toBe(0);
      await vi.waitFor(async () => expect(await books(relay, 't')).toMatchObject({ received: expected + 1, sent: expected, dropped: 1, balanced: true }));
    });
  }

  it('a batch from many senders names each datagram\'s own sender', async () => {
    const intake = track(await startTestIntake());
    const relay = track(await startRelay(relayYaml({ intakePort: intake.port, inputs: input(0, ', receive_buffer_bytes: 4194304') })));
    const port = relay.port('t', 'udp/0');
    // 120 source addresses, 1 to 4 datagrams each (300 in all), sent by another process while this
    // thread (the relay's) waits for it: the reads afterwards carry many senders per batch.
    const child = spawnSync(process.execPath, ['-e', `
      const dgram = require('node:dgram');
      (async () => {
        for (let a = 10; a < 130; a++) {
          const s = dgram.createSocket('udp4');
          await new Promise((r) => s.bind(0, '127.0.0.' + a, r));
          for (let k = 0; k <= a % 4; k++) await new Promise((r) => s.send('from 127.0.0.' + a + ' #' + k, ${port}, '127.0.0.1', r));
          s.close();
        }
      })();`]);
    expect(child.status).toBe(0);
    await vi.waitFor(() => expect(intake.received).toHaveLength(300), { timeout: 20_000 });
    for (const m of intake.received) expect(m.hostname, m.message).toBe(m.message.split(' ')[1]);
    expect(await relay.metric('intake_relay_udp_kernel_drops_total')).toBe(0);
  });

  it('a stop reads what the kernel already holds: each datagram sent is received or counted as a kernel drop', async () => {
    const intake = track(await startTestIntake());
    const relay = await startRelay(relayYaml({ intakePort: intake.port, inputs: input(0, ', receive_buffer_bytes: 4194304'), extra: 'shutdown_timeout_ms: 10000' }));
    const port = relay.port('t', 'udp/0');
    const sent = 800;
    // Another process sends while this thread (the relay's) waits for it: every datagram is still
    // in the socket's buffer when the stop begins.
    const child = spawnSync(process.execPath, ['-e', `
      const s = require('node:dgram').createSocket('udp4'); let i = 0;
      const next = () => { if (i === ${sent}) return s.close(); s.send('<14>held ' + i++, ${port}, '127.0.0.1', next); }; next();`]);
    expect(child.status).toBe(0);
    const { lost } = await relay.stop();
    expect(lost).toBe(0);
    const received = await relay.metric('intake_relay_events_received_total');
    const kernelDrops = await relay.metric('intake_relay_udp_kernel_drops_total');
    expect(received).toBeGreaterThan(0);
    expect(received + kernelDrops).toBe(sent);
    expect(intake.received).toHaveLength(received);
    expect(new Set(intake.received.map((m) => m.message)).size).toBe(received);
  });

  it('a port another socket holds is a clear error naming the input', async () => {
    const taken = await holdUdpPort();
    const intake = track(await startTestIntake());
    await expect(startRelay(relayYaml({ intakePort: intake.port, inputs: input(taken) }))).rejects.toThrow(new RegExp(`t/udp/${taken}: cannot listen on udp 127\\.0\\.0\\.1:${taken}: another process already listens there`));
  });
});
