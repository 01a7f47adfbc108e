/**
 * Every 400 rule of decisions.md "Parameters and errors" with its message, and
 * the protocol answers: 404, 405, 406, 500, request ids, HEAD, the public
 * OpenAPI document, and the guard running before route matching.
 */
import type { RequestHandler } from 'express';
import type { Express } from 'express';
import { createPool } from '../../server/db/pools';
import { PARTNER_PREFIX } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { ENDPOINTS } from '../../server/contract/endpoints';
import { call, compileAllSchemas, get, validateResponse } from '../support/openapi';
import { buildApp, testGuard, type LogCapture } from '../support/partner-app';
import { testNow } from '../support/clock';

const P = PARTNER_PREFIX;

describe('partner API errors', () => {
  let db: TestDatabase;
  let app: Express;
  let log: LogCapture;
  let guardCalls = 0;
  const countingGuard: RequestHandler = (req, res, next) => {
    guardCalls++;
    testGuard(req, res, next);
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    await f.bar(city, { name: 'The Tap' });
    ({ app, log } = buildApp(db.partnerPool(), { guard: [countingGuard] }));
  });
  afterAll(() => db.drop());

  test('the OpenAPI document compiles', () => {
    expect(compileAllSchemas).not.toThrow();
  });

  test('the contract check catches drift: a missing key, an extra key, an undocumented status, a missing header', () => {
    const headers = {
      'content-type': 'application/json',
      'x-request-id': 'r1',
      etag: '"abc"',
      'cache-control': 'private, no-cache',
    };
    const ok = JSON.stringify({ message: 'm', timestamp: '2026-11-22T21:30:00Z', subscriber_id: 's', plan: 'p' });
    const rl = Object.fromEntries(
      ['', '-minute', '-day', '-month'].flatMap((s) =>
        ['limit', 'remaining', 'reset'].map((k) => [`x-ratelimit-${k}${s}`, '1']),
      ),
    );
    expect(() =>
      validateResponse('GET', `${P}/test_endpoint`, { status: 200, headers: { ...headers, ...rl }, text: ok }),
    ).not.toThrow();
    expect(() => validateResponse('GET', `${P}/test_endpoint`, { status: 200, headers, text: ok })).toThrow(
      /missing header X-RateLimit-Limit/,
    );
    expect(() =>
      validateResponse('GET', `${P}/test_endpoint`, {
        status: 200,
        headers: { ...headers, ...rl },
        text: JSON.stringify({ message: 'm' }),
      }),
    ).toThrow(/must have required property/);
    expect(() =>
      validateResponse('GET', `${P}/test_endpoint`, {
        status: 200,
        headers: { ...headers, ...rl },
        text: ok.replace('}', ',"extra":1}'),
      }),
    ).toThrow(/additional properties/);
    expect(() =>
      validateResponse('GET', `${P}/test_endpoint`, {
        status: 200,
        headers: { ...headers, ...rl },
        text: ok.replace('21:30:00Z', '21:30:00.000+00:00'),
      }),
    ).toThrow(/pattern/);
    expect(() =>
      validateResponse('GET', `${P}/test_endpoint`, { status: 404, headers, text: '{"error":"x","request_id":"r1"}' }),
    ).toThrow(/status 404 is not documented/);
  });

  describe('400: every parameter rule, with a message naming the parameter and the rule', () => {
    const cases: [string, string][] = [
      // bars
      ['/bars?ids=' + Array.from({ length: 101 }, (_, i) => i + 1).join(','), 'ids must have at most 100 entries'],
      ['/bars?ids=1,,2', 'ids must be a comma-separated list of bar ids without empty entries'],
      ['/bars?limit=0', 'limit must be an integer between 1 and 250'],
      ['/bars?limit=251', 'limit must be an integer between 1 and 250'],
      ['/bars?limit=abc', 'limit must be an integer between 1 and 250'],
      ['/bars?limit=1.5', 'limit must be an integer between 1 and 250'],
      ['/bars?limit=', 'limit must be an integer between 1 and 250'],
      ['/bars?limit=1&limit=2', 'limit must be given once, as a single value'],
      ['/bars?limit[]=1', 'limit must be given once, as a single value'],
      ['/bars?category=', 'category must not be empty'],
      ['/bars?category=a&category=b', 'category must be given once, as a single value'],
      ['/bars?latitude=91&longitude=0', 'latitude must be a number between -90 and 90'],
      ['/bars?latitude=-90.5&longitude=0', 'latitude must be a number between -90 and 90'],
      ['/bars?latitude=0&longitude=180.1', 'longitude must be a number between -180 and 180'],
      ['/bars?latitude=north&longitude=0', 'latitude must be a number between -90 and 90'],
      ['/bars?latitude=NaN&longitude=0', 'latitude must be a number between -90 and 90'],
      ['/bars?latitude=30', 'latitude and longitude must be given together'],
      ['/bars?longitude=-97', 'latitude and longitude must be given together'],
      ['/bars?radius=5', 'radius requires latitude and longitude'],
      ['/bars?radius=5&latitude=30', 'radius requires latitude and longitude'],
      ['/bars?latitude=30&longitude=-97&radius=0', 'radius must be a number greater than 0 and at most 100'],
      ['/bars?latitude=30&longitude=-97&radius=-1', 'radius must be a number greater than 0 and at most 100'],
      ['/bars?latitude=30&longitude=-97&radius=100.01', 'radius must be a number greater than 0 and at most 100'],
      [
        '/bars?corner1[latitude]=30&corner1[longitude]=-97&corner2[latitude]=31',
        'a bounding box needs all of corner1[latitude], corner1[longitude], corner2[latitude] and corner2[longitude]',
      ],
      [
        '/bars?corner1[latitude]=30',
        'a bounding box needs all of corner1[latitude], corner1[longitude], corner2[latitude] and corner2[longitude]',
      ],
      [
        '/bars?corner1[latitude]=95&corner1[longitude]=-97&corner2[latitude]=31&corner2[longitude]=-96',
        'corner1[latitude] must be a number between -90 and 90',
      ],
      [
        '/bars?corner1[latitude]=30&corner1[longitude]=-97&corner2[latitude]=31&corner2[longitude]=west',
        'corner2[longitude] must be a number between -180 and 180',
      ],
      ['/bars?corner1=30', 'corner1 must be given as corner1[latitude] and corner1[longitude]'],
      [
        '/bars?corner1[latitude]=30&corner1[latitude]=31&corner1[longitude]=-97&corner2[latitude]=31&corner2[longitude]=-96',
        'corner1[latitude] must be given once, as a single value',
      ],
      [
        '/bars?latitude=30&longitude=-97&radius=5&corner1[latitude]=30&corner1[longitude]=-97&corner2[latitude]=31&corner2[longitude]=-96',
        'radius cannot be combined with a bounding box (corner1, corner2)',
      ],
      // paged endpoints: page and per_page
      ...[
        '/bars_by_city/TX/Austin',
        '/events/TX/Austin',
        '/posts/TX/Austin',
        '/feed/TX/Austin',
        '/search?q=tap&',
      ].flatMap((path): [string, string][] => {
        const sep = path.includes('?') ? '' : '?';
        return [
          [`${path}${sep}page=0`, 'page must be an integer between 1 and 2147483647'],
          [`${path}${sep}page=-1`, 'page must be an integer between 1 and 2147483647'],
          [`${path}${sep}page=2147483648`, 'page must be an integer between 1 and 2147483647'],
          [`${path}${sep}page=two`, 'page must be an integer between 1 and 2147483647'],
          [`${path}${sep}per_page=0`, 'per_page must be an integer between 1 and 100'],
          [`${path}${sep}per_page=101`, 'per_page must be an integer between 1 and 100'],
          [`${path}${sep}per_page=1&per_page=2`, 'per_page must be given once, as a single value'],
        ];
      }),
      ['/bars_by_city/TX/Austin?group_slug=', 'group_slug must not be empty'],
      // dates
      ...['/events/TX/Austin', '/posts/TX/Austin'].flatMap((path): [string, string][] => [
        [
          `${path}?start_date=2026-02-30`,
          'start_date must be a date (YYYY-MM-DD) or an ISO 8601 date-time (e.g. 2026-11-22T21:30:00Z)',
        ],
        [
          `${path}?start_date=yesterday`,
          'start_date must be a date (YYYY-MM-DD) or an ISO 8601 date-time (e.g. 2026-11-22T21:30:00Z)',
        ],
        [
          `${path}?end_date=2026-13-01`,
          'end_date must be a date (YYYY-MM-DD) or an ISO 8601 date-time (e.g. 2026-11-22T21:30:00Z)',
        ],
        [
          `${path}?end_date=2026-11-22T24:00:00Z`,
          'end_date must be a date (YYYY-MM-DD) or an ISO 8601 date-time (e.g. 2026-11-22T21:30:00Z)',
        ],
        [
          `${path}?start_date=0000-01-01`,
          'start_date must be a date (YYYY-MM-DD) or an ISO 8601 date-time (e.g. 2026-11-22T21:30:00Z)',
        ],
        [`${path}?start_date=2026-11-22&end_date=2026-11-21`, 'end_date must not be before start_date'],
        [
          `${path}?start_date=2026-11-22T12:00:00Z&end_date=2026-11-22T11:59:59Z`,
          'end_date must not be before start_date',
        ],
        [`${path}?group_slug=`, 'group_slug must not be empty'],
      ]),
      [
        '/events/TX/Austin?classification=rave',
        'classification must be one of live_music, dj, trivia, karaoke, happy_hour, sports, comedy, special',
      ],
      [
        '/events/TX/Austin?classification=DJ',
        'classification must be one of live_music, dj, trivia, karaoke, happy_hour, sports, comedy, special',
      ],
      // search
      ['/search', 'q is required and must not be blank'],
      ['/search?q=', 'q is required and must not be blank'],
      ['/search?q=%20%20%09', 'q is required and must not be blank'],
      ['/search?q=' + 'a'.repeat(201), 'q must be at most 200 characters'],
      ['/search?q=a&q=b', 'q must be given once, as a single value'],
      ['/search?q=tap&latitude=30', 'latitude and longitude must be given together'],
      ['/search?q=tap&latitude=30&longitude=200', 'longitude must be a number between -180 and 180'],
    ];

    test.each(cases)('%s', async (path, message) => {
      const res = await get(app, P + path);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: message, request_id: res.headers['x-request-id'] });
    });

    test('a start_date after the default end_date says that end_date defaulted', async () => {
      const res = await get(app, `${P}/events/TX/Austin?start_date=2999-01-01`);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('end_date must not be before start_date (end_date defaults to 30 days after today)');
    });

    test('valid edge values are accepted, not clamped', async () => {
      for (const path of [
        '/bars?limit=250',
        '/bars?limit=1',
        '/bars?latitude=-90&longitude=180&radius=100',
        '/bars?latitude=30&longitude=-97&radius=0.001',
        '/search?q=' + 'a'.repeat(200),
        '/events/TX/Austin?per_page=100&page=2147483647',
        '/events/TX/Austin?start_date=2026-11-22&end_date=2026-11-22',
        '/posts/TX/Austin?start_date=2026-11-21T10:00&end_date=2026-11-22T10:00%2B05:30',
        '/posts/TX/Austin?start_date=2026-11-21T10:00:00.123456-0600&end_date=2026-11-22t10:00z',
      ]) {
        const res = await get(app, P + path);
        expect([path, res.status]).toEqual([path, 200]);
      }
    });
  });

  describe('404', () => {
    test.each([
      ['/bars/999999', 'Bar not found'],
      ['/bars/abc', 'Bar not found'],
      ['/bars/007', 'Bar not found'],
      ['/bars_by_city/TX/Atlantis', 'City not found'],
      ['/events/ZZ/Austin', 'City not found'],
      ['/posts/TX/Austin%20City', 'City not found'],
      ['/feed/CA/Austin', 'City not found'],
      ['/nope', 'Not found; the endpoints are listed at /api/v1/partner/docs (and /api/v1/partner/openapi.json)'],
      [
        '/bars_by_city/TX',
        'Not found; the endpoints are listed at /api/v1/partner/docs (and /api/v1/partner/openapi.json)',
      ],
    ])('%s: %s, after the guard ran (rate-limit headers present)', async (path, message) => {
      const before = guardCalls;
      const res = await get(app, P + path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: message, request_id: res.headers['x-request-id'] });
      expect(res.headers['x-ratelimit-limit-minute']).toBe('600');
      expect(guardCalls).toBe(before + 1);
    });

    test('an unknown path outside the partner prefix is JSON 404 without the guard', async () => {
      const before = guardCalls;
      const res = await get(app, '/index.html');
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('Not found');
      expect(guardCalls).toBe(before);
    });

    test('400s also pass the guard first', async () => {
      const before = guardCalls;
      const res = await get(app, `${P}/bars?limit=0`);
      expect(res.status).toBe(400);
      expect(res.headers['x-ratelimit-remaining-minute']).toBe('599');
      expect(guardCalls).toBe(before + 1);
    });
  });

  describe('405 and 406 are answered before the guard', () => {
    test.each(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])('%s is 405 with Allow: GET, HEAD', async (method) => {
      const before = guardCalls;
      for (const path of [`${P}/bars`, `${P}/nope`, '/elsewhere']) {
        const res = await call(app, method, path);
        expect(res.status).toBe(405);
        expect(res.headers.allow).toBe('GET, HEAD');
        expect(res.body.error).toMatch(/GET and HEAD/);
      }
      expect(guardCalls).toBe(before);
    });

    test('HEAD is served like GET, without a body', async () => {
      const res = await call(app, 'HEAD', `${P}/bars`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.text).toBe('');
    });

    test.each([
      'text/html',
      'text/plain, image/png',
      'application/xml',
      'application/json;q=0',
      'application/json;q=0, */*;q=0',
    ])('Accept: %s is 406 with a JSON body', async (accept) => {
      const before = guardCalls;
      const res = await get(app, `${P}/bars`, { Accept: accept });
      expect(res.status).toBe(406);
      expect(res.body.error).toMatch(/application\/json/);
      expect(guardCalls).toBe(before);
    });

    test.each([
      '*/*',
      'application/*',
      'application/json',
      'application/json; charset=utf-8',
      'text/html, application/json;q=0.5',
      'text/html, */*;q=0.1',
      'APPLICATION/JSON',
    ])('Accept: %s is fine', async (accept) => {
      const res = await get(app, `${P}/bars`, { Accept: accept });
      expect(res.status).toBe(200);
    });

    test('no Accept header is fine', async () => {
      const res = await call(app, 'GET', `${P}/test_endpoint`, {});
      expect(res.status).toBe(200);
    });
  });

  describe('request ids', () => {
    test('a well-formed client X-Request-Id is echoed, in the header and the error body', async () => {
      const res = await get(app, `${P}/bars/0`, { 'X-Request-Id': 'client.req-42_A' });
      expect(res.headers['x-request-id']).toBe('client.req-42_A');
      expect(res.body.request_id).toBe('client.req-42_A');
    });

    test.each(['has space', 'x'.repeat(129), 'semi;colon'])('a malformed one (%s) is replaced', async (sent) => {
      const res = await get(app, `${P}/bars/0`, { 'X-Request-Id': sent });
      expect(res.headers['x-request-id']).not.toBe(sent);
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.body.request_id).toBe(res.headers['x-request-id']);
    });

    test('the access log has request id, method, path, status and duration, never a key', async () => {
      await get(app, `${P}/bars?limit=1`, {
        'X-Request-Id': 'log-check-1',
        Authorization: 'Bearer pk_secret_key',
        'X-API-Key': 'pk_other_secret',
      });
      const line = log.lines.find((l) => l.requestId === 'log-check-1' && l.msg === 'request');
      expect(line).toMatchObject({ method: 'GET', path: `${P}/bars`, status: 200, subscriberId: 'sub-1' });
      expect(typeof line!.durationMs).toBe('number');
      expect(JSON.stringify(log.lines)).not.toMatch(/pk_secret_key|pk_other_secret/);
    });
  });

  describe('the OpenAPI document', () => {
    test('is served publicly, before the guard', async () => {
      const rejectAll: RequestHandler = (_req, res) => {
        res
          .status(401)
          .type('application/json')
          .send(JSON.stringify({ error: 'Missing API key', request_id: res.locals.requestId }));
      };
      const { app: locked } = buildApp(db.partnerPool(), { guard: [rejectAll] });
      const res = await get(locked, `${P}/openapi.json`);
      expect(res.status).toBe(200);
      expect(res.body.openapi).toBe('3.1.0');
      expect(Object.keys(res.body.paths).sort()).toEqual(
        expect.arrayContaining([
          '/bars',
          '/bars/{id}',
          '/bars_by_city/{state}/{city}',
          '/categories',
          '/cities',
          '/events/{state}/{city}',
          '/feed/{state}/{city}',
          '/groups/{state}/{city}',
          '/openapi.json',
          '/posts/{state}/{city}',
          '/search',
          '/test_endpoint',
        ]),
      );
      // every declared endpoint (server/contract/endpoints.ts) is documented
      for (const e of ENDPOINTS) expect(res.body.paths[e.path]).toBeDefined();
      expect((await get(locked, `${P}/bars`)).status).toBe(401);
    });
  });

  describe('test_endpoint', () => {
    test('answers with the partner identity and a UTC timestamp', async () => {
      const res = await get(app, `${P}/test_endpoint`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        message: 'API key is valid',
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        subscriber_id: 'sub-1',
        plan: 'standard',
      });
      // the server's clock, which the tests fix (test/support/clock.ts): the instant it answers at, to the second
      expect(res.body.timestamp).toBe(
        testNow()
          .toISOString()
          .replace(/\.\d{3}Z$/, 'Z'),
      );
    });
  });

  describe('the running server uses a changed function on its next request (no cache, no restart)', () => {
    test('a DBA redefines api.test_endpoint', async () => {
      const before = await get(app, `${P}/test_endpoint`);
      expect(before.body.message).toBe('API key is valid');
      await db.owner
        .query(`create or replace function api.test_endpoint(p_subscriber_id text, p_plan text, p_now timestamptz default now())
        returns json language sql stable security definer set search_path = private, public, pg_temp
        as $$ select json_build_object('message', 'redefined', 'timestamp', private.iso_utc(p_now), 'subscriber_id', p_subscriber_id, 'plan', p_plan) $$`);
      const after = await get(app, `${P}/test_endpoint`);
      expect(after.body.message).toBe('redefined');
    });
  });

  describe('a query over the statement timeout', () => {
    test('is cancelled and answered 503 with Retry-After, and the pool connection is freed', async () => {
      const pool = createPool(db.url, {
        max: 1,
        role: 'bar_partner',
        applicationName: 'tests-timeout',
        statementTimeoutMs: 100,
      });
      try {
        const { app: slowApp } = buildApp(pool, { guard: [testGuard] });
        await db.owner.query(`create or replace function api.feed(p_state text, p_city text, p_page integer default 1,
            p_per_page integer default 20, p_now timestamptz default now())
          returns json language plpgsql stable security definer set search_path = private, public, pg_temp
          as $$ begin perform pg_sleep(2); return null; end $$`);
        const res = await get(slowApp, `${P}/feed/TX/Austin`, { 'X-Request-Id': 'slow-1' });
        expect(res.status).toBe(503);
        expect(res.headers['retry-after']).toBe('5');
        expect(res.body).toEqual({ error: expect.stringMatching(/took too long/), request_id: 'slow-1' });
        // the single connection is usable again at once
        const next = await get(slowApp, `${P}/test_endpoint`);
        expect(next.status).toBe(200);
      } finally {
        await pool.end();
      }
    });
  });

  describe('500', () => {
    test('reveals nothing; the detail is logged with the request id', async () => {
      await db.owner.query(`create or replace function api.bar(p_id text, p_now timestamptz default now())
        returns text language plpgsql stable security definer set search_path = private, public, pg_temp
        as $$ begin raise exception 'secret detail: relation private.bars_shadow is gone'; end $$`);
      const res = await get(app, `${P}/bars/1`, { 'X-Request-Id': 'boom-1' });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'Internal server error', request_id: 'boom-1' });
      expect(res.text).not.toMatch(/secret|private|relation|stack/i);
      const logged = log.lines.find((l) => l.requestId === 'boom-1' && l.msg === 'unhandled error');
      expect(JSON.stringify(logged)).toMatch(/secret detail/);
    });
  });
});
