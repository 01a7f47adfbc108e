import request from 'supertest';
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { createTestDatabase, type TestDatabase } from '../support/db';
import {
  awaitRoomInMinute,
  bearer,
  createPlan,
  issueKey,
  silentLogger,
  startPartner,
  type PartnerInstance,
} from '../support/partner';
import { OwnRedisServer } from '../support/redis-server';

const TEST = '/api/v1/partner/test_endpoint';

const nextMinute = (ms: number) => Math.floor(ms / 60_000) * 60 + 60;
const nextDay = (ms: number) => Math.floor(ms / 86_400_000) * 86_400 + 86_400;
const nextMonth = (ms: number) => {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / 1000;
};

function triple(res: request.Response, suffix: string) {
  suffix = suffix.toLowerCase();
  return {
    limit: Number(res.headers[`x-ratelimit-limit${suffix}`]),
    remaining: Number(res.headers[`x-ratelimit-remaining${suffix}`]),
    reset: Number(res.headers[`x-ratelimit-reset${suffix}`]),
  };
}

// The same contract with in-process counters and with the one-script Redis limiter (the test's own redis-server).
describe.each(['in-process counters', 'Redis (own redis-server)'])('rate limits (%s)', (mode) => {
  let db: TestDatabase;
  let partner: PartnerInstance;
  let redisServer: OwnRedisServer | undefined;
  let client: RedisClient | undefined;
  const problems: unknown[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    // Whatever the guard or express-rate-limit (its configuration checks) would log as a problem.
    const logger = silentLogger.child({});
    logger.warn = ((...args: unknown[]) => {
      if (args[1] !== 'usage alert') problems.push(args);
    }) as typeof logger.warn;
    logger.error = ((...args: unknown[]) => {
      problems.push(args);
    }) as typeof logger.error;
    if (mode.startsWith('Redis')) {
      redisServer = await OwnRedisServer.start();
      client = createRedisClient(redisServer.url, silentLogger);
      await redisReadyPromise(client);
    }
    partner = await startPartner(db, { logger, redis: client });
  });
  afterAll(async () => {
    await partner?.close();
    client?.disconnect();
    await redisServer?.stop();
    await db?.drop();
  });

  test('every rate-limit header on 200, 400 and 404, with -1 for unlimited buckets and aligned resets', async () => {
    await awaitRoomInMinute(5000);
    const { apiKey } = await issueKey(db.owner);
    const paths = [
      [TEST, 200],
      ['/api/v1/partner/bars?limit=0', 400],
      ['/api/v1/partner/no/such/path', 404],
    ] as const;
    let remaining = 600;
    for (const [path, status] of paths) {
      const before = Date.now();
      const res = await request(partner.app).get(path).set(bearer(apiKey));
      expect(res.status).toBe(status);
      remaining--;
      expect(triple(res, '-Minute')).toEqual({ limit: 600, remaining, reset: nextMinute(before) });
      expect(triple(res, '-Day')).toEqual({ limit: -1, remaining: -1, reset: nextDay(before) });
      expect(triple(res, '-Month')).toEqual({ limit: -1, remaining: -1, reset: nextMonth(before) });
      expect(triple(res, '')).toEqual(triple(res, '-Minute')); // none but the minute is limited
      expect(res.headers['ratelimit-policy']).toMatch(/^"minute"; q=600; w=60; pk=:[^:]+:$/);
      expect(res.headers.ratelimit).toMatch(new RegExp(`^"minute"; r=${remaining}; t=\\d+$`));
    }
  });

  test('Remaining goes down by exactly 1 per request; the general triple is the limited bucket with the fewest left', async () => {
    await awaitRoomInMinute(5000);
    const plan = await createPlan(db.owner, 20, 25, 1000);
    const { apiKey } = await issueKey(db.owner, { plan });
    const seen: { minute: number; day: number; month: number; general: number; generalLimit: number }[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await request(partner.app).get(TEST).set(bearer(apiKey)).expect(200);
      seen.push({
        minute: triple(res, '-Minute').remaining,
        day: triple(res, '-Day').remaining,
        month: triple(res, '-Month').remaining,
        general: triple(res, '').remaining,
        generalLimit: triple(res, '').limit,
      });
    }
    seen.forEach((s, i) => {
      expect(s).toEqual({ minute: 19 - i, day: 24 - i, month: 999 - i, general: 19 - i, generalLimit: 20 });
    });
  });

  test('a 20/minute plan: 20 pass, the 21st is 429 with the exact body; rejected requests count against no bucket', async () => {
    await awaitRoomInMinute(10_000);
    const plan = await createPlan(db.owner, 20, 1000, null);
    const { apiKey } = await issueKey(db.owner, { plan });
    for (let i = 0; i < 20; i++) await request(partner.app).get(TEST).set(bearer(apiKey)).expect(200);
    for (let i = 0; i < 5; i++) {
      const before = Date.now();
      const res = await request(partner.app).get(TEST).set(bearer(apiKey));
      expect(res.status).toBe(429);
      expect(res.body).toEqual({
        error: 'Rate limit exceeded',
        limit: 20,
        period: 'minute',
        request_id: res.headers['x-request-id'],
      });
      const retryAfter = Number(res.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      const expected = Math.max(1, Math.ceil(nextMinute(before) - before / 1000));
      expect(retryAfter).toBeGreaterThanOrEqual(Math.max(1, expected - 1)); // the server's clock ran a little later
      expect(retryAfter).toBeLessThanOrEqual(expected);
      expect(triple(res, '-Minute')).toEqual({ limit: 20, remaining: 0, reset: nextMinute(before) });
      expect(triple(res, '')).toEqual(triple(res, '-Minute'));
      // The day bucket holds the 20 served requests only.
      expect(triple(res, '-Day')).toEqual({ limit: 1000, remaining: 980, reset: nextDay(before) });
      expect(triple(res, '-Month')).toEqual({ limit: -1, remaining: -1, reset: nextMonth(before) });
    }
  });

  test('a day-limited plan: 429 with period "day"; the rejected request gives the minute its count back', async () => {
    await awaitRoomInMinute(10_000);
    const plan = await createPlan(db.owner, 100, 10, null);
    const { apiKey } = await issueKey(db.owner, { plan });
    for (let i = 0; i < 10; i++) {
      const res = await request(partner.app).get(TEST).set(bearer(apiKey)).expect(200);
      expect(triple(res, '')).toEqual(triple(res, '-Day')); // the day has fewer left than the minute
    }
    for (let i = 0; i < 3; i++) {
      const res = await request(partner.app).get(TEST).set(bearer(apiKey));
      expect(res.status).toBe(429);
      expect(res.body).toMatchObject({ error: 'Rate limit exceeded', limit: 10, period: 'day' });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(triple(res, '-Day').remaining).toBe(0);
      expect(triple(res, '-Minute').remaining).toBe(90); // the 10 served, not the rejected
      await new Promise((r) => setTimeout(r, 20)); // the decrement runs when the 429 has been sent
    }
  });

  test('nothing was logged as a warning or error', () => {
    expect(problems).toEqual([]);
  });
});
