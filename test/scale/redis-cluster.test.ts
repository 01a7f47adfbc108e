/**
 * The limiter on a real 3-node Redis Cluster (the test's own): two API
 * instances, each with its own cluster client, let exactly N requests of an
 * N/minute key through; one EVALSHA per request; all keys of an API key in one
 * hash slot; the failed-authentication limit works there too.
 */
import type { Options } from 'express-rate-limit';
import type { Cluster, Redis } from 'ioredis';
import { AlignedStore } from '../../server/ratelimit/store';
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { listen, type Listening } from '../support/http';
import {
  awaitRoomInMinute,
  bearer,
  createPlan,
  issueKey,
  silentLogger,
  startPartner,
  type PartnerInstance,
} from '../support/partner';
import { OwnRedisCluster, redisClusterBinariesMissing } from '../support/redis-cluster';

const missing = redisClusterBinariesMissing();
if (missing) process.stdout.write(`[tests] Redis Cluster tests SKIPPED: ${missing}\n`);
const describeWithCluster = missing ? describe.skip : describe;

const TEST = '/api/v1/partner/test_endpoint';

describeWithCluster('rate limits on a Redis Cluster (own 3 nodes), two instances', () => {
  let db: TestDatabase;
  let cluster: OwnRedisCluster;
  const clients: RedisClient[] = [];
  const instances: PartnerInstance[] = [];
  const servers: Listening[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    cluster = await OwnRedisCluster.start();
    for (let i = 0; i < 2; i++) {
      const client = createRedisClient({ clusterNodes: cluster.nodes }, silentLogger);
      clients.push(client);
      await redisReadyPromise(client);
      const partner = await startPartner(db, { redis: client, redisPrefix: 'cl:' });
      instances.push(partner);
      servers.push(await listen(partner.app));
    }
  }, 60_000);
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await Promise.all(instances.map((p) => p.close().catch(() => undefined)));
    for (const c of clients) c.disconnect();
    await cluster?.stop();
    await db?.drop();
  });

  /** EVALSHA and EVAL calls over all nodes (a node that lacks the script answers NOSCRIPT; ioredis then sends EVAL). */
  const scriptCalls = async () => {
    const calls = { evalsha: 0, eval: 0 };
    for (const port of cluster.ports) {
      const info = await cluster.cli(port, 'info', 'commandstats');
      for (const cmd of ['evalsha', 'eval'] as const) {
        const m = new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(info);
        calls[cmd] += m ? Number(m[1]) : 0;
      }
    }
    return calls;
  };

  test('exactly N successes for an N/minute key across two instances; one EVALSHA per request; one hash slot per key', async () => {
    await awaitRoomInMinute(20_000);
    const plan = await createPlan(db.owner, 50, 10_000, null);
    const { apiKey, keyId } = await issueKey(db.owner, { plan });
    // One request per instance first: the identity is cached there and the script is loaded on the key's node.
    for (const s of servers) expect((await s.get(TEST, bearer(apiKey))).status).toBe(200);
    for (const port of cluster.ports) await cluster.cli(port, 'config', 'resetstat');

    const results = await Promise.all(Array.from({ length: 120 }, (_, i) => servers[i % 2]!.get(TEST, bearer(apiKey))));
    const count = (s: number) => results.filter((r) => r.status === s).length;
    expect([count(200), count(429)]).toEqual([48, 72]); // 50 in all with the two above
    const calls = await scriptCalls();
    // At most one EVALSHA per request, nothing else (a node without the script would answer NOSCRIPT and get
    // one EVAL): each 200 was counted there, and each instance met a 429 from Redis before it refused the
    // key itself (how many concurrent requests reached Redis before that first 429 came back varies).
    expect(calls.eval).toBe(0);
    expect(calls.evalsha).toBeGreaterThanOrEqual(48 + 2);
    expect(calls.evalsha).toBeLessThanOrEqual(120);
    // Now both instances know the bucket is full: more requests in this window cost no script call.
    for (const port of cluster.ports) await cluster.cli(port, 'config', 'resetstat');
    for (let i = 0; i < 20; i++) expect((await servers[i % 2]!.get(TEST, bearer(apiKey))).status).toBe(429);
    expect(await scriptCalls()).toEqual({ evalsha: 0, eval: 0 });

    // Every key of this API key (three counters and usage) is in the same slot.
    const slots = new Set<string>();
    for (const port of cluster.ports) {
      const slotOfTag = (await cluster.cli(port, 'cluster', 'keyslot', `cl:{${keyId}}:m:0`)).trim();
      slots.add(slotOfTag);
      const keys = (await cluster.cli(port, '--scan', '--pattern', `cl:{${keyId}}:*`)).split('\n').filter(Boolean);
      for (const k of keys) slots.add((await cluster.cli(port, 'cluster', 'keyslot', k)).trim());
    }
    expect(slots.size).toBe(1);

    // Usage counted in the cluster reaches PostgreSQL.
    // (the locally refused 429s reach Redis with the hourly push, then the shared flush)
    await Promise.all(instances.map((p) => p.guard.history.flush()));
    await Promise.all(instances.map((p) => p.guard.sharedUsage!.flush()));
    const { rows } = await db.owner.query(
      'select endpoint, requests::int, rate_limited::int from admin.daily_usage where api_key_id = $1 order by endpoint',
      [keyId],
    );
    expect(rows).toEqual([
      { endpoint: '(none)', requests: 0, rate_limited: 72 + 20 },
      { endpoint: 'test_endpoint', requests: 50, rate_limited: 0 },
    ]);
  });

  test('the failed-authentication limit (rate-limit-redis) is shared on the cluster too', async () => {
    await awaitRoomInMinute(5000);
    const statuses: number[] = [];
    for (let i = 0; i < 32; i++)
      statuses.push((await servers[i % 2]!.get(TEST, bearer(`pbk_${'x'.repeat(43)}`))).status);
    expect(statuses.slice(0, 30)).toEqual(Array(30).fill(401));
    expect(statuses.slice(30)).toEqual([429, 429]);
  });

  test('the failed-authentication store keeps counting in the cluster when a master is down while its scripts load, and when a node lost them', async () => {
    // A master killed during a failover stays in the client's node list for a while: loading the
    // scripts there fails. That failure once poisoned the store's scripts for the life of the process
    // (every later call failed and reopened the Redis circuit), so counts stayed per instance.
    const client = createRedisClient({ clusterNodes: cluster.nodes }, silentLogger) as Cluster;
    await redisReadyPromise(client);
    const nodes = client.nodes.bind(client);
    const dead = { call: () => Promise.reject(new Error('Connection is closed.')) } as unknown as Redis;
    client.nodes = ((role?: 'all' | 'master' | 'slave') => [...nodes(role), dead]) as Cluster['nodes'];
    const store = new AlignedStore({ bucket: 'minute', redis: client, prefix: 'cl-dead:', logger: silentLogger });
    try {
      store.init({ windowMs: 60_000 } as Options);
      const key = `${Date.now()}:203.0.113.9`;
      await store.increment(key);
      await store.increment(key);
      expect(Number(await client.get(`cl-dead:minute:${key}`))).toBe(2); // in Redis, not in process
      // A promoted replica has none of the loaded scripts (Redis does not replicate them): NOSCRIPT, loaded again.
      await Promise.all(cluster.ports.map((port) => cluster.cli(port, 'script', 'flush')));
      await store.increment(key);
      expect(Number(await client.get(`cl-dead:minute:${key}`))).toBe(3);
      expect((await store.get(key))?.totalHits).toBe(3);
    } finally {
      store.shutdown();
      client.disconnect();
    }
  });
});
