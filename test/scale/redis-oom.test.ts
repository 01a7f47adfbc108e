/**
 * Issue 32, a fault that already holds (regression test): Redis out of memory (maxmemory 1 byte,
 * noeviction: every write refused with OOM) for some seconds under load. The real server with
 * the test's own redis-server: every request answered 200 (limits count in process meanwhile),
 * and afterwards a 20/minute key gets exactly 20 x 200 then 429s, counted in Redis again.
 */
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { awaitRoomInMinute, bearer, createPlan, issueKey, silentLogger } from '../support/partner';
import { OwnRedisServer } from '../support/redis-server';
import { startServerProcess, type ServerProcess } from '../support/server-process';
import { sleep } from '../support/wait';

const OOM_MS = 5000;

describe('Redis out of memory for some seconds, under load', () => {
  let db: TestDatabase;
  let redisServer: OwnRedisServer;
  let redis: RedisClient;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    redisServer = await OwnRedisServer.start();
    redis = createRedisClient(redisServer.url, silentLogger);
    await redisReadyPromise(redis);
  });
  afterAll(async () => {
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    redis?.disconnect();
    await redisServer?.stop();
    await db?.drop();
  }, 30_000);

  test('answers 200 while every Redis write is refused; a 20/minute key exact afterwards', async () => {
    const f = fixtures(db.owner);
    const barId = await f.bar(await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' }), {
      name: 'Out of Memory',
    });
    const load = await issueKey(db.owner, { plan: await createPlan(db.owner, null) });
    const limited = await issueKey(db.owner, { plan: await createPlan(db.owner, 20) });
    server = await startServerProcess(
      db.url,
      { REDIS_URL: redisServer.url },
      { shutdownTimeoutMs: 5000, dropRequestLines: true },
    );
    const url = `http://127.0.0.1:${server.port}/api/v1/partner/bars/${barId}`;

    const answers: { status: number; ms: number }[] = [];
    let serving = true;
    const client = async () => {
      while (serving) {
        const sent = Date.now();
        const res = await fetch(url, { headers: bearer(load.apiKey) });
        await res.arrayBuffer();
        answers.push({ status: res.status, ms: Date.now() - sent });
      }
    };
    const clients = Array.from({ length: 4 }, client);
    let during: { status: number; ms: number }[];
    let refused: string;
    try {
      await sleep(1000);
      await redis.config('SET', 'maxmemory-policy', 'noeviction');
      await redis.config('SET', 'maxmemory', '1');
      refused = await redis.set('probe', 'x').then(
        () => 'accepted',
        (e: Error) => e.message,
      );
      const from = answers.length;
      await sleep(OOM_MS);
      during = answers.slice(from);
      await redis.config('SET', 'maxmemory', '0');
      await sleep(1000);
    } finally {
      serving = false;
      await Promise.all(clients);
    }
    expect(refused).toMatch(/^OOM/); // the fault was real
    expect(during.length).toBeGreaterThan(100);
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    const sorted = during.map((a) => a.ms).sort((a, b) => a - b);
    const p99 = sorted[Math.floor(sorted.length * 0.99)]!;

    // Redis accepts writes again: a 20/minute key is exact, and counted in Redis (shared, not in process).
    await awaitRoomInMinute(15_000);
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) statuses.push((await fetch(url, { headers: bearer(limited.apiKey) })).status);
    expect(statuses).toEqual([...Array(20).fill(200), ...Array(40).fill(429)]);
    const minuteKeys = (await redis.keys(`*{${limited.keyId}}:m:*`)) as string[];
    expect(minuteKeys).toHaveLength(1);
    expect(Number(await redis.get(minuteKeys[0]!))).toBe(20);
    const warnings = [...new Set(server.logs.filter((l) => Number(l.level) >= 40).map((l) => String(l.msg)))];
    process.stdout.write(
      `[redis-oom] ${during.length} requests while Redis refused every write (${OOM_MS} ms): all 200, ` +
        `p99 ${p99} ms; afterwards a 20/minute key: 20 x 200, 40 x 429, counted in Redis; log (warn+): ${JSON.stringify(warnings)}\n`,
    );
  }, 60_000);
});
