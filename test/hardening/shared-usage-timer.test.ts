/**
 * Issue 22 root cause: the periodic flush of usage counted in Redis wrapped
 * flush() (which queues itself on the serial chain) in a second link of the
 * same chain, so from the first tick on every flush, sweep and the shutdown's
 * final flush waited forever. After a few ticks a flush must still complete
 * and write what was counted.
 */
import pino from 'pino';
import { RedisBreaker } from '../../server/ratelimit/breaker';
import { usageKey } from '../../server/ratelimit/buckets';
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { SharedUsage } from '../../server/usage/shared';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createPlan, issueKey } from '../support/partner';
import { OwnRedisServer } from '../support/redis-server';

const logger = pino({ level: 'silent' });

describe('shared usage: periodic flushes never block the final one', () => {
  let db: TestDatabase;
  let redisServer: OwnRedisServer;
  let redis: RedisClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    redisServer = await OwnRedisServer.start();
    redis = createRedisClient(redisServer.url, logger);
    await redisReadyPromise(redis);
  });
  afterAll(async () => {
    redis.disconnect();
    await redisServer.stop();
    await db.drop();
  });

  test('after several timer ticks, close() writes the last counts', async () => {
    const { keyId } = await issueKey(db.owner, { plan: await createPlan(db.owner, null) });
    const pool = db.partnerPool();
    const breaker = new RedisBreaker(redis, { budgetMs: 2000, probeMs: 1000, logger });
    const prefix = `t${process.pid}:`;
    const usage = new SharedUsage({ redis, breaker, pool, prefix, logger, flushEveryMs: 50, sweepEveryMs: 80 });
    // real time: usage days and rate-limit windows follow the server's real clock, not TEST_CLOCK
    const day = new Date().toISOString().slice(0, 10);
    const key = usageKey(prefix, keyId, day);
    await redis.hset(key, 'test_endpoint', '3', '#v', '1', '#t', String(Date.now()));
    usage.touch(keyId, day);
    await new Promise((r) => setTimeout(r, 400)); // several flush and sweep ticks
    await redis.hset(key, 'test_endpoint', '7', '#v', '2');
    usage.touch(keyId, day);
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      usage.close().then(() => 'closed'),
      new Promise((r) => (timer = setTimeout(() => r('still waiting after 5 s'), 5000))),
    ]);
    clearTimeout(timer); // else it holds jest's worker open for up to 5 s after the file
    breaker.close();
    expect(closed).toBe('closed');
    const { rows } = await db.owner.query<{ n: string }>(
      'select coalesce(sum(requests), 0) as n from admin.daily_usage where api_key_id = $1',
      [keyId],
    );
    expect(Number(rows[0]!.n)).toBe(7);
  });
});
