/**
 * The 429-flood phase's floor (bench/flood.ts): the answer it captures to give
 * again from node:http alone, and the CPU per request it reports for the
 * server and for the load generator (bench/servers.ts withCpu).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { capture } from '../../bench/flood';
import type { LoadResult } from '../../bench/load';
import { cpuUsOf, withCpu } from '../../bench/servers';

describe('bench flood floor', () => {
  test('capture keeps the status, the body and every header but those node:http writes itself', async () => {
    const body = JSON.stringify({ error: { code: 429, message: 'Rate limit exceeded' } });
    const seen: http.IncomingHttpHeaders[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers);
      res.setHeader('X-RateLimit-Remaining', '0');
      res.setHeader('Retry-After', '17');
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.setHeader('Content-Length', String(Buffer.byteLength(body)));
      res.writeHead(429).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const answer = await capture(`http://127.0.0.1:${port}/x`, { authorization: 'Bearer k' });
      expect(answer.status).toBe(429);
      expect(answer.body).toBe(body);
      expect(answer.headers).toEqual({
        'x-ratelimit-remaining': '0',
        'retry-after': '17',
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(Buffer.byteLength(body)),
      });
      // asked as the load generator asks: the key, JSON, no compression
      expect(seen[0]).toMatchObject({ authorization: 'Bearer k', 'accept-encoding': 'identity' });
    } finally {
      server.close();
    }
  });

  test('withCpu divides the CPU a run used (server by pid, load generator in process) by its answers', async () => {
    const burn = (ms: number) => {
      const start = process.cpuUsage();
      for (;;) {
        const used = process.cpuUsage(start);
        if (used.user + used.system >= ms * 1000) return;
      }
    };
    const answered: LoadResult = { rps: 0, p50: 0, p90: 0, p99: 0, max: 0, errors: 0, non2xx: 0, total: 10 };
    // this process stands for both: the "server" (by pid, from /proc) and the load generator
    const r = await withCpu(process.pid, async () => {
      burn(300);
      return answered;
    });
    // 300 ms over 10 answers: 30,000 µs each (/proc counts in 10 ms ticks)
    expect(r.clientCpuUsPerRequest).toBeGreaterThanOrEqual(30_000);
    expect(r.clientCpuUsPerRequest).toBeLessThan(40_000);
    expect(r.cpuUsPerRequest).toBeGreaterThanOrEqual(28_000);
    expect(r.cpuUsPerRequest).toBeLessThan(40_000);
    expect(cpuUsOf([r, answered])).toEqual([r.cpuUsPerRequest]);
    // a run that answered nothing has no figure
    expect(await withCpu(process.pid, async () => ({ ...answered, total: 0 }))).toEqual({ ...answered, total: 0 });
  });
});
