/**
 * bench/paced.ts, the constant-rate runner the flood phases and the p99 columns use: what it sent,
 * what was answered (by status) and what failed add up, so a flood's "answered" is total - errors.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { runPaced } from '../../bench/paced';

describe('bench runPaced', () => {
  test('total = answered + errors (failed or never answered); statuses and non-2xx counted from the answers', async () => {
    let n = 0;
    const server = http.createServer((req, res) => {
      const i = n++;
      if (i % 10 === 9) return req.socket.destroy(); // a failed request
      if (i % 10 === 7) return; // never answered: still outstanding when the drain ends
      res.writeHead(i % 10 === 8 ? 429 : 200).end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      // The drain always lasts drainMs (10 requests are never answered): 3 s, so that on a loaded machine
      // every request sent has reached the server by its end (CI once saw 87 of 100 after 300 ms).
      const r = await runPaced({ url, nextPath: () => '/x', connections: 20, duration: 0.5, rate: 200, drainMs: 3000 });
      const answered = Object.values(r.statuses ?? {}).reduce((a, b) => a + b, 0);
      expect(r.total).toBe(100); // 0.5 s at 200 a second
      expect(n).toBe(100);
      expect(r.errors).toBe(20); // 10 failed, 10 never answered
      expect(answered).toBe(r.total - r.errors);
      expect(r.statuses).toEqual({ '200': 70, '429': 10 });
      expect(r.non2xx).toBe(10);
    } finally {
      server.close();
    }
  });

  test('no more requests made than connections free: the rest wait as numbers and count as errors if never sent', async () => {
    const seen: http.ServerResponse[] = [];
    const server = http.createServer((_req, res) => void seen.push(res)); // holds every answer
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const get = jest.spyOn(http, 'get');
      const r = await runPaced({ url, nextPath: () => '/x', connections: 3, duration: 0.5, rate: 200, drainMs: 1000 });
      expect(get).toHaveBeenCalledTimes(3); // not a ClientRequest per due request, queued in the agent
      get.mockRestore();
      expect(r.total).toBe(100);
      expect(seen).toHaveLength(3);
      expect(r.errors).toBe(100);
      expect(r.statuses).toEqual({});
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
