/**
 * The TypeScript client (clients/typescript) against the real partner app (real credentials guard,
 * real database, GraphQL endpoint) listening on a port: every endpoint of the OpenAPI document called
 * through it, paginate() against the REST pages, retries of 429 after Retry-After (bounded), typed
 * errors with the request id, ETag revalidation, GraphQL documents and connections. Every date the
 * assertions depend on is explicit (start_date/end_date in 2030): nothing here depends on the clock.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import request from 'supertest';
import {
  PAGED,
  PartnerApiError,
  PartnerGraphqlError,
  createClient,
  gql,
  type ClientOptions,
  type RetryEvent,
} from '../../clients/typescript/src';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { awaitRoomInMinute, bearer, createPlan, issueKey, type IssuedKey } from '../support/partner';
import { startGraphqlPartner, type GraphqlPartner } from '../graphql/support';

const OPENAPI = JSON.parse(readFileSync(path.join(__dirname, '../../clients/typescript/openapi.json'), 'utf8')) as {
  paths: Record<string, Record<string, { parameters?: { name: string }[] }>>;
};
const EVENT_COUNT = 23;
const WINDOW = { start_date: '2030-03-01', end_date: '2030-03-31' };
const AUSTIN = { state: 'TX', city: 'Austin' };

/** The error a call rejects with (the test fails if it resolves). */
async function failure<E = PartnerApiError>(call: Promise<unknown>): Promise<E> {
  try {
    await call;
  } catch (e) {
    return e as E;
  }
  throw new Error('expected the call to fail');
}

interface Call {
  method: string;
  url: URL;
  status: number;
  requestHeaders: Headers;
  responseHeaders: Headers;
}

describe('TypeScript client against the real server', () => {
  let db: TestDatabase;
  let partner: GraphqlPartner;
  let server: http.Server;
  let baseUrl: string;
  let key: IssuedKey;
  let barIds: number[];
  const calls: Call[] = [];

  /** A client on the test server whose requests (as sent, after retries and ETags) are recorded in `calls`. */
  const client = (apiKey: string, options: Partial<ClientOptions> = {}) =>
    createClient({
      baseUrl,
      apiKey,
      fetch: async (req) => {
        const requestHeaders = new Headers(req.headers);
        const res = await fetch(req);
        calls.push({
          method: req.method,
          url: new URL(req.url),
          status: res.status,
          requestHeaders,
          responseHeaders: res.headers,
        });
        return res;
      },
      ...options,
    });

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    const austin = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago', population: 900000 });
    const cocktails = await f.category('Cocktail Bar', 'cocktail-bar');
    barIds = [];
    for (const name of ['Alpha Lounge', 'Bravo Tap', 'Charlie Club']) {
      const id = await f.bar(austin, { name, google_rating: 4.5, price_level: 2 });
      await f.alwaysOpen(id);
      await f.occupancy(id, 40);
      await f.barCategory(id, cocktails, true);
      await f.photo(id, `https://img.example.com/${id}.jpg`);
      barIds.push(id);
    }
    await f.group(austin, 'downtown', barIds.slice(0, 2));
    for (let i = 0; i < EVENT_COUNT; i++) {
      const start = new Date(Date.UTC(2030, 2, 1 + i, 20 + (i % 3)));
      await f.event(barIds[i % 3]!, {
        title: `Event ${String(i).padStart(2, '0')}`,
        start_at: start.toISOString(),
        end_at: new Date(start.getTime() + 3 * 3600_000).toISOString(),
        created_at: '2030-01-01T00:00:00Z',
      });
    }
    const user = await f.user();
    for (let i = 0; i < 4; i++) await f.post(barIds[0]!, user, `Post ${i}`, `2030-03-0${i + 1}T18:00:00Z`);

    partner = await startGraphqlPartner(db);
    server = http.createServer(partner.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    key = await issueKey(db.owner);
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await partner?.close();
    await db?.drop();
  });

  /** The OpenAPI path template a recorded URL matched. */
  function template(url: URL): string | undefined {
    const below = url.pathname.slice(P.length);
    return Object.keys(OPENAPI.paths).find((t) =>
      new RegExp(`^${t.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`).test(below),
    );
  }

  test('every endpoint of the OpenAPI document, called through the client', async () => {
    const api = client(key.apiKey);
    calls.length = 0;
    const [a, b] = barIds.map(String);

    expect((await api.get('/test_endpoint')).subscriber_id).toBe(key.subscriberId);
    const { bars } = await api.get('/bars', { params: { query: { ids: `${b},${a}` } } });
    expect(bars.map((x) => x.id)).toEqual([b, a]);
    const box = await api.get('/bars', {
      params: { query: { corner1: { latitude: 29, longitude: -98 }, corner2: { latitude: 31, longitude: -96 } } },
    });
    expect(box.bars).toHaveLength(3);
    const { bar } = await api.get('/bars/{id}', { params: { path: { id: a! } } });
    expect(bar.name).toBe('Alpha Lounge');
    expect(bar.occupancy.hourly_data).toHaveLength(24);
    const city = await api.get('/bars_by_city/{state}/{city}', {
      params: { path: AUSTIN, query: { group_slug: 'downtown' } },
    });
    expect(city.bars.map((x) => x.name)).toEqual(['Alpha Lounge', 'Bravo Tap']);
    const events = await api.get('/events/{state}/{city}', { params: { path: AUSTIN, query: WINDOW } });
    expect(events.pagination.total_count).toBe(EVENT_COUNT);
    const posts = await api.get('/posts/{state}/{city}', { params: { path: AUSTIN, query: WINDOW } });
    expect(posts.posts.map((p) => p.text)).toEqual(['Post 3', 'Post 2', 'Post 1', 'Post 0']);
    const feed = await api.get('/feed/{state}/{city}', { params: { path: AUSTIN } });
    expect(feed.city).toEqual({ name: 'Austin', state: 'TX' });
    const { categories } = await api.get('/categories');
    expect(categories).toEqual([{ name: 'Cocktail Bar', slug: 'cocktail-bar', bar_count: 3 }]);
    const { cities } = await api.get('/cities', { params: { query: { state: 'tx' } } });
    expect(cities.map((c) => c.name)).toEqual(['Austin']);
    const { groups } = await api.get('/groups/{state}/{city}', { params: { path: AUSTIN } });
    expect(groups).toEqual([{ name: 'downtown', slug: 'downtown', bar_count: 2 }]);
    const search = await api.get('/search', { params: { query: { q: 'bravo', type: 'bar' } } });
    expect(search.results.map((r) => r.name)).toEqual(['Bravo Tap']);
    const usage = await api.get('/usage');
    expect(usage.subscriber_id).toBe(key.subscriberId);
    expect(usage.buckets.minute.limit).toBe(600);

    const barLines = [];
    for await (const line of api.exportLines('/export/bars', { params: { query: { state: 'TX' } } }))
      barLines.push(line);
    expect(barLines.map((l) => l.type)).toEqual(['bar', 'bar', 'bar', 'end']);
    const end = barLines.at(-1);
    expect(end?.type === 'end' && end.count).toBe(3);
    let eventLines = 0;
    for await (const line of api.exportLines('/export/events', { params: { query: { ...AUSTIN, ...WINDOW } } }))
      if (line.type === 'event') eventLines++;
    expect(eventLines).toBe(EVENT_COUNT);

    expect(await api.text('/docs')).toContain('<html');
    expect(await api.text('/graphql/explorer')).toContain('<html');
    expect(await api.text('/graphql/schema.graphql')).toBe(
      readFileSync(path.join(__dirname, '../../server/graphql/schema.graphql'), 'utf8'),
    );
    const served = await api.get('/openapi.json');
    expect(served).toEqual(OPENAPI); // the committed copy is the served document

    const post = await api.graphql(gql.BarDocument, { id: a! });
    expect(post.data.bar?.name).toBe('Alpha Lounge');
    expect(post.extensions?.cost?.requestedPoints).toBe(1);
    const viaGet = await api.graphql(gql.RateLimitDocument, undefined, { method: 'GET' });
    expect(viaGet.data.rateLimit.limit).toBe(600);

    // An endpoint added to the document after this test (without path parameters): called through
    // the client's openapi-fetch underneath, so that "every endpoint" stays true.
    for (const [t, item] of Object.entries(OPENAPI.paths)) {
      if (!item.get || t.includes('{') || calls.some((c) => c.method === 'GET' && template(c.url) === t)) continue;
      const { response } = await api.raw.GET(t as '/categories', { parseAs: 'text' });
      expect([t, response.status]).toEqual([t, 200]);
    }

    // Every (method, path) of the document was requested, and answered 200.
    const declared = Object.entries(OPENAPI.paths).flatMap(([t, item]) =>
      Object.keys(item).map((m) => `${m.toUpperCase()} ${t}`),
    );
    const called = calls.map((c) => `${c.method} ${template(c.url)}`);
    expect([...new Set(called)].sort()).toEqual([...declared].sort());
    expect(calls.filter((c) => c.status !== 200)).toEqual([]);
    // Authenticated with the key as a bearer token.
    expect(calls[0]!.requestHeaders.get('authorization')).toBe(`Bearer ${key.apiKey}`);
  });

  test('PAGED lists every paged endpoint (every GET with a page parameter) and nothing else', () => {
    const withPage = Object.entries(OPENAPI.paths)
      .filter(([, item]) => item.get?.parameters?.some((p) => p.name === 'page'))
      .map(([t]) => t);
    expect(Object.keys(PAGED).sort()).toEqual(withPage.sort());
  });

  test("paginate() over a city's events returns exactly the REST pages, and items() their items", async () => {
    const restPages: unknown[] = [];
    for (let page = 1; ; page++) {
      const res = await request(partner.app)
        .get(`${P}/events/TX/Austin`)
        .query({ ...WINDOW, per_page: 5, page })
        .set(bearer(key.apiKey))
        .expect(200);
      restPages.push(res.body);
      if (page >= res.body.pagination.total_pages) break;
    }
    expect(restPages).toHaveLength(5); // 23 events, 5 a page

    const api = client(key.apiKey);
    const init = { params: { path: AUSTIN, query: { ...WINDOW, per_page: 5 } } };
    const pages = [];
    for await (const page of api.paginate('/events/{state}/{city}', init)) pages.push(page);
    expect(pages).toEqual(restPages);

    const items = [];
    for await (const event of api.items('/events/{state}/{city}', init)) items.push(event);
    expect(items).toEqual(restPages.flatMap((p) => (p as { events: unknown[] }).events));
    expect(new Set(items.map((e) => e.id)).size).toBe(EVENT_COUNT);
    expect(items.map((e) => e.title)).toEqual(
      Array.from({ length: EVENT_COUNT }, (_, i) => `Event ${String(i).padStart(2, '0')}`),
    );

    // From a given page on; and a list on a single page.
    const fromThird = [];
    for await (const page of api.paginate('/events/{state}/{city}', {
      params: { path: AUSTIN, query: { ...WINDOW, per_page: 5, page: 3 } },
    }))
      fromThird.push(page);
    expect(fromThird).toEqual(restPages.slice(2));
    const cities = [];
    for await (const c of api.items('/cities')) cities.push(c.name);
    expect(cities).toEqual(['Austin']);
    // The feed pages its posts (posts_pagination).
    const feedPosts = [];
    for await (const p of api.items('/feed/{state}/{city}', { params: { path: AUSTIN, query: { per_page: 1 } } }))
      feedPosts.push(p.content);
    const all = await api.get('/feed/{state}/{city}', { params: { path: AUSTIN, query: { per_page: 100 } } });
    expect(feedPosts).toEqual(all.posts.map((p) => p.content));
  });

  test('a 404 becomes a PartnerApiError with status, error and the request id', async () => {
    const api = client(key.apiKey);
    calls.length = 0;
    const error = await failure(api.get('/bars/{id}', { params: { path: { id: '999999999' } } }));
    expect(error).toBeInstanceOf(PartnerApiError);
    const e = error;
    expect(e.status).toBe(404);
    expect(e.error).toBe('Bar not found');
    expect(e.request_id).toMatch(/^[A-Za-z0-9._-]{1,128}$/);
    expect(e.request_id).toBe(calls[0]!.responseHeaders.get('x-request-id'));
    expect(calls).toHaveLength(1); // a 404 is not retried

    // The client's own request id comes back in the error.
    const traced = await failure(
      api.get('/events/{state}/{city}', {
        params: { path: { state: 'TX', city: 'Atlantis' } },
        headers: { 'X-Request-Id': 'trace-42' },
      }),
    );
    expect([traced.status, traced.error, traced.request_id]).toEqual([404, 'City not found', 'trace-42']);

    // Other errors are typed the same way: a bad parameter (400), a bad key (401).
    const bad = await failure(
      api.get('/events/{state}/{city}', { params: { path: AUSTIN, query: { per_page: 500 } } }),
    );
    expect(bad.status).toBe(400);
    expect(bad.error).toMatch(/per_page/);
    const unauthorized = await failure(client('pbk_not_a_key').get('/test_endpoint'));
    expect([unauthorized.status, unauthorized.error]).toEqual([401, 'Invalid API key']);
  });

  describe('429: retried after Retry-After, a bounded number of times', () => {
    test('a 429 is retried after its Retry-After and the retry succeeds', async () => {
      const plan = await createPlan(db.owner, 1);
      const unlimited = await createPlan(db.owner, null);
      const limited = await issueKey(db.owner, { plan });
      const slept: number[] = [];
      const retries: RetryEvent[] = [];
      const api = client(limited.apiKey, {
        onRetry: (e) => retries.push(e),
        // Instead of waiting out the minute: the subscriber moves to an unlimited plan, and the
        // wait ends once the server applies it (GET usage counts against no bucket).
        sleep: async (ms) => {
          slept.push(ms);
          await db.owner.query('select admin.set_subscriber_plan($1, $2)', [limited.subscriberId, unlimited]);
          for (;;) {
            const res = await request(partner.app).get(`${P}/usage`).set(bearer(limited.apiKey));
            if (res.body.plan === unlimited) return;
            await new Promise((r) => setTimeout(r, 50));
          }
        },
      });
      await awaitRoomInMinute(20_000);
      await api.get('/test_endpoint');
      calls.length = 0;
      const answer = await api.get('/test_endpoint');
      expect(answer.plan).toBe(unlimited);
      expect(calls.map((c) => c.status)).toEqual([429, 200]);
      const retryAfter = Number(calls[0]!.responseHeaders.get('retry-after'));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(slept).toEqual([retryAfter * 1000]);
      expect(retries).toEqual([
        {
          attempt: 1,
          status: 429,
          delayMs: retryAfter * 1000,
          request_id: calls[0]!.responseHeaders.get('x-request-id'),
        },
      ]);
    });

    test('the retries are bounded: after maxRetries the 429 is thrown, typed', async () => {
      const plan = await createPlan(db.owner, 1);
      const limited = await issueKey(db.owner, { plan });
      const slept: number[] = [];
      const api = client(limited.apiKey, { retry: { maxRetries: 2 }, sleep: async (ms) => void slept.push(ms) });
      await awaitRoomInMinute(20_000);
      await api.get('/test_endpoint');
      calls.length = 0;
      const error = await failure(api.get('/test_endpoint'));
      expect(error).toBeInstanceOf(PartnerApiError);
      expect(calls.map((c) => c.status)).toEqual([429, 429, 429]); // the first attempt and 2 retries
      expect(slept).toEqual(calls.slice(0, 2).map((c) => Number(c.responseHeaders.get('retry-after')) * 1000));
      expect(error.status).toBe(429);
      expect(error.error).toBe('Rate limit exceeded');
      expect([error.limit, error.period]).toEqual([1, 'minute']);
      expect(error.retryAfter).toBe(Number(calls[2]!.responseHeaders.get('retry-after')));
      expect(error.request_id).toBe(calls[2]!.responseHeaders.get('x-request-id'));

      // A Retry-After beyond maxDelayMs is not waited for; retry: false never retries.
      for (const options of [{ retry: { maxDelayMs: 500 } }, { retry: false as const }]) {
        calls.length = 0;
        slept.length = 0;
        const noWait = client(limited.apiKey, { ...options, sleep: async (ms) => void slept.push(ms) });
        await expect(noWait.get('/test_endpoint')).rejects.toMatchObject({ status: 429 });
        expect(calls.map((c) => c.status)).toEqual([429]);
        expect(slept).toEqual([]);
      }
    });
  });

  test('ETag revalidation: the second GET sends If-None-Match, gets a 304 and answers the cached body', async () => {
    const api = client(key.apiKey, { etag: true });
    calls.length = 0;
    const first = await api.get('/bars/{id}', { params: { path: { id: String(barIds[1]) } } });
    const second = await api.get('/bars/{id}', { params: { path: { id: String(barIds[1]) } } });
    expect(second).toEqual(first);
    expect(calls.map((c) => c.status)).toEqual([200, 304]);
    expect(calls[1]!.requestHeaders.get('if-none-match')).toBe(calls[0]!.responseHeaders.get('etag'));
    // A changed resource: a fresh 200 with the new body.
    await db.owner.query("update private.bars set name = 'Bravo Taproom' where id = $1", [barIds[1]]);
    const third = await api.get('/bars/{id}', { params: { path: { id: String(barIds[1]) } } });
    expect(third.bar.name).toBe('Bravo Taproom');
    expect(calls.map((c) => c.status)).toEqual([200, 304, 200]);
    // Off by default.
    calls.length = 0;
    const plain = client(key.apiKey);
    await plain.get('/categories');
    await plain.get('/categories');
    expect(calls.map((c) => [c.status, c.requestHeaders.has('if-none-match')])).toEqual([
      [200, false],
      [200, false],
    ]);
  });

  describe('GraphQL documents', () => {
    test('partial data comes back with its errors; a rejected query throws PartnerGraphqlError', async () => {
      const api = client(key.apiKey);
      const missing = await api.graphql(gql.BarDocument, { id: '999999999' });
      expect(missing.data.bar).toBeNull();
      expect(missing.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

      calls.length = 0;
      const error = await failure<PartnerGraphqlError>(api.graphql(gql.CityEventsDocument, { ...AUSTIN, first: 1000 }));
      expect(error).toBeInstanceOf(PartnerGraphqlError);
      expect(error.status).toBe(calls[0]!.status);
      expect(error.errors.length).toBeGreaterThan(0);
      expect(error.code).toBe(error.errors[0]!.extensions!.code);
      expect(error.request_id).toBe(calls[0]!.responseHeaders.get('x-request-id'));
    });

    test("graphqlPages() walks a connection by cursor: the city's events, as the REST list has them", async () => {
      const api = client(key.apiKey);
      const ids: string[] = [];
      let pages = 0;
      for await (const data of api.graphqlPages(
        gql.CityEventsDocument,
        { ...AUSTIN, first: 5, startDate: WINDOW.start_date, endDate: WINDOW.end_date },
        (d) => d.events,
      )) {
        pages++;
        ids.push(...(data.events?.nodes.map((n) => n.id) ?? []));
      }
      const rest = [];
      for await (const e of api.items('/events/{state}/{city}', { params: { path: AUSTIN, query: WINDOW } }))
        rest.push(e.id);
      expect(pages).toBe(5);
      expect(ids).toEqual(rest);
      expect(ids).toHaveLength(EVENT_COUNT);
    });
  });
});
