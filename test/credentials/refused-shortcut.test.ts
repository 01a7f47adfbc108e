/**
 * The refused-key shortcut (server/http/refused-shortcut.ts) against the usual way: two apps over
 * one guard (one key, one refusal), the first with the shortcut, the second without. Every answer,
 * access-log line, request-log entry and usage count must be the same either way; and the shortcut
 * must stand aside wherever the usual way answers before the guard, or does not refuse.
 */
import { Writable } from 'node:stream';
import type { IncomingHttpHeaders } from 'node:http';
import pino from 'pino';
import { createPartnerGuard, type PartnerGuard } from '../../server/credentials/guard';
import * as apiKeys from '../../server/credentials/key';
import { createPartnerApp } from '../../server/http/app';
import { PartnerRateLimits } from '../../server/ratelimit/limiters';
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { RequestLog, type RequestLogEntry } from '../../server/usage/request-log';
import { testClock } from '../support/clock';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { listen, type Listening } from '../support/http';
import {
  awaitRoomInMinute,
  bearer,
  createPlan,
  credentialsSettled,
  issueKey,
  silentLogger,
  type IssuedKey,
} from '../support/partner';
import { OwnRedisServer } from '../support/redis-server';

const P = '/api/v1/partner';

/** An app's access-log lines, parsed. */
function capturingLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n'))
        if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

/** What may differ between two answers to the same request: the request's id, the instant. */
function comparable(headers: IncomingHttpHeaders): Record<string, unknown> {
  const { 'x-request-id': _id, date: _date, 'retry-after': _retry, ratelimit, ...rest } = headers;
  return { ...rest, ratelimit: String(ratelimit ?? '').replace(/t=\d+/g, 't=') };
}

const bodyOf = (text: string) => (text ? { ...(JSON.parse(text) as object), request_id: '-' } : text);

describe('the refused-key shortcut gives what the usual way gives (own redis-server)', () => {
  let db: TestDatabase;
  let redisServer: OwnRedisServer;
  let redis: RedisClient;
  let guard: PartnerGuard;
  const prefix = 'rks:';
  const shortcut = { log: capturingLogger(), requestLog: undefined as unknown as RequestLog, server: {} as Listening };
  const usual = { log: capturingLogger(), requestLog: undefined as unknown as RequestLog, server: {} as Listening };
  let counting: Listening; // neither: where the key is counted and first refused (by Redis)
  let key: IssuedKey;
  const answers = jest.spyOn(PartnerRateLimits.prototype, 'refusalAnswer');

  beforeAll(async () => {
    db = await createTestDatabase();
    redisServer = await OwnRedisServer.start();
    redis = createRedisClient(redisServer.url, silentLogger);
    await redisReadyPromise(redis);
    const pool = db.partnerPool();
    guard = await createPartnerGuard({
      pool,
      databaseUrl: db.url,
      logger: silentLogger,
      redis,
      redisPrefix: prefix,
      usageFlushMs: 60_000,
      redisBudgetMs: 2_000,
    });
    const appOf = (logger: pino.Logger, requestLog: RequestLog | undefined, withShortcut: boolean) =>
      createPartnerApp({
        config: { env: 'test', trustProxy: 'loopback' }, // X-Forwarded-Proto: https below gets HSTS
        logger,
        pool,
        guard: guard.handlers,
        knownRefusal: withShortcut ? guard.knownRefusal : undefined,
        requestLog,
        clock: testClock,
      });
    for (const [side, on] of [
      [shortcut, true],
      [usual, false],
    ] as const) {
      side.requestLog = new RequestLog({ pool, logger: silentLogger, flushEveryMs: 60_000 });
      side.server = await listen(appOf(side.log.logger, side.requestLog, on));
    }
    counting = await listen(appOf(silentLogger, undefined, false));
  });
  afterAll(async () => {
    answers.mockRestore();
    for (const s of [shortcut.server, usual.server, counting]) await s?.close?.();
    await guard?.close().catch(() => undefined);
    redis?.disconnect();
    await redisServer?.stop();
    await db?.drop();
  });

  test('the same 429s, log lines, request-log entries and usage either way; Redis asked by neither', async () => {
    await awaitRoomInMinute(15_000);
    key = await issueKey(db.owner, { plan: await createPlan(db.owner, 2, 1000, null) });
    await credentialsSettled(db, { guard }); // no late notification empties the identity cache below
    for (let i = 0; i < 2; i++) expect((await counting.get(`${P}/test_endpoint`, bearer(key.apiKey))).status).toBe(200);
    expect((await counting.get(`${P}/test_endpoint`, bearer(key.apiKey))).status).toBe(429); // refused by Redis
    const entries = new Map<object, RequestLogEntry[]>();
    for (const side of [shortcut, usual]) {
      const added: RequestLogEntry[] = [];
      entries.set(side, added);
      jest.spyOn(side.requestLog, 'add').mockImplementation((e) => void added.push(e));
    }
    await guard.history.push();
    const usageHash = `${prefix}{${key.keyId}}:u:${new Date().toISOString().slice(0, 10)}`;
    const rateLimitedSoFar = async () => {
      await guard.history.push();
      return Number((await redis.hget(usageHash, '#429')) ?? 0);
    };
    const before = await rateLimitedSoFar();
    const requests: [string, Record<string, string>][] = [
      [`${P}/test_endpoint`, {}],
      [`${P}/bars/12?fields=name&x=%00`, { Accept: 'application/json' }], // refused before urlHygiene, as by the guard
      [`${P}/BARS_BY_CITY/NY/New%20York%20City/`, { 'X-Request-Id': 'client-chosen.1', 'Accept-Encoding': 'gzip, br' }],
      [`${P}/export/bars`, { Accept: 'application/x-ndjson' }],
      [`${P}/test_endpoint`, { 'X-Forwarded-Proto': 'https' }], // over HTTPS (a trusted proxy): HSTS
    ];
    const scriptCallsBefore = await scriptCalls(redis);
    for (const [path, headers] of requests) {
      answers.mockClear();
      const a = await shortcut.server.get(path, { ...bearer(key.apiKey), ...headers });
      expect(answers).toHaveBeenCalledTimes(1);
      answers.mockClear();
      const b = await usual.server.get(path, { ...bearer(key.apiKey), ...headers });
      expect(answers).not.toHaveBeenCalled();
      expect(a.status).toBe(429);
      expect(comparable(a.headers)).toEqual(comparable(b.headers));
      expect(Math.abs(Number(a.headers['retry-after']) - Number(b.headers['retry-after']))).toBeLessThanOrEqual(1);
      expect(bodyOf(a.body)).toEqual(bodyOf(b.body));
      expect(JSON.parse(a.body).request_id).toBe(a.headers['x-request-id']);
      if (headers['X-Request-Id']) expect(a.headers['x-request-id']).toBe(headers['X-Request-Id']);
      expect('strict-transport-security' in a.headers).toBe(headers['X-Forwarded-Proto'] === 'https');
    }
    expect(await scriptCalls(redis)).toBe(scriptCallsBefore); // neither way asked Redis to count
    // one usage count per 429, either way
    expect((await rateLimitedSoFar()) - before).toBe(2 * requests.length);

    // access log: the same line for the same request (but its id and duration)
    const line = (l: Record<string, unknown>) => {
      const { time: _t, pid: _p, hostname: _h, requestId: _r, durationMs, ...rest } = l;
      expect(typeof durationMs).toBe('number');
      return rest;
    };
    expect(shortcut.log.lines).toHaveLength(requests.length);
    expect(shortcut.log.lines.map(line)).toEqual(usual.log.lines.map(line));
    expect(shortcut.log.lines[0]).toMatchObject({ status: 429, reason: 'Rate limit exceeded', msg: 'request' });

    // request log: the first 429 of the minute kept, the rest capped as repeats, either way
    const entry = (e: RequestLogEntry) => ({ ...e, request_id: '-', created_at: '-', duration_ms: 0 });
    expect(entries.get(shortcut)!.map(entry)).toEqual(entries.get(usual)!.map(entry));
    expect(entries.get(shortcut)).toHaveLength(1);
    expect(entries.get(shortcut)![0]).toMatchObject({ status: 429, api_key_id: key.keyId, endpoint: 'test_endpoint' });
    expect(shortcut.requestLog.capped.repeat_429).toBe(requests.length - 1);
    expect(usual.requestLog.capped.repeat_429).toBe(requests.length - 1);
  });

  test('it stands aside where the usual way answers before the guard, or does not refuse', async () => {
    answers.mockClear();
    const cases: [string, string, Record<string, string>, number][] = [
      ['HEAD', `${P}/test_endpoint`, {}, 429], // HEAD: taken, no body
      ['GET', `${P}/test_endpoint`, { Accept: 'text/html' }, 406],
      ['GET', `${P}/export/events`, { Accept: 'application/json' }, 406],
      ['GET', `${P}/usage`, {}, 200], // a free endpoint: served to a refused key
      ['GET', `${P}/nowhere`, {}, 429], // no declared route: the guard refuses it the usual way
      ['GET', `${P}/openapi.json`, {}, 200],
      ['GET', `${P}/test_endpoint`, { 'X-API-Key': 'x' }, 429], // Authorization wins; X-API-Key clean
    ];
    for (const [method, path, headers, status] of cases) {
      const a = await shortcut.server.request(method, path, { ...bearer(key.apiKey), ...headers });
      const b = await usual.server.request(method, path, { ...bearer(key.apiKey), ...headers });
      expect([method, path, a.status]).toEqual([method, path, status]);
      expect([method, path, b.status]).toEqual([method, path, status]);
      if (status !== 200) expect(bodyOf(a.body)).toEqual(bodyOf(b.body));
      if (status !== 200) expect([method, path, comparable(a.headers)]).toEqual([method, path, comparable(b.headers)]);
    }
    expect(answers).toHaveBeenCalledTimes(2); // the HEAD and the X-API-Key case only
    // a POST is a 405 before the guard
    const post = await shortcut.server.request('POST', `${P}/test_endpoint`, bearer(key.apiKey));
    expect(post.status).toBe(405);
    // another key, not refused, is served: its key hashed once (by the shortcut, not again)
    const other = await issueKey(db.owner, { plan: 'standard' });
    const hashes = jest.spyOn(apiKeys, 'hashApiKey');
    try {
      expect((await shortcut.server.get(`${P}/test_endpoint`, bearer(other.apiKey))).status).toBe(200);
      expect(hashes.mock.calls).toEqual([[other.apiKey]]);
    } finally {
      hashes.mockRestore();
    }
    expect(answers).toHaveBeenCalledTimes(2);
  });

  test("a refused answer's refund is the limiter's one function (no closure per request holds the answer), and gives nothing back", async () => {
    // A closure per request holding `res`, put on a context V8 had allocated in the old generation,
    // kept every refused answer alive until the next full collection (limiters.ts refundAnswer).
    // the last test's new key emptied the identity cache: the first request may take the usual way
    answers.mockClear();
    for (let i = 0; i < 3; i++)
      expect((await shortcut.server.get(`${P}/test_endpoint`, bearer(key.apiKey))).status).toBe(429);
    expect(answers.mock.calls.length).toBeGreaterThanOrEqual(2);
    const [first, second] = answers.mock.calls.slice(-2).map(([ctx]) => ctx);
    const refund = first!.refund as (res: unknown) => Promise<void>;
    expect(typeof refund).toBe('function');
    expect(second!.refund).toBe(refund);
    const before = await scriptCalls(redis);
    await refund({ locals: { rateLimit: first } });
    expect(first!.refunded).toBeUndefined(); // refused: nothing was counted
    expect(await scriptCalls(redis)).toBe(before);
    expect((await shortcut.server.get(`${P}/test_endpoint`, bearer(key.apiKey))).status).toBe(429);
  });

  test('the window over, the shortcut stands aside and Redis counts the key again', async () => {
    // Between 10 and 45 s left in this minute: the next minute is reached by moving the clock less
    // than the identity cache's age (60 s), so the key is still cached and the shortcut is asked.
    for (;;) {
      const left = 60_000 - (Date.now() % 60_000);
      if (left >= 10_000 && left <= 45_000) break;
      await new Promise((r) => setTimeout(r, left > 45_000 ? left - 45_000 : left + 50));
    }
    const k = await issueKey(db.owner, { plan: await createPlan(db.owner, 1, 1000, null) });
    await credentialsSettled(db, { guard });
    expect((await shortcut.server.get(`${P}/test_endpoint`, bearer(k.apiKey))).status).toBe(200);
    expect((await shortcut.server.get(`${P}/test_endpoint`, bearer(k.apiKey))).status).toBe(429); // by Redis
    answers.mockClear();
    expect((await shortcut.server.get(`${P}/test_endpoint`, bearer(k.apiKey))).status).toBe(429);
    expect(answers).toHaveBeenCalledTimes(1); // by the shortcut
    const realNow = Date.now.bind(Date);
    const offset = 60_000 - (realNow() % 60_000) + 500;
    const spy = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + offset);
    try {
      answers.mockClear();
      const before = await scriptCalls(redis);
      const res = await shortcut.server.get(`${P}/test_endpoint`, bearer(k.apiKey));
      expect(res.status).toBe(200);
      expect(res.headers['x-ratelimit-remaining-minute']).toBe('0');
      expect(answers).not.toHaveBeenCalled();
      expect(await scriptCalls(redis)).toBe(before + 1); // counted by Redis again
    } finally {
      spy.mockRestore();
    }
  });

  test("a blocked address (the failed-auth limit): the same 429s either way, the shortcut's without Redis", async () => {
    await awaitRoomInMinute(20_000);
    const from = (address: string, headers: Record<string, string> = {}) => ({
      'X-Forwarded-For': address,
      ...headers,
    });
    const A = '203.0.113.9';
    // a valid key, known to the identity cache before its address is blocked
    const valid = await issueKey(db.owner, { plan: 'standard' });
    await credentialsSettled(db, { guard });
    expect((await counting.get(`${P}/test_endpoint`, from(A, bearer(valid.apiKey)))).status).toBe(200);
    for (let i = 0; i < 30; i++) expect((await counting.get(`${P}/test_endpoint`, from(A))).status).toBe(401);
    expect((await counting.get(`${P}/test_endpoint`, from(A))).status).toBe(429); // the usual way blocks A
    const refusals = jest.spyOn(PartnerRateLimits.prototype, 'failedAuthRefusal');
    try {
      const requests: [string, Record<string, string>][] = [
        [`${P}/test_endpoint`, {}],
        [`${P}/test_endpoint`, { 'X-API-Key': 'nope' }],
        [`${P}/bars/12`, bearer(`pbk_${'E'.repeat(43)}`)], // well formed, unknown, never looked up
        [`${P}/usage`, { 'X-Forwarded-Proto': 'https', 'Accept-Encoding': 'gzip, br' }], // a free endpoint too
      ];
      shortcut.log.lines.length = 0;
      usual.log.lines.length = 0;
      for (const [path, headers] of requests) {
        refusals.mockClear();
        const scriptsBefore = await scriptCalls(redis);
        const a = await shortcut.server.get(path, from(A, headers));
        expect(await scriptCalls(redis)).toBe(scriptsBefore); // the failure not counted again
        expect(refusals.mock.results.map((r) => r.value !== undefined)).toEqual([true]);
        const b = await usual.server.get(path, from(A, headers));
        expect(await scriptCalls(redis)).toBe(scriptsBefore + 1); // the usual way counts it in Redis
        expect([path, a.status, b.status]).toEqual([path, 429, 429]);
        expect(comparable(a.headers)).toEqual(comparable(b.headers));
        expect(Math.abs(Number(a.headers['retry-after']) - Number(b.headers['retry-after']))).toBeLessThanOrEqual(1);
        expect(Number(a.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(JSON.parse(a.body)).toEqual({
          error: 'Rate limit exceeded',
          limit: 30,
          period: 'minute',
          request_id: a.headers['x-request-id'],
        });
        expect(bodyOf(a.body)).toEqual(bodyOf(b.body));
      }
      const line = (l: Record<string, unknown>) => {
        const { time: _t, pid: _p, hostname: _h, requestId: _r, durationMs: _d, ...rest } = l;
        return rest;
      };
      expect(shortcut.log.lines).toHaveLength(requests.length);
      expect(shortcut.log.lines.map(line)).toEqual(usual.log.lines.map(line));

      // where the usual way does otherwise, the shortcut stands aside
      refusals.mockClear();
      const aside: [string, string, Record<string, string>, number][] = [
        ['GET', `${P}/test_endpoint`, from(A, bearer(valid.apiKey)), 200], // a valid key already known: served
        ['GET', `${P}/nowhere`, from(A), 429], // no declared route: the guard refuses it the usual way
        ['GET', `${P}/test_endpoint`, from(A, { Accept: 'text/html' }), 406],
        ['POST', `${P}/test_endpoint`, from(A), 405],
        ['GET', `${P}/test_endpoint`, from('203.0.113.10'), 401], // another address
        ['GET', `${P}/test_endpoint`, from(A, { 'X-API-Key': 'pbk_\xff\xfe' }), 400], // invalid UTF-8: 400 first
      ];
      for (const [method, path, headers, status] of aside) {
        const a = await shortcut.server.request(method, path, headers);
        expect([method, path, a.status]).toEqual([method, path, status]);
      }
      expect(refusals.mock.results.filter((r) => r.value !== undefined)).toHaveLength(0);
      // huge and repeated input from the blocked address: its 429, never a 5xx
      for (const [path, headers] of [
        [`${P}/test_endpoint`, { 'X-API-Key': `pbk_${'A'.repeat(10_000)}` }],
        [`${P}/bars/12?x=%00&x=%ff&${'y=1&'.repeat(500)}`, {}],
        [`${P}/search?q=${'%C3%A9'.repeat(2_000)}`, bearer(`pbk_${'H'.repeat(43)}`)],
      ] as [string, Record<string, string>][]) {
        const a = await shortcut.server.get(path, from(A, headers));
        expect([path.slice(0, 60), a.status]).toEqual([path.slice(0, 60), 429]);
      }
    } finally {
      refusals.mockRestore();
    }
  });
});

/** EVALSHA and EVAL calls so far (INFO commandstats of this test's own redis-server). */
async function scriptCalls(client: RedisClient): Promise<number> {
  const info = (await client.info('commandstats')) as string;
  let n = 0;
  for (const m of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) n += Number(m[2]);
  return n;
}
