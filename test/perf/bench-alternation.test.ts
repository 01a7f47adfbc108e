import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { measureInTurn } from '../../bench/in-turn';
import { alternationGroups, PARTNER_ACCEPT_ENCODING, withEncodings, type Endpoint } from '../../bench/workload';

const call = { path: '/x', sql: 'select 1', values: [] };
const endpoint = (name: string, headers?: Record<string, string>): Endpoint => ({
  name,
  next: () => call,
  fixed: call,
  worst: [],
  ...(headers ? { headers } : {}),
});

describe('alternationGroups (bench/workload.ts): the HTTP phase runs an endpoint and its compressed twin in turn', () => {
  test('each endpoint beside its (gzip, br) twin, in the list order, plain first', () => {
    const list = withEncodings([endpoint('radius5'), endpoint('search_word'), endpoint('city_feed')], true);
    expect(list.map((e) => e.name)).toEqual([
      'radius5',
      'search_word',
      'city_feed',
      `radius5 (${PARTNER_ACCEPT_ENCODING})`,
      `search_word (${PARTNER_ACCEPT_ENCODING})`,
      `city_feed (${PARTNER_ACCEPT_ENCODING})`,
    ]);
    const groups = alternationGroups(list);
    expect(groups.map((g) => g.map((e) => e.name))).toEqual([
      ['radius5', `radius5 (${PARTNER_ACCEPT_ENCODING})`],
      ['search_word', `search_word (${PARTNER_ACCEPT_ENCODING})`],
      ['city_feed', `city_feed (${PARTNER_ACCEPT_ENCODING})`],
    ]);
    expect(groups.map((g) => g.map((e) => e.headers?.['accept-encoding']))).toEqual([
      [undefined, PARTNER_ACCEPT_ENCODING],
      [undefined, PARTNER_ACCEPT_ENCODING],
      [undefined, PARTNER_ACCEPT_ENCODING],
    ]);
  });

  test('an endpoint with headers of its own has no twin, and --no-compressed leaves every case alone', () => {
    const own = endpoint('bar_gzip_only', { 'accept-encoding': 'gzip' });
    expect(alternationGroups(withEncodings([endpoint('bar'), own], true)).map((g) => g.map((e) => e.name))).toEqual([
      ['bar', `bar (${PARTNER_ACCEPT_ENCODING})`],
      ['bar_gzip_only'],
    ]);
    expect(alternationGroups(withEncodings([endpoint('bar'), own], false)).map((g) => g.map((e) => e.name))).toEqual([
      ['bar'],
      ['bar_gzip_only'],
    ]);
  });

  test('cases without a base group by name', () => {
    expect(alternationGroups([{ name: 'a' }, { name: 'b' }, { name: 'a' }]).map((g) => g.length)).toEqual([2, 1]);
  });
});

describe('measureInTurn (bench/in-turn.ts): twins alternate run by run against a server', () => {
  test('warm-ups, max runs and paced runs each alternate plain and compressed; every case gets its own runs', async () => {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(`${req.headers['accept-encoding'] ?? 'identity'} ${req.headers.authorization ?? ''}`);
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const group = alternationGroups(withEncodings([endpoint('radius5')], true))[0]!;
      let counted = 0;
      const results = await measureInTurn({
        url: `http://127.0.0.1:${port}`,
        group,
        headers: { authorization: 'Bearer k' },
        args: { runs: 2, connections: 1, duration: 1, rate: 50 },
        countRedisCommands: () => Promise.resolve((counted += 10)),
      });
      // consecutive requests with the same headers form one run; 2 warm-ups + 2 × 2 max runs + 2 × 2 paced runs
      const blocks = seen.filter((h, i) => i === 0 || h !== seen[i - 1]);
      expect(blocks).toEqual(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? `${PARTNER_ACCEPT_ENCODING} Bearer k` : 'identity Bearer k')),
      );
      expect(Object.keys(results)).toEqual(['radius5', `radius5 (${PARTNER_ACCEPT_ENCODING})`]);
      for (const r of Object.values(results)) {
        expect(r.maxRuns).toHaveLength(2);
        expect(r.rateRuns).toHaveLength(2);
        expect(r.rateTarget).toBe(50);
        expect(r.max.rps).toBeGreaterThan(0);
        expect(r.redisPerRequest).toBeCloseTo(20 / r.maxRuns.reduce((n, x) => n + x.total, 0), 6);
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 30_000);
});
