/**
 * The limiter's Redis traffic, with this test's own redis-server:
 * one round trip per request (INFO commandstats), refund(), usage that
 * survives an instance that never flushed (a frozen Redis: redis-frozen.test.ts).
 */
import express from 'express';
import request from 'supertest';
import pino from 'pino';
import type { RedisBreaker } from '../../server/ratelimit/breaker';
import { evaluateShared, LocalBuckets, usageKey, windowsAt } from '../../server/ratelimit/buckets';
import type { RedisClient } from '../../server/redis';
import { SharedUsage } from '../../server/usage/shared';
import type { TestDatabase } from '../support/db';
import type { Listening } from '../support/http';
import { startOwnRedisPartner, type OwnRedisPartner } from '../support/own-redis';
import {
  awaitRoomInMinute,
  bearer,
  createPlan,
  credentialsSettled,
  issueKey,
  startPartner,
  type PartnerInstance,
} from '../support/partner';
import { commandCalls, type OwnRedisServer } from '../support/redis-server';

const TEST = '/api/v1/partner/test_endpoint';
/** What the Lua script itself calls (counted by commandstats too). */
const SCRIPT_COMMANDS = ['get', 'incr', 'decr', 'pexpireat', 'hincrby', 'hset', 'hget'];

describe('the limiter in Redis (own redis-server)', () => {
  let setup: OwnRedisPartner | undefined;
  let db: TestDatabase;
  let redisServer: OwnRedisServer;
  let client: RedisClient; // the instances' client
  let probe: RedisClient; // the test's own observations
  let partner: PartnerInstance;
  let server: Listening;

  beforeAll(async () => {
    setup = await startOwnRedisPartner('rs:');
    ({ db, redisServer, client, probe, partner, server } = setup);
  });
  afterAll(async () => {
    await setup?.stop();
  });

  test('one Redis command per request for the three buckets and usage (INFO commandstats); after the first 429, none', async () => {
    await awaitRoomInMinute(10_000);
    const plan = await createPlan(db.owner, 30, 1000, 100_000); // three limited buckets
    const { apiKey } = await issueKey(db.owner, { plan });
    // A late notification of the new key would empty the identity cache mid-loop: the next request
    // would then ask the failed-auth limit (one more EVALSHA) before looking the key up again.
    await credentialsSettled(db, partner);
    await server.get(TEST, bearer(apiKey)); // loads the script (EVAL once on this connection)
    await partner.guard.sharedUsage!.flush();
    await probe.config('RESETSTAT');
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await server.get(TEST, bearer(apiKey))).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(29);
    expect(statuses.filter((s) => s === 429)).toHaveLength(11);
    // commandstats also counts the commands a script calls; the only command a client sent is EVALSHA:
    // 29 served, the first 429; the 10 after it are refused in process (limiters.ts Refusal).
    const { evalsha, ...insideScript } = await commandCalls(probe);
    expect(evalsha).toBe(30);
    expect(Object.keys(insideScript).filter((c) => !SCRIPT_COMMANDS.includes(c))).toEqual([]);
    expect(insideScript.incr).toBe(29 * 3); // the 29 served requests, three buckets each; 429s increment nothing
    // The minute counter holds the 30 served requests (429s counted nowhere); the day and month too.
    const keys = (await probe.keys('rs:*')).sort();
    const counters = Object.fromEntries(
      await Promise.all(keys.filter((k) => !k.includes(':u:')).map(async (k) => [k.split(':')[2], await probe.get(k)])),
    );
    expect(counters).toEqual({ m: '30', d: '30', M: '30' });
  });

  test('refund() un-counts the request in every bucket and in usage (as a 304 does)', async () => {
    await awaitRoomInMinute(5000);
    const plan = await createPlan(db.owner, 10, 100, null);
    const { apiKey, keyId } = await issueKey(db.owner, { plan });
    const refunds: unknown[] = []; // each request's res.locals.rateLimit.refund
    const app = express();
    app.use(
      '/api/v1/partner',
      ...partner.guard.handlers,
      express.Router().get('/test_endpoint', async (_req, res) => {
        refunds.push(res.locals.rateLimit.refund);
        await res.locals.rateLimit.refund(res);
        await res.locals.rateLimit.refund(res); // idempotent
        res.status(304).end();
      }),
    );
    for (let i = 0; i < 3; i++) expect((await server.get(TEST, bearer(apiKey))).status).toBe(200);
    for (let i = 0; i < 5; i++) {
      const notModified = await request(app).get(TEST).set(bearer(apiKey)).expect(304);
      expect(notModified.headers['x-ratelimit-remaining-minute']).toBe('7'); // the 304 shows the counts without it
    }
    // one function for every request, given the answer: no closure per request holds it (limiters.ts refundAnswer)
    expect(refunds).toHaveLength(5);
    expect(new Set(refunds).size).toBe(1);
    const res = await server.get(TEST, bearer(apiKey));
    expect(res.headers['x-ratelimit-remaining-minute']).toBe('6'); // 4 counted: the 304s were given back
    expect(res.headers['x-ratelimit-remaining-day']).toBe('96');
    // real time: usage days and rate-limit windows follow the server's real clock, not TEST_CLOCK
    const usage = await probe.hgetall(`rs:{${keyId}}:u:${new Date().toISOString().slice(0, 10)}`);
    expect(Number(usage.test_endpoint)).toBe(4);
  });

  test("a refund gives back its weight (a GraphQL query's points), in Redis and in process, never below zero", async () => {
    await awaitRoomInMinute(5000);
    const limits = { minute: 100, day: 1000, month: null };
    const w = windowsAt(Date.now());
    const inRedis = (op: 'hit' | 'refund', weight: number) =>
      evaluateShared(client, 'wt:', 'k1', limits, w, 'graphql', op, weight);
    const usage = () => probe.hget(usageKey('wt:', 'k1', w.day), 'graphql');
    expect((await inRedis('hit', 5)).used).toEqual({ minute: 5, day: 5, month: 0 });
    expect((await inRedis('refund', 3)).used).toEqual({ minute: 2, day: 2, month: 0 });
    expect(await usage()).toBe('2');
    expect((await inRedis('refund', 5)).used).toEqual({ minute: 0, day: 0, month: 0 });
    expect(await usage()).toBe('0');

    const local = new LocalBuckets();
    try {
      expect(local.evaluate('k1', limits, w, 'hit', 5).used).toEqual({ minute: 5, day: 5, month: 0 });
      expect(local.evaluate('k1', limits, w, 'refund', 3).used).toEqual({ minute: 2, day: 2, month: 0 });
      expect(local.evaluate('k1', limits, w, 'refund', 5).used).toEqual({ minute: 0, day: 0, month: 0 });
    } finally {
      local.shutdown();
    }
  });

  test("a 304's refund does not hold the answer: sent while Redis is frozen, the refund lands behind it", async () => {
    await awaitRoomInMinute(5000);
    const plan = await createPlan(db.owner, 10, 100, null);
    const { apiKey } = await issueKey(db.owner, { plan });
    const app = express();
    app.use(
      '/api/v1/partner',
      ...partner.guard.handlers,
      express.Router().get('/test_endpoint', async (_req, res) => {
        redisServer.freeze(); // counted already; Redis now answers nothing
        await res.locals.rateLimit.refund(res);
        res.status(304).end();
      }),
    );
    expect((await server.get(TEST, bearer(apiKey))).status).toBe(200);
    const started = Date.now();
    const notModified = await request(app).get(TEST).set(bearer(apiKey)).expect(304);
    const took = Date.now() - started;
    redisServer.freeze(false);
    expect(took).toBeLessThan(1000); // the guard's budget here is 2,000 ms: the refund was not waited for
    expect(notModified.headers['x-ratelimit-remaining-minute']).toBe('9'); // the counts without it
    expect(notModified.headers['x-ratelimit-remaining-day']).toBe('99');
    const res = await server.get(TEST, bearer(apiKey)); // counted after the refund (same connection, in order)
    expect(res.headers['x-ratelimit-remaining-minute']).toBe('8');
    expect(res.headers['x-ratelimit-remaining-day']).toBe('98');
  });

  test('usage counted by an instance that never flushed (killed) reaches PostgreSQL through another instance, once', async () => {
    const { apiKey, keyId } = await issueKey(db.owner);
    // A second instance serves 7 requests and is then abandoned without close() (no flush: like SIGKILL).
    const victim = await startPartner(db, { redis: client, redisPrefix: 'rs:' });
    // Its own start-up sweep runs in the background; on a loaded machine it could otherwise write the
    // first request's count itself.
    await victim.guard.sharedUsage!.started;
    for (let i = 0; i < 7; i++) await request(victim.app).get(TEST).set(bearer(apiKey)).expect(200);
    await request(victim.app).get('/api/v1/partner/bars/999999999').set(bearer(apiKey)).expect(404);
    const count = async () =>
      (
        await db.owner.query<{ endpoint: string; requests: number }>(
          'select endpoint, requests::int from admin.daily_usage where api_key_id = $1 order by endpoint',
          [keyId],
        )
      ).rows;
    expect(await count()).toEqual([]);
    // Any instance's sweep (at start, then every minute) writes what sits in Redis.
    const other = await startPartner(db, { redis: client, redisPrefix: 'rs:' });
    await other.guard.sharedUsage!.started;
    expect(await count()).toEqual([
      { endpoint: 'bars/:id', requests: 1 },
      { endpoint: 'test_endpoint', requests: 7 },
    ]);
    // Flushing again, from any instance, changes nothing (idempotent).
    await other.guard.sharedUsage!.sweep(true);
    await victim.guard.sharedUsage!.flush();
    expect(await count()).toEqual([
      { endpoint: 'bars/:id', requests: 1 },
      { endpoint: 'test_endpoint', requests: 7 },
    ]);
    await Promise.all([victim.close(), other.close()]);
  });

  test('an instance whose start-up sweep fails retries it every second until it succeeds', async () => {
    const { apiKey, keyId } = await issueKey(db.owner);
    const victim = await startPartner(db, { redis: client, redisPrefix: 'rs-retry:' });
    await victim.guard.sharedUsage!.started;
    for (let i = 0; i < 3; i++) await request(victim.app).get(TEST).set(bearer(apiKey)).expect(200);
    const count = async () =>
      (
        await db.owner.query<{ endpoint: string; requests: number }>(
          'select endpoint, requests::int from admin.daily_usage where api_key_id = $1 order by endpoint',
          [keyId],
        )
      ).rows;

    // A new instance starts while its Redis circuit is open.
    const failures: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void failures.push(JSON.parse(line).msg) });
    const breaker = { available: false };
    const restarted = new SharedUsage({
      redis: client,
      breaker: breaker as unknown as RedisBreaker,
      pool: db.partnerPool(),
      prefix: 'rs-retry:', // its own: the other instances' periodic sweeps would write these counts
      logger,
      flushEveryMs: 60_000,
    });
    try {
      while (failures.length < 2) await new Promise((r) => setTimeout(r, 100)); // tried, then tried again
      expect(failures).toEqual(['shared usage sweep failed; will retry', 'shared usage sweep failed; will retry']);
      expect(await count()).toEqual([]);
      breaker.available = true; // the circuit closes: the next retry writes what the victim left
      await restarted.started;
      expect(await count()).toEqual([{ endpoint: 'test_endpoint', requests: 3 }]);
    } finally {
      await Promise.all([restarted.close(), victim.close()]);
    }
  });

  test('closing an instance whose start-up sweep keeps failing settles `started`', async () => {
    const failures: string[] = [];
    const failing = new SharedUsage({
      redis: client,
      breaker: { available: false } as unknown as RedisBreaker,
      pool: db.partnerPool(),
      prefix: 'rs-retry:',
      logger: pino({ level: 'warn' }, { write: (line: string) => void failures.push(JSON.parse(line).msg) }),
      flushEveryMs: 60_000,
    });
    while (!failures.length) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 50)); // the retry is now waiting for its second
    await failing.close();
    await failing.started; // left pending, it would hang until the test's timeout
  });
});
