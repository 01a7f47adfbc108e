/**
 * Issue 30's bar for exact counts: three instances of the real server
 * (server/main.ts, each its own process) share Redis and PostgreSQL; one is
 * SIGKILLed in the middle (after its last answer's class reached Redis) and
 * started again. Afterwards the hourly usage (what GET usage/history sums)
 * equals, per endpoint and status class, the answers the client saw.
 */
import http from 'node:http';
import { createPartnerGuard } from '../../server/credentials/guard';
import type { RedisClient } from '../../server/redis';
import type { TestDatabase } from '../support/db';
import { awaitRoomInMinute, createPlan, issueKey, silentLogger } from '../support/partner';
import { startOwnRedis, type OwnRedis } from '../support/own-redis';
import { OwnRedisServer } from '../support/redis-server';
import { startServerProcess, type ServerProcess } from '../support/server-process';

const P = '/api/v1/partner';

function get(port: number, p: string, apiKey: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: p, headers: { Authorization: `Bearer ${apiKey}` } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      })
      .on('error', reject);
  });
}

type Tally = Record<string, Record<string, number>>; // endpoint -> class ('2xx', ..., 'rate_limited') -> n

function add(t: Tally, endpoint: string, status: number): void {
  const c = (t[endpoint] ??= {});
  const cls = `${Math.floor(status / 100)}xx`;
  c[cls] = (c[cls] ?? 0) + 1;
  if (status === 429) c.rate_limited = (c.rate_limited ?? 0) + 1;
}

describe('usage history: three server processes, one SIGKILLed and restarted', () => {
  let setup: OwnRedis | undefined;
  let db: TestDatabase;
  let redisServer: OwnRedisServer;
  let client: RedisClient;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    setup = await startOwnRedis();
    ({ db, redisServer, client } = setup);
  });
  afterAll(async () => {
    for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    await setup?.stop();
  });

  test('the history equals the answers, per endpoint and status class', async () => {
    const start = () =>
      startServerProcess(
        db.url,
        {
          REDIS_URL: redisServer.url,
          WEB_CONCURRENCY: '1',
          // not the production 50 ms: on a loaded machine one slow reply opens the circuit, and what the
          // killed instance then counted in process is lost (the breaker has its own tests)
          REDIS_BUDGET_MS: '2000',
        },
        { shutdownTimeoutMs: 10_000, dropRequestLines: true },
      ).then((s) => (servers.push(s), s));
    const [a, b, c] = await Promise.all([start(), start(), start()]);
    await awaitRoomInMinute(20_000);
    const key = await issueKey(db.owner, { plan: await createPlan(db.owner, 12) });
    const seen: Tally = {};
    const calls: [string, string][] = [
      ['test_endpoint', `${P}/test_endpoint`],
      ['bars', `${P}/bars?limit=nope`],
      ['bars/:id', `${P}/bars/999999`],
      ['categories', `${P}/categories`],
    ];
    const round = async (ports: number[]) => {
      let i = 0;
      for (const [endpoint, url] of calls)
        add(seen, endpoint, (await get(ports[i++ % ports.length]!, url, key.apiKey)).status);
    };
    for (let r = 0; r < 2; r++) await round([a!.port, b!.port, c!.port]);
    await new Promise((r) => setTimeout(r, 400)); // b's last classes reach Redis (pushed every 100 ms)
    const killed = new Promise((r) => b!.child.once('exit', r));
    b!.child.kill('SIGKILL'); // no shutdown flush
    await killed;
    const b2 = await start(); // its start-up sweep writes what the killed one left in Redis
    for (let r = 0; r < 2; r++) await round([b2.port, c!.port, a!.port]); // past 12 a minute: 429s
    expect(Object.values(seen).reduce((n, t) => n + (t.rate_limited ?? 0), 0)).toBeGreaterThan(0);

    // the running instances stop cleanly (their shutdown pushes and flushes); one more sweep for the killed one
    for (const s of [a!, c!, b2]) s.child.kill('SIGTERM');
    for (const s of [a!, c!, b2]) expect((await s.exited).code).toBe(0);
    const guard = await createPartnerGuard({
      pool: db.partnerPool(),
      databaseUrl: db.url,
      logger: silentLogger,
      redis: client,
      usageFlushMs: 60_000,
    });
    await guard.sharedUsage!.started;
    await guard.close();

    const { rows } = await db.owner.query<{
      endpoint: string;
      s2: number;
      s3: number;
      s4: number;
      s5: number;
      rl: number;
    }>(
      `select endpoint, sum(status_2xx)::int s2, sum(status_3xx)::int s3, sum(status_4xx)::int s4,
              sum(status_5xx)::int s5, sum(rate_limited)::int rl
         from admin.hourly_usage where api_key_id = $1 group by endpoint`,
      [key.keyId],
    );
    const stored: Tally = {};
    for (const r of rows) {
      const t: Record<string, number> = {};
      for (const [k, v] of [
        ['2xx', r.s2],
        ['3xx', r.s3],
        ['4xx', r.s4],
        ['5xx', r.s5],
        ['rate_limited', r.rl],
      ] as const)
        if (v) t[k] = v;
      stored[r.endpoint] = t;
    }
    expect(stored).toEqual(seen);
  }, 240_000);
});
