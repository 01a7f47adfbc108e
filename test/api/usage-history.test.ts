/**
 * GET usage/history (decisions.md v1.3 "Usage history for partners"): answered
 * requests per hour/day, key and endpoint by status class, equal to what the
 * client saw — in process, through Redis with two instances sharing Redis and
 * PostgreSQL (one of them restarted in the middle) — not counting the usage
 * endpoints themselves; every 400 path; the SQL defaults with a pinned clock.
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
  startPartner,
  silentLogger,
  type PartnerInstance,
} from '../support/partner';
import { startOwnRedis, type OwnRedis } from '../support/own-redis';
import { OwnRedisServer } from '../support/redis-server';

const P = '/api/v1/partner';
const HISTORY = `${P}/usage/history`;

type Classes = { '2xx': number; '3xx': number; '4xx': number; '5xx': number; rate_limited: number; requests: number };
const empty = (): Classes => ({ '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0, rate_limited: 0, requests: 0 });

function count(seen: Map<string, Classes>, endpoint: string, status: number): void {
  let c = seen.get(endpoint);
  if (!c) seen.set(endpoint, (c = empty()));
  c.requests++;
  if (status === 429) c.rate_limited++;
  c[`${Math.floor(status / 100)}xx` as '2xx' | '3xx' | '4xx' | '5xx']++;
}

interface Bucket {
  start: string;
  key_prefix: string;
  endpoint: string;
  requests: number;
  status: Record<'2xx' | '3xx' | '4xx' | '5xx', number>;
  rate_limited: number;
}

/** The history summed per endpoint (over hours), as the client-side tally. */
function byEndpoint(series: Bucket[]): Map<string, Classes> {
  const out = new Map<string, Classes>();
  for (const b of series) {
    let c = out.get(b.endpoint);
    if (!c) out.set(b.endpoint, (c = empty()));
    for (const k of ['2xx', '3xx', '4xx', '5xx'] as const) c[k] += b.status[k];
    c.rate_limited += b.rate_limited;
    c.requests += b.requests;
  }
  return out;
}

const sorted = (m: Map<string, Classes>) => Object.fromEntries([...m.entries()].sort(([a], [b]) => a.localeCompare(b)));

async function flush(...instances: PartnerInstance[]): Promise<void> {
  for (const p of instances) {
    await p.guard.history.flush();
    await p.guard.usage.flush();
    await p.guard.sharedUsage?.flush();
  }
}

/** A range around now that any bucket of this test falls in (the assertion does not depend on the hour). */
const around = () => {
  // real time: hourly usage is counted in the real UTC hour of each answer
  const now = Date.now();
  return `start=${new Date(now - 3600_000).toISOString()}&end=${new Date(now + 3600_000).toISOString()}`;
};

async function history(app: PartnerInstance['app'], apiKey: string, query: string) {
  const res = await request(app).get(`${HISTORY}?${query}`).set(bearer(apiKey));
  validateResponse('GET', `${HISTORY}?${query}`, {
    status: res.status,
    headers: res.headers as Record<string, string>,
    text: res.text,
  });
  return res;
}

/** Requests of every class from one key (a minute limit of 6 makes 429s); returns what the client saw. */
async function traffic(apps: PartnerInstance['app'][], apiKey: string, seen: Map<string, Classes>, rounds = 1) {
  const calls: [string, string][] = [
    ['test_endpoint', `${P}/test_endpoint`],
    ['bars', `${P}/bars?limit=abc`], // 400
    ['bars/:id', `${P}/bars/00000000-0000-0000-0000-000000000000`], // 404
    ['categories', `${P}/categories`],
    ['(none)', `${P}/no_such_endpoint`], // 404, no endpoint
  ];
  let i = 0;
  for (let r = 0; r < rounds; r++) {
    for (const [endpoint, url] of calls) {
      const app = apps[i++ % apps.length]!;
      const res = await request(app).get(url).set(bearer(apiKey));
      count(seen, endpoint, res.status);
      // a 304: the same request again with the ETag it got
      if (res.status === 200 && res.headers.etag) {
        const again = await request(apps[i++ % apps.length]!)
          .get(url)
          .set(bearer(apiKey))
          .set('If-None-Match', res.headers.etag);
        count(seen, endpoint, again.status);
      }
    }
  }
}

describe.each(['in-process counters', 'Redis (own redis-server)'])('usage history (%s)', (mode) => {
  let db: TestDatabase;
  let redisServer: OwnRedisServer | undefined;
  let client: RedisClient | undefined;
  let a: PartnerInstance;

  beforeAll(async () => {
    db = await createTestDatabase();
    if (mode.startsWith('Redis')) {
      redisServer = await OwnRedisServer.start();
      client = createRedisClient(redisServer.url, silentLogger);
      await redisReadyPromise(client);
    }
    a = await startPartner(db, { redis: client, redisPrefix: 'hist:' });
  });
  afterAll(async () => {
    await a?.close();
    client?.disconnect();
    await redisServer?.stop();
    await db?.drop();
  });

  test('equals what the client saw per endpoint and status class (2xx, 3xx, 4xx, 5xx, 429s apart); usage endpoints not counted', async () => {
    await awaitRoomInMinute(20_000);
    const plan = await createPlan(db.owner, 8);
    const { apiKey, subscriberId } = await issueKey(db.owner, { plan });
    const seen = new Map<string, Classes>();
    await traffic([a.app], apiKey, seen, 2); // 10 counted (the 304s are refunded): the minute's last two are 429s
    expect([...seen.values()].reduce((n, c) => n + c.rate_limited, 0)).toBeGreaterThanOrEqual(2);
    expect(seen.get('test_endpoint')!['3xx']).toBe(2);
    // the usage endpoints themselves: answered, never counted
    await request(a.app).get(`${P}/usage`).set(bearer(apiKey)).expect(200);
    await request(a.app).get(`${P}/usage/requests`).set(bearer(apiKey)).expect(200);
    await request(a.app).get(`${HISTORY}?granularity=week`).set(bearer(apiKey)).expect(400);
    await flush(a);

    const res = await history(a.app, apiKey, around());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ subscriber_id: subscriberId, granularity: 'hour' });
    const series = res.body.series as Bucket[];
    expect(sorted(byEndpoint(series))).toEqual(sorted(seen));
    for (const b of series) {
      expect(b.requests).toBe(b.status['2xx'] + b.status['3xx'] + b.status['4xx'] + b.status['5xx']);
      expect(b.key_prefix).toBe(apiKey.slice(0, b.key_prefix.length));
      expect(b.start).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:00:00Z$/);
    }
    // ordered by start, then key prefix, then endpoint
    const order = series.map((b) => `${b.start}|${b.key_prefix}|${b.endpoint}`);
    expect(order).toEqual([...order].sort());

    // the same by day, and one endpoint only
    const days = await history(a.app, apiKey, `granularity=day&${around()}`);
    expect(sorted(byEndpoint(days.body.series))).toEqual(sorted(seen));
    expect(days.body.series[0].start).toMatch(/T00:00:00Z$/);
    const bars = await history(a.app, apiKey, `endpoint=bars&${around()}`);
    expect(sorted(byEndpoint(bars.body.series))).toEqual({ bars: seen.get('bars') });

    // flushing again changes nothing (idempotent)
    await flush(a);
    const again = await history(a.app, apiKey, around());
    expect(again.body.series).toEqual(series);
  });

  test("another subscriber's history is not shown", async () => {
    const mine = await issueKey(db.owner);
    const other = await issueKey(db.owner);
    await request(a.app).get(`${P}/test_endpoint`).set(bearer(other.apiKey)).expect(200);
    await flush(a);
    const res = await history(a.app, mine.apiKey, around());
    expect(res.body.series).toEqual([]);
    const theirs = await history(a.app, other.apiKey, around());
    expect(theirs.body.series).toHaveLength(1);
  });
});

describe('usage history: three instances sharing Redis and PostgreSQL, one restarted in the middle', () => {
  let setup: OwnRedis | undefined;
  let db: TestDatabase;
  let client: RedisClient;
  const instances: PartnerInstance[] = [];

  beforeAll(async () => {
    setup = await startOwnRedis();
    ({ db, client } = setup);
  });
  afterAll(async () => {
    for (const p of instances) await p.close().catch(() => undefined);
    await setup?.stop();
  });

  test('the history equals the answers the client saw, per status class', async () => {
    await awaitRoomInMinute(25_000);
    const start = () => startPartner(db, { redis: client, redisPrefix: 'shared:' });
    const a = await start();
    let b = await start();
    const c = await start();
    instances.push(a, b, c);
    const plan = await createPlan(db.owner, 20);
    const key = await issueKey(db.owner, { plan });
    const second = await issueKey(db.owner, { subscriberId: key.subscriberId });
    const seen = new Map<string, Classes>();
    await traffic([a.app, b.app, c.app], key.apiKey, seen, 2);
    await traffic([b.app, c.app, a.app], second.apiKey, seen, 1);
    // b restarts (clean shutdown: its pending counts are pushed and flushed), a new b goes on
    await b.close();
    b = await start();
    instances.push(b);
    await traffic([a.app, b.app, c.app], key.apiKey, seen, 3); // past the minute limit of 20: 429s
    expect([...seen.values()].reduce((n, k) => n + k.rate_limited, 0)).toBeGreaterThan(0);
    await flush(a, b, c);
    const res = await history(a.app, key.apiKey, around());
    expect(sorted(byEndpoint(res.body.series))).toEqual(sorted(seen));
    // the hourly fields of the Redis hash never become daily-usage endpoints
    const daily = await db.owner.query(`select endpoint from admin.daily_usage where subscriber_id = $1`, [
      key.subscriberId,
    ]);
    expect(daily.rows.length).toBeGreaterThan(0);
    expect(daily.rows.filter((r) => r.endpoint.startsWith('@'))).toEqual([]);
    // two keys: series per key prefix
    expect(new Set(res.body.series.map((s: Bucket) => s.key_prefix)).size).toBe(2);
    // and in PostgreSQL, per class, the same totals
    const { rows } = await db.owner.query<Record<string, string>>(
      `select sum(status_2xx) s2, sum(status_3xx) s3, sum(status_4xx) s4, sum(status_5xx) s5, sum(rate_limited) rl
         from admin.hourly_usage where subscriber_id = $1`,
      [key.subscriberId],
    );
    const total = [...seen.values()].reduce((t, c) => {
      for (const k of Object.keys(t) as (keyof Classes)[]) t[k] += c[k];
      return t;
    }, empty());
    expect(rows[0]).toEqual({
      s2: String(total['2xx']),
      s3: String(total['3xx']),
      s4: String(total['4xx']),
      s5: String(total['5xx']),
      rl: String(total.rate_limited),
    });
  });
});

describe('usage history: bad input', () => {
  let db: TestDatabase;
  let a: PartnerInstance;
  let apiKey: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    a = await startPartner(db);
    ({ apiKey } = await issueKey(db.owner));
  });
  afterAll(async () => {
    await a?.close();
    await db?.drop();
  });

  test.each([
    ['granularity=week', /granularity must be one of hour, day/],
    ['granularity=hour&granularity=day', /granularity/],
    ['start=yesterday', /start must be an ISO 8601 date-time/],
    ['start=2026-11-01', /start must be an ISO 8601 date-time/],
    ['end=2026-13-01T00:00:00Z', /end must be an ISO 8601 date-time/],
    ['start=2026-11-10T00:00:00Z&end=2026-11-09T00:00:00Z', /^end must not be before start/],
    ['start=2026-11-01T00:00:00Z&end=2026-11-08T00:00:01Z', /^start: a range of hours is at most 7 days/],
    ['granularity=day&start=2025-01-01T00:00:00Z&end=2026-11-08T00:00:00Z', /^start: a range of days is at most 400/],
    ['endpoint=nope', /endpoint must be one of test_endpoint, bars, bars\/:id/],
    ['endpoint=', /endpoint must be one of/],
    ['key=abc', /unknown parameter "key"; usage\/history accepts granularity, start, end, endpoint/],
  ])('%s: 400 naming the parameter', async (query, message) => {
    const res = await request(a.app).get(`${HISTORY}?${query}`).set(bearer(apiKey)).expect(400);
    expect(res.body.error).toMatch(message);
    expect(res.body.request_id).toEqual(expect.any(String));
  });

  test('usage/history and usage/requests count against no bucket: answered when the minute is used up', async () => {
    await awaitRoomInMinute(10_000);
    const { apiKey: limited } = await issueKey(db.owner, { plan: await createPlan(db.owner, 1) });
    await request(a.app).get(`${P}/test_endpoint`).set(bearer(limited)).expect(200);
    await request(a.app).get(`${P}/test_endpoint`).set(bearer(limited)).expect(429);
    for (const url of [HISTORY, `${P}/usage/requests`, HISTORY]) {
      const res = await request(a.app).get(url).set(bearer(limited)).expect(200);
      expect(res.headers['x-ratelimit-remaining-minute']).toBe('0');
      expect(res.headers['x-ratelimit-limit-minute']).toBe('1');
    }
  });

  test('exactly 7 days of hours and 400 days of days are allowed; no key is a 401', async () => {
    await request(a.app)
      .get(`${HISTORY}?start=2026-11-01T00:00:00Z&end=2026-11-08T00:00:00Z`)
      .set(bearer(apiKey))
      .expect(200);
    await request(a.app)
      .get(`${HISTORY}?granularity=day&start=2025-10-01T00:00:00Z&end=2026-11-05T00:00:00Z`)
      .set(bearer(apiKey))
      .expect(200);
    await request(a.app).get(HISTORY).expect(401);
  });
});

describe('api.usage_history (pinned clock)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  test('defaults: the last 24 hours (from the hour) or 30 days (from the day) before now; buckets and sums', async () => {
    const k = await issueKey(db.owner);
    const rows = [
      { hour: '2026-11-24T09:00:00Z', endpoint: 'bars', status_2xx: 5, status_4xx: 2, rate_limited: 1 },
      { hour: '2026-11-24T10:00:00Z', endpoint: 'bars', status_2xx: 1, status_5xx: 1 },
      { hour: '2026-11-25T09:00:00Z', endpoint: 'search', status_3xx: 4 },
      { hour: '2026-10-20T09:00:00Z', endpoint: 'search', status_2xx: 7 },
    ].map((r) => ({ key_id: k.keyId, ...r }));
    await db.owner.query('select api.record_hourly_usage($1)', [JSON.stringify(rows)]);
    const call = async (granularity: string | null) => {
      const { rows: out } = await db.owner.query(
        `select api.usage_history($1, $2, null, null, null, p_now => '2026-11-25T09:30:00Z') as body`,
        [k.subscriberId, granularity],
      );
      return out[0].body;
    };
    const hour = await call(null);
    expect(hour.start).toBe('2026-11-24T09:00:00Z');
    expect(hour.end).toBe('2026-11-25T09:30:00Z');
    expect(hour.series.map((s: Bucket) => [s.start, s.endpoint, s.requests])).toEqual([
      ['2026-11-24T09:00:00Z', 'bars', 7],
      ['2026-11-24T10:00:00Z', 'bars', 2],
      ['2026-11-25T09:00:00Z', 'search', 4],
    ]);
    expect(hour.series[0]).toMatchObject({ status: { '2xx': 5, '3xx': 0, '4xx': 2, '5xx': 0 }, rate_limited: 1 });
    const day = await call('day');
    expect(day.start).toBe('2026-10-26T00:00:00Z');
    expect(day.series.map((s: Bucket) => [s.start, s.endpoint, s.requests])).toEqual([
      ['2026-11-24T00:00:00Z', 'bars', 9],
      ['2026-11-25T00:00:00Z', 'search', 4],
    ]);
  });
});
