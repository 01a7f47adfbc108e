/**
 * server/usage/history.ts on its failure paths: a Redis push that fails (or a
 * breaker that is open) moves the counts to the in-process path, written to
 * PostgreSQL through api.record_hourly_usage; a failed PostgreSQL write keeps
 * them for the next one. The hour comes from the instant passed in (no clock).
 */
import type { Pool } from '../../server/db/pools';
import type { RedisBreaker } from '../../server/ratelimit/breaker';
import type { RedisClient } from '../../server/redis';
import { hourField, HourlyUsage, statusClass } from '../../server/usage/history';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { issueKey, silentLogger } from '../support/partner';

const AT = Date.parse('2026-11-24T10:15:00Z');

function failingRedis(): { redis: RedisClient; pipelines: number } {
  const state = { pipelines: 0 };
  const redis = {
    pipeline() {
      state.pipelines++;
      return {
        hincrby: () => undefined,
        pexpireat: () => undefined,
        exec: () => Promise.reject(new Error('connection lost')),
      };
    },
  } as unknown as RedisClient;
  return {
    redis,
    get pipelines() {
      return state.pipelines;
    },
  };
}

describe('hourly usage: failure paths', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  const rows = async (keyId: string) =>
    (
      await db.owner.query(
        `select hour, endpoint, status_2xx::int s2, status_3xx::int s3, status_4xx::int s4, status_5xx::int s5,
                rate_limited::int rl, requests::int n
           from admin.hourly_usage where api_key_id = $1 order by endpoint, hour`,
        [keyId],
      )
    ).rows;

  test('classes and fields', () => {
    expect([200, 204, 304, 400, 404, 429, 500, 503].map(statusClass)).toEqual(['2', '2', '3', '4', '4', 'R', '5', '5']);
    expect(hourField(7, 'R', 'bars/:id')).toBe('@07|R|bars/:id');
  });

  test('each answer is counted in the day and hour of its own instant, whatever the instant before it', async () => {
    const increments: string[] = [];
    const redis = {
      pipeline: () => ({
        hincrby: (key: string, field: string, n: number) => field !== '#v' && increments.push(`${key} ${field} ${n}`),
        pexpireat: () => undefined,
        exec: () => Promise.resolve([]),
      }),
    } as unknown as RedisClient;
    const h = new HourlyUsage({ pool: db.owner as unknown as Pool, logger: silentLogger, redis, prefix: 'p:' });
    try {
      const lastMinute = Date.parse('2026-11-24T23:59:00Z');
      const nextDay = Date.parse('2026-11-25T00:00:00Z');
      for (const at of [AT, lastMinute, AT, nextDay, nextDay, AT + 3600_000, lastMinute])
        h.record('k', 'bars', 200, at, true);
      await h.push();
      expect(increments.sort()).toEqual([
        'p:{k}:u:2026-11-24 @10|2|bars 2',
        'p:{k}:u:2026-11-24 @11|2|bars 1',
        'p:{k}:u:2026-11-24 @23|2|bars 2',
        'p:{k}:u:2026-11-25 @00|2|bars 2',
      ]);
    } finally {
      await h.close();
    }
  });

  test('a failed Redis push is counted in process and written to PostgreSQL', async () => {
    const { keyId } = await issueKey(db.owner);
    const fake = failingRedis();
    const h = new HourlyUsage({
      pool: db.partnerPool(),
      logger: silentLogger,
      redis: fake.redis,
      flushEveryMs: 60_000,
    });
    for (const status of [200, 200, 200, 429, 500]) h.record(keyId, 'bars', status, AT, true);
    h.record(keyId, 'search', 304, AT, true);
    await h.close();
    expect(fake.pipelines).toBeGreaterThan(0);
    expect(await rows(keyId)).toEqual([
      { hour: new Date('2026-11-24T10:00:00Z'), endpoint: 'bars', s2: 3, s3: 0, s4: 1, s5: 1, rl: 1, n: 5 },
      { hour: new Date('2026-11-24T10:00:00Z'), endpoint: 'search', s2: 0, s3: 1, s4: 0, s5: 0, rl: 0, n: 1 },
    ]);
  });

  test('429s refused in process (rateLimited) go with the push; a failed push hands them to the in-process usage', async () => {
    const fake = failingRedis();
    const handed: [string, string, number][] = [];
    const h = new HourlyUsage({
      pool: db.partnerPool(),
      logger: silentLogger,
      redis: fake.redis,
      flushEveryMs: 60_000,
      rateLimitedInProcess: (keyId, day, n) => handed.push([keyId, day, n]),
    });
    for (let i = 0; i < 3; i++) h.rateLimited('k1', AT);
    h.rateLimited('k2', AT);
    await h.push();
    expect(fake.pipelines).toBe(1);
    expect(handed.sort()).toEqual([
      ['k1', '2026-11-24', 3],
      ['k2', '2026-11-24', 1],
    ]);
    await h.close();
  });

  test('an open breaker skips Redis; a failed PostgreSQL write keeps the counts for the next one', async () => {
    const { keyId } = await issueKey(db.owner);
    const fake = failingRedis();
    const real = db.partnerPool();
    let failures = 1;
    const pool = {
      query: (...args: Parameters<Pool['query']>) =>
        failures-- > 0 ? Promise.reject(new Error('Connection terminated')) : real.query(...args),
    } as unknown as Pool;
    const h = new HourlyUsage({
      pool,
      logger: silentLogger,
      redis: fake.redis,
      breaker: { available: false } as RedisBreaker,
      flushEveryMs: 60_000,
    });
    h.record(keyId, 'bars', 400, AT, true);
    h.record(keyId, 'bars', 429, AT, false);
    await h.flush(); // the write fails: kept
    expect(fake.pipelines).toBe(0); // the breaker said no: no Redis call
    expect(await rows(keyId)).toEqual([]);
    h.record(keyId, 'bars', 200, AT + 3600_000, false);
    await h.close();
    expect(await rows(keyId)).toEqual([
      { hour: new Date('2026-11-24T10:00:00Z'), endpoint: 'bars', s2: 0, s3: 0, s4: 2, s5: 0, rl: 1, n: 2 },
      { hour: new Date('2026-11-24T11:00:00Z'), endpoint: 'bars', s2: 1, s3: 0, s4: 0, s5: 0, rl: 0, n: 1 },
    ]);
  });
});
