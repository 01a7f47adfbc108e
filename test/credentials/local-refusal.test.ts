/**
 * A 429 flood costs no Redis and no PostgreSQL (ratelimit/limiters.ts Refusal): once a key is
 * refused by a full bucket, the process refuses it itself until that window's end, with the very
 * answer the script would give (status, body, X-RateLimit-*, RateLimit*, Retry-After), the 429s
 * still counted as rate-limited in usage; other keys are unaffected; the next window admits it.
 * With this test's own redis-server (INFO commandstats counts every command).
 */
import type { IncomingHttpHeaders } from 'node:http';
import express from 'express';
import request from 'supertest';
import { rateLimitLocalRefusals } from '../../server/metrics';
import { PartnerRateLimits } from '../../server/ratelimit/limiters';
import type { RedisClient } from '../../server/redis';
import type { TestDatabase } from '../support/db';
import type { Listening } from '../support/http';
import { startOwnRedisPartner, type OwnRedisPartner } from '../support/own-redis';
import {
  awaitRoomInMinute,
  bearer,
  createPlan,
  credentialsSettled,
  issueKey,
  silentLogger,
  type PartnerInstance,
} from '../support/partner';
import { commandCalls } from '../support/redis-server';

const TEST = '/api/v1/partner/test_endpoint';

/** The JSON error without its request id. */
const errorOf = (body: string) => ({ ...(JSON.parse(body) as object), request_id: '-' });

async function localRefusals(bucket: string): Promise<number> {
  return (await rateLimitLocalRefusals.get()).values.find((v) => v.labels.bucket === bucket)?.value ?? 0;
}

async function totalCalls(client: RedisClient): Promise<number> {
  return Object.values(await commandCalls(client)).reduce((a, b) => a + b, 0);
}

/** Every header of a 429 but the ones that name the request or the instant (request id, date). */
function limitHeaders(headers: IncomingHttpHeaders): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(headers).filter(([k]) =>
      /^(x-ratelimit-|ratelimit|retry-after|content-type|content-length)/.test(k),
    ),
  );
}

describe('a refused key is refused in process until its window ends', () => {
  let setup: OwnRedisPartner | undefined;
  let db: TestDatabase;
  let probe: RedisClient;
  let partner: PartnerInstance;
  let server: Listening;

  beforeAll(async () => {
    setup = await startOwnRedisPartner('lr:');
    ({ db, probe, partner, server } = setup);
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await setup?.stop();
  });

  test('no Redis command and no PostgreSQL query after the first 429; same answer; usage exact; other keys served', async () => {
    await awaitRoomInMinute(15_000);
    const plan = await createPlan(db.owner, 5, 1000, null);
    const flooder = await issueKey(db.owner, { plan });
    const other = await issueKey(db.owner, { plan: await createPlan(db.owner, 1000, 100_000, null) });
    await credentialsSettled(db, partner); // no late notification empties the identity cache below
    for (let i = 0; i < 5; i++) expect((await server.get(TEST, bearer(flooder.apiKey))).status).toBe(200);
    await server.get(TEST, bearer(other.apiKey)); // identity cached, script loaded
    const first = await server.get(TEST, bearer(flooder.apiKey)); // refused by Redis
    expect(first.status).toBe(429);
    expect(first.headers['x-ratelimit-remaining-minute']).toBe('0');
    await partner.guard.history.push();

    const queries = jest.spyOn(partner.pool, 'query');
    const connects = jest.spyOn(partner.pool, 'connect');
    await probe.config('RESETSTAT');
    const refused = [];
    for (let i = 0; i < 20; i++) refused.push(await server.get(TEST, bearer(flooder.apiKey)));
    // No command for the requests: only the usage push of their 429s, one pipeline per 100 ms batch
    // (HINCRBY '#429', the hourly 429 field and '#v', PEXPIREAT), not one per request.
    const { pexpireat: pushes = 0, hincrby = 0, ...others } = await commandCalls(probe);
    expect(others).toEqual({});
    expect(hincrby).toBeLessThanOrEqual(3 * pushes);
    expect(pushes).toBeLessThan(20);
    expect(queries).not.toHaveBeenCalled();
    expect(connects).not.toHaveBeenCalled();
    for (const res of refused) {
      expect(res.status).toBe(429);
      expect(errorOf(res.body)).toEqual(errorOf(first.body));
      expect(limitHeaders(res.headers)).toEqual({
        ...limitHeaders(first.headers),
        // seconds to the window's end: the same or less, as time passed
        'retry-after': res.headers['retry-after'],
        ratelimit: res.headers.ratelimit,
      });
      expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(Number(first.headers['retry-after']));
      expect(String(res.headers.ratelimit).replace(/t=\d+/g, 't=')).toBe(
        String(first.headers.ratelimit).replace(/t=\d+/g, 't='),
      );
    }
    // another key meanwhile: counted in Redis as usual
    const served = await server.get(TEST, bearer(other.apiKey));
    expect(served.status).toBe(200);
    expect(served.headers['x-ratelimit-remaining-minute']).toBe('998');
    expect(await totalCalls(probe)).toBeGreaterThan(0);
    queries.mockRestore();
    connects.mockRestore();

    // usage: 5 served, 21 rate-limited (1 by the script, 20 in process), in Redis and then in PostgreSQL
    await partner.guard.history.flush();
    await partner.guard.usage.flush();
    await partner.guard.sharedUsage!.flush();
    const day = new Date().toISOString().slice(0, 10);
    const hash = await probe.hgetall(`lr:{${flooder.keyId}}:u:${day}`);
    expect(Number(hash['#429'])).toBe(21);
    expect(Number(hash.test_endpoint)).toBe(5);
    const { rows } = await db.owner.query<{ requests: number; rate_limited: number }>(
      `select sum(requests)::int as requests, sum(rate_limited)::int as rate_limited
         from admin.daily_usage where api_key_id = $1`,
      [flooder.keyId],
    );
    expect(rows[0]).toEqual({ requests: 5, rate_limited: 21 });
    const hourly = Object.entries(hash)
      .filter(([k]) => k.startsWith('@') && k.includes('|R|'))
      .reduce((n, [, v]) => n + Number(v), 0);
    expect(hourly).toBe(21); // the usage history's 429 class

    // the next minute admits the key again (Redis asked again)
    const realNow = Date.now.bind(Date);
    const spy = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 60_000);
    try {
      await probe.config('RESETSTAT');
      const next = await server.get(TEST, bearer(flooder.apiKey));
      expect(next.status).toBe(200);
      expect(next.headers['x-ratelimit-remaining-minute']).toBe('4');
      expect(await totalCalls(probe)).toBeGreaterThan(0);
    } finally {
      spy.mockRestore();
    }
  });

  test('a key refused by its day bucket stays refused in the next minute, with the new minute shown empty', async () => {
    await awaitRoomInMinute(10_000);
    const plan = await createPlan(db.owner, 100, 3, null);
    const { apiKey } = await issueKey(db.owner, { plan });
    await credentialsSettled(db, partner);
    for (let i = 0; i < 3; i++) expect((await server.get(TEST, bearer(apiKey))).status).toBe(200);
    const first = await server.get(TEST, bearer(apiKey));
    expect(first.status).toBe(429);
    expect(first.headers['x-ratelimit-remaining-minute']).toBe('97');
    const realNow = Date.now.bind(Date);
    const spy = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 60_000);
    try {
      await probe.config('RESETSTAT');
      const later = await server.get(TEST, bearer(apiKey));
      // (the identity cache's entry is stale a minute later: the key is looked up again, not counted)
      expect((await commandCalls(probe)).incr).toBeUndefined();
      expect(await localRefusals('day')).toBe(1);
      expect(later.status).toBe(429);
      expect(errorOf(later.body)).toEqual(errorOf(first.body));
      expect(later.headers['x-ratelimit-remaining-minute']).toBe('100'); // as the script shows a new minute
      expect(later.headers['x-ratelimit-remaining-day']).toBe('0');
      expect(later.headers['x-ratelimit-reset-day']).toBe(first.headers['x-ratelimit-reset-day']);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('what a refusal remembers (in-process limiter)', () => {
  const limiter = new PartnerRateLimits({ redisPrefix: 'lrw:', logger: silentLogger, endpointOf: () => 'graphql' });
  afterAll(() => limiter.close());

  test("a refusal by a query's weight alone is not remembered (a lighter one may pass); a full bucket is; weight 0 is never refused", async () => {
    await awaitRoomInMinute(3000);
    let limits = { minute: 5, day: null, month: null } as { minute: number; day: null; month: null };
    const app = express();
    app.use(
      (req, res, next) => {
        res.locals.rateLimit = { keyId: 'weighted', limits, weight: Number(req.query.w) };
        next();
      },
      ...limiter.handlers,
    );
    app.get('/q', (_req, res) => void res.json({ ok: true }));
    const send = async (w: number) => (await request(app).get(`/q?w=${w}`)).status;
    const before = await localRefusals('minute');
    expect(await send(3)).toBe(200); // 3 of 5
    expect(await send(3)).toBe(429); // 6 > 5: refused by its weight, the bucket not full
    expect(await localRefusals('minute')).toBe(before);
    expect(await send(2)).toBe(200); // 5 of 5
    expect(await send(1)).toBe(429); // full: remembered
    expect(await send(1)).toBe(429);
    expect(await localRefusals('minute')).toBe(before + 1);
    expect(await send(0)).toBe(200); // counts nothing: never refused
    limits = { minute: 6, day: null, month: null }; // a plan change forgets the refusal at once
    expect(await send(1)).toBe(200);
    expect(await localRefusals('minute')).toBe(before + 1);
  });
});
