/**
 * GET usage (decisions.md v1.2 "Usage for partners"): the key's buckets with
 * limit/used/remaining/reset (-1 unlimited) and the subscriber's last 20
 * alerts; counts against no bucket (answered even when a bucket is full),
 * strict parameters, in the OpenAPI document. With in-process counters and
 * with the one-script Redis limiter (the test's own redis-server).
 */
import request from 'supertest';
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { validateResponse } from '../support/openapi';
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

const USAGE = '/api/v1/partner/usage';
const TEST = '/api/v1/partner/test_endpoint';

describe.each(['in-process counters', 'Redis (own redis-server)'])('GET usage (%s)', (mode) => {
  let db: TestDatabase;
  let partner: PartnerInstance;
  let redisServer: OwnRedisServer | undefined;
  let client: RedisClient | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    if (mode.startsWith('Redis')) {
      redisServer = await OwnRedisServer.start();
      client = createRedisClient(redisServer.url, silentLogger);
      await redisReadyPromise(client);
    }
    partner = await startPartner(db, { redis: client });
  });
  afterAll(async () => {
    await partner?.close();
    client?.disconnect();
    await redisServer?.stop();
    await db?.drop();
  });

  const usage = async (apiKey: string, status = 200) => {
    const res = await request(partner.app).get(USAGE).set(bearer(apiKey)).expect(status);
    validateResponse('GET', USAGE, {
      status: res.status,
      headers: res.headers as Record<string, string>,
      text: res.text,
    });
    return res;
  };

  test('buckets as the headers count them, not counting itself, answered when a bucket is full', async () => {
    await awaitRoomInMinute(15_000);
    const plan = await createPlan(db.owner, 5, null, 1000);
    const { apiKey, subscriberId } = await issueKey(db.owner, { plan });
    for (let i = 0; i < 3; i++) await request(partner.app).get(TEST).set(bearer(apiKey)).expect(200);

    const first = await usage(apiKey);
    expect(first.body).toMatchObject({ subscriber_id: subscriberId, plan, alerts: [] });
    // real time: usage days and rate-limit windows follow the server's real clock, not TEST_CLOCK
    const minuteEnd = Math.ceil((Date.now() - (Date.now() % 60_000) + 60_000) / 1000);
    expect(first.body.buckets).toEqual({
      minute: { limit: 5, used: 3, remaining: 2, reset: minuteEnd },
      day: { limit: -1, used: -1, remaining: -1, reset: expect.any(Number) },
      month: { limit: 1000, used: 3, remaining: 997, reset: expect.any(Number) },
    });
    expect(first.headers['x-ratelimit-remaining-minute']).toBe('2');
    // asking again changes nothing: usage is not counted
    const again = await usage(apiKey);
    expect(again.body.buckets.minute.used).toBe(3);
    expect(again.body.buckets.month.used).toBe(3);

    // 4/5 and 5/5: three alerts; then the bucket is full
    // (alerts are recorded off the request path: settled after each, so "newest first" has an order to show)
    for (let i = 0; i < 2; i++) {
      await request(partner.app).get(TEST).set(bearer(apiKey)).expect(200);
      await partner.guard.alerts.settle();
    }
    await request(partner.app).get(TEST).set(bearer(apiKey)).expect(429);
    await partner.guard.alerts.settle();
    const full = await usage(apiKey);
    expect(full.body.buckets.minute).toMatchObject({ limit: 5, used: 5, remaining: 0 });
    expect(full.headers['x-ratelimit-remaining-minute']).toBe('0');
    // 4/5 is 80 %; 5/5 is both 90 % (ceil 4.5) and 100 %; newest first
    const levels = full.body.alerts.map((a: { level: string; bucket: string }) => `${a.bucket}:${a.level}`);
    expect([...levels].sort()).toEqual(['minute:high_warning', 'minute:limit_reached', 'minute:warning']);
    expect(levels[2]).toBe('minute:warning');
    expect(full.body.alerts[0].window_start).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:00Z$/);
    // and a GET usage never records an alert of its own
    const alerts = await db.owner.query('select count(*)::int as n from admin.usage_alerts where subscriber_id = $1', [
      subscriberId,
    ]);
    expect(alerts.rows[0].n).toBe(3);
  });

  test('an unknown parameter is a 400 naming it; no key is a 401', async () => {
    const { apiKey } = await issueKey(db.owner);
    const res = await request(partner.app).get(`${USAGE}?bucket=minute`).set(bearer(apiKey)).expect(400);
    expect(res.body.error).toMatch(/unknown parameter "bucket"; usage accepts no query parameters/);
    await request(partner.app).get(USAGE).expect(401);
    await request(partner.app).get(USAGE).set(bearer('pbk_not-a-real-key')).expect(401);
  });
});

describe('api.usage', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  test('the last 20 alerts of the subscriber, newest first, UTC ISO 8601; other subscribers not shown', async () => {
    const { subscriberId, keyId } = await issueKey(db.owner);
    const other = await issueKey(db.owner);
    await db.owner.query(
      `insert into admin.usage_alerts (api_key_id, subscriber_id, bucket, window_start, level, used, "limit", created_at)
       select $1, $2, 'minute', timestamptz '2026-01-01T00:00:00Z' + i * interval '1 minute', 'warning', 8, 10,
              timestamptz '2026-01-01T00:00:30Z' + i * interval '1 minute'
         from generate_series(0, 24) i`,
      [keyId, subscriberId],
    );
    await db.owner.query(
      `insert into admin.usage_alerts (api_key_id, subscriber_id, bucket, window_start, level, used, "limit", created_at)
       values ($1, $2, 'day', '2026-02-01T00:00:00Z', 'limit_reached', 10, 10, '2026-02-01T05:00:00Z')`,
      [other.keyId, other.subscriberId],
    );
    const { rows } = await db.owner.query<{ body: { alerts: Record<string, string>[]; buckets: unknown } }>(
      `select api.usage($1, 'standard', '{"minute": {"limit": 1}}') as body`,
      [subscriberId],
    );
    const body = rows[0]!.body;
    expect(body.buckets).toEqual({ minute: { limit: 1 } });
    expect(body.alerts).toHaveLength(20);
    expect(body.alerts[0]).toEqual({
      level: 'warning',
      bucket: 'minute',
      window_start: '2026-01-01T00:24:00Z',
      created_at: '2026-01-01T00:24:30Z',
    });
    expect(body.alerts[19]!.window_start).toBe('2026-01-01T00:05:00Z');
    const none = await db.owner.query(`select api.usage($1, 'standard', '{}')::text as body`, [
      '00000000-0000-0000-0000-000000000000',
    ]);
    expect(JSON.parse(none.rows[0].body).alerts).toEqual([]);
  });
});
