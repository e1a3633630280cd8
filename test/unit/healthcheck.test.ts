// `intake-relay healthcheck` (the image's HEALTHCHECK): where it asks, and what it makes of the
// answer, against a real HTTP server on loopback.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { probeReadyz, readyzUrl } from '../../src/cli/healthcheck.ts';
import { trackServer } from '../helpers/cleanup.ts';

const metrics = (address: string, enabled = true) => ({ metrics: { enabled, address, port: 9750 } });

describe('healthcheck', () => {
  it('asks loopback for a server on every address, the address itself otherwise, nothing when metrics are off', () => {
    expect(readyzUrl(metrics('0.0.0.0'))).toBe('http://127.0.0.1:9750/readyz');
    expect(readyzUrl(metrics('::'))).toBe('http://[::1]:9750/readyz');
    expect(readyzUrl(metrics('10.0.0.7'))).toBe('http://10.0.0.7:9750/readyz');
    expect(readyzUrl(metrics('0.0.0.0', false))).toBeUndefined();
  });

  it('is ok on 200 only, and says why not in one line', async () => {
    let status = 200;
    const server = trackServer(http.createServer((_req, res) => res.writeHead(status).end('{"ready":false,\n"phase":"starting"}')));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`;
    expect(await probeReadyz(url, 1_000)).toMatchObject({ ok: true });
    status = 503;
    const r = await probeReadyz(url, 1_000);
    expect(r).toEqual({ ok: false, detail: `${url}: 503 {"ready":false, "phase":"starting"}` });
    server.close();
    await new Promise((resolve) => server.once('close', resolve));
    expect(await probeReadyz(url, 1_000)).toMatchObject({ ok: false, detail: expect.stringContaining('ECONNREFUSED') });
  });

  it('gives up on a server that does not answer', async () => {
    const server = trackServer(http.createServer(() => undefined));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/readyz`;
    const started = Date.now();
    expect(await probeReadyz(url, 300)).toMatchObject({ ok: false, detail: expect.stringContaining('no answer within 300 ms') });
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});
