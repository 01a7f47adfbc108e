import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { Redis } from 'ioredis';
import request from 'supertest';
import { seedDemoData } from '../../db/seed';
import { GRAPHQL_PATH } from '../../server/graphql/endpoint';
import { graphqlPoints, graphqlRejections } from '../../server/metrics';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { awaitRoomInMinute, bearer, createPlan, issueKey } from '../support/partner';
import { describeWithRedis, redisUrl } from '../support/redis';
import { gql, startGraphqlPartner, type GraphqlPartner } from './support';
import { testNow } from '../support/clock';
import { declaredWindowBits } from '../support/brotli';
import { MIDDLEWARE_BROTLI_WINDOW_BITS } from '../../server/http/caching';

interface Body {
  data?: Record<string, unknown> | null;
  errors?: { message: string; extensions: { code: string; request_id: string } }[];
  extensions?: { cost: { requestedPoints: number; nodeLimit: number; remaining: number } };
  error?: string;
}

/** bars(first: a) { nodes { events(first: b) ... } }: a + a*b nodes, 1 + a connections. */
const nested = (a: number, b: number) => `{ bars(first: ${a}) { nodes { id events(first: ${b}) { nodes { id } } } } }`;

describe('partner GraphQL endpoint: keys, bounds, cost, limits', () => {
  let db: TestDatabase;
  let partner: GraphqlPartner;
  let key: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    await seedDemoData(db.url, { bars: 120, seed: 3, now: testNow() });
    partner = await startGraphqlPartner(db);
    key = (await issueKey(db.owner)).apiKey;
  });
  afterAll(async () => {
    await partner?.close();
    await db?.drop();
  });

  test('keys are checked first, with the REST bodies: 401 missing/invalid, 403 revoked', async () => {
    const missing = await request(partner.app).post(GRAPHQL_PATH).send({ query: '{ rateLimit { cost } }' });
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ error: 'Missing API key', request_id: missing.headers['x-request-id'] });
    expect(missing.headers['x-api-beta']).toBe('graphql');
    const invalid = await gql(partner.app, 'pbk_nope', '{ rateLimit { cost } }');
    expect(invalid.status).toBe(401);
    expect(invalid.body.error).toBe('Invalid API key');
    const revoked = await issueKey(db.owner);
    await db.owner.query('select admin.revoke_key($1)', [revoked.keyId]);
    const refused = await gql(partner.app, revoked.apiKey, '{ rateLimit { cost } }');
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('API key has been revoked');
    // X-API-Key works as for REST
    const ok = await request(partner.app)
      .post(GRAPHQL_PATH)
      .set('X-API-Key', key)
      .send({ query: '{ rateLimit { cost } }' });
    expect(ok.status).toBe(200);
  });

  test('a query answers data, extensions.cost, rateLimit and the rate-limit headers', async () => {
    const res = await gql(
      partner.app,
      key,
      '{ categories(first: 2) { totalCount nodes { slug } } rateLimit { cost limit remaining used resetAt nodeCount } }',
    );
    expect(res.status).toBe(200);
    const body = res.body as Body;
    expect(body.errors).toBeUndefined();
    expect((body.data!.categories as { nodes: unknown[] }).nodes).toHaveLength(2);
    expect(body.extensions!.cost).toEqual({
      requestedPoints: 1,
      nodeLimit: 10000,
      remaining: Number(res.headers['x-ratelimit-remaining']),
    });
    const rate = body.data!.rateLimit as {
      cost: number;
      limit: number;
      remaining: number;
      used: number;
      resetAt: string;
      nodeCount: number;
    };
    expect(rate.cost).toBe(1);
    expect(rate.nodeCount).toBe(2);
    expect(rate.used).toBe(600 - rate.remaining);
    expect(rate.limit).toBe(600);
    expect(rate.remaining).toBe(Number(res.headers['x-ratelimit-remaining']));
    expect(Date.parse(rate.resetAt) / 1000).toBe(Number(res.headers['x-ratelimit-reset']));
    expect(res.headers['x-api-beta']).toBe('graphql');
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const typed = await gql(partner.app, key, '{ rateLimit { cost } }').set(
      'Accept',
      'application/graphql-response+json',
    );
    expect(typed.headers['content-type']).toMatch(/^application\/graphql-response\+json/);
  });

  test('a br answer is streamed with the 18-bit window (MIDDLEWARE_BROTLI_WINDOW_BITS) and decodes to the identity answer', async () => {
    const server = partner.app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const post = (encoding: string) =>
      new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: (server.address() as AddressInfo).port,
            method: 'POST',
            path: GRAPHQL_PATH,
            headers: { ...bearer(key), 'Content-Type': 'application/json', 'Accept-Encoding': encoding },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ query: '{ bars(first: 60) { nodes { id name address } } }' }));
      });
    try {
      const br = await post('br');
      const plain = await post('identity');
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.body.length).toBeGreaterThan(1024); // above the threshold: the middleware compresses it
      expect(br.headers['content-encoding']).toBe('br');
      expect(declaredWindowBits(br.body)).toBe(MIDDLEWARE_BROTLI_WINDOW_BITS);
      expect(MIDDLEWARE_BROTLI_WINDOW_BITS).toBeLessThan(zlib.constants.BROTLI_DEFAULT_WINDOW);
      const decoded = JSON.parse(zlib.brotliDecompressSync(br.body).toString('utf8')) as Body;
      expect(decoded.data).toEqual((JSON.parse(plain.body.toString('utf8')) as Body).data);
      expect((decoded.data!.bars as { nodes: unknown[] }).nodes).toHaveLength(60);
    } finally {
      server.close();
    }
  });

  test('GET runs queries; mutations over GET, other methods and batches are refused', async () => {
    const get = await request(partner.app)
      .get(GRAPHQL_PATH)
      .query({ query: 'query Q($n: Int!) { categories(first: $n) { nodes { slug } } }', variables: '{"n": 1}' })
      .set(bearer(key));
    expect(get.status).toBe(200);
    expect((get.body as Body).data!.categories).toEqual({ nodes: [expect.objectContaining({})] });
    const mutation = await request(partner.app).get(GRAPHQL_PATH).query({ query: 'mutation { x }' }).set(bearer(key));
    expect([400, 405]).toContain(mutation.status);
    expect((mutation.body as Body).errors![0]!.extensions.code).toMatch(
      /GRAPHQL_VALIDATION_FAILED|OPERATION_NOT_ALLOWED/,
    );
    const put = await request(partner.app).put(GRAPHQL_PATH).set(bearer(key)).send({ query: '{ rateLimit { cost } }' });
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe('GET, POST');
    const batch = await request(partner.app)
      .post(GRAPHQL_PATH)
      .set(bearer(key))
      .send([{ query: '{ rateLimit { cost } }' }, { query: '{ rateLimit { cost } }' }]);
    expect(batch.status).toBe(400);
    expect((batch.body as Body).errors![0]!.extensions.code).toBe('BATCHING_NOT_SUPPORTED');
  });

  describe('every bound is an error naming it, before any SQL', () => {
    const cases: [string, () => string, number, string, RegExp][] = [
      ['text', () => `{ rateLimit { cost } } # ${'x'.repeat(10_001)}`, 413, 'QUERY_TOO_LARGE', /10000 bytes/],
      [
        'tokens',
        () => `query Q(${Array.from({ length: 600 }, (_, i) => `$v${i}: Int`).join(' ')}) { rateLimit { cost } }`,
        400,
        'MAX_TOKENS_EXCEEDED',
        /Token limit of 2000/,
      ],
      [
        'depth',
        () =>
          '{ bar(id: "1") { city { bars(first: 1) { nodes { city { bars(first: 1) { nodes { city { bars(first: 1) { nodes { id } } } } } } } } } } }',
        400,
        'MAX_DEPTH_EXCEEDED',
        /depth limit of 10/,
      ],
      [
        'aliases',
        () => `{ ${Array.from({ length: 21 }, (_, i) => `a${i}: rateLimit { cost }`).join(' ')} }`,
        400,
        'MAX_ALIASES_EXCEEDED',
        /Aliases limit of 20/,
      ],
      ['node limit', () => nested(100, 100), 400, 'MAX_NODE_LIMIT_EXCEEDED', /10100 nodes.*node limit of 10000/],
      ['first', () => '{ bars(first: 101) { totalCount } }', 400, 'BAD_USER_INPUT', /first .*between 1 and 100/],
      ['first missing', () => '{ bars { totalCount } }', 400, 'GRAPHQL_VALIDATION_FAILED', /"first"/],
      ['syntax', () => '{ bar(id: ', 400, 'GRAPHQL_PARSE_FAILED', /Syntax Error/],
      [
        'operations',
        () => 'query A { rateLimit { cost } } query B { rateLimit { cost } }',
        400,
        'OPERATION_NOT_FOUND',
        /operationName/,
      ],
    ];
    test.each(cases)('%s', async (_name, query, status, code, message) => {
      await gql(partner.app, key, '{ rateLimit { cost } }').expect(200); // the key is cached
      partner.statements.reset();
      const res = await gql(partner.app, key, query());
      expect(res.status).toBe(status);
      const body = res.body as Body;
      expect(body.errors![0]!.extensions.code).toBe(code);
      expect(body.errors![0]!.message).toMatch(message);
      expect(body.errors![0]!.extensions.request_id).toBe(res.headers['x-request-id']);
      expect(res.headers['x-ratelimit-remaining']).toBeDefined();
      expect(partner.statements.graphql).toEqual([]);
      expect(partner.statements.partner).toEqual([]);
    });
  });

  test('points: max(1, ceil(connections / 100)), charged to every bucket; the node limit charges nothing', async () => {
    await awaitRoomInMinute(10_000); // exact minute counts: all in one minute window (real time)
    const plan = await createPlan(db.owner, 1000, 5000);
    const k = await issueKey(db.owner, { plan });
    const counter = async (c: typeof graphqlPoints | typeof graphqlRejections, code?: string) =>
      (await c.get()).values.filter((v) => !code || v.labels.code === code).reduce((n, v) => n + v.value, 0);
    const pointsBefore = await counter(graphqlPoints);
    const rejectedBefore = await counter(graphqlRejections, 'MAX_NODE_LIMIT_EXCEEDED');
    // 1 + 100 connections (bars, then each bar's events): 2 points; 100 + 100 * 10 nodes
    const two = await gql(partner.app, k.apiKey, nested(100, 10));
    expect((two.body as Body).errors).toBeUndefined();
    expect((two.body as Body).extensions!.cost.requestedPoints).toBe(2);
    expect(two.headers['x-ratelimit-remaining-minute']).toBe('998');
    expect(two.headers['x-ratelimit-remaining-day']).toBe('4998');
    const one = await gql(partner.app, k.apiKey, nested(99, 1)); // 1 + 99 = 100 connections: 1 point
    expect((one.body as Body).extensions!.cost.requestedPoints).toBe(1);
    expect(one.headers['x-ratelimit-remaining-minute']).toBe('997');
    // connections inside fragments count too: 1 + 100 + 100 * 2 = 301 -> 4 points
    const fragments = await gql(
      partner.app,
      k.apiKey,
      `{ bars(first: 100) { ...B } } fragment B on BarConnection { nodes { ...E } }
       fragment E on Bar { events(first: 2) { nodes { id } } posts(first: 2) { nodes { id } } photos(first: 1) { totalCount } }`,
    );
    expect((fragments.body as Body).extensions!.cost.requestedPoints).toBe(Math.ceil((1 + 300) / 100));
    const before = Number(fragments.headers['x-ratelimit-remaining-minute']);
    const over = await gql(partner.app, k.apiKey, nested(100, 100));
    expect(over.status).toBe(400);
    expect(over.headers['x-ratelimit-remaining-minute']).toBe(String(before)); // nothing charged
    // /metrics: points charged and rejections by code
    expect((await counter(graphqlPoints)) - pointsBefore).toBe(2 + 1 + 4);
    expect((await counter(graphqlRejections, 'MAX_NODE_LIMIT_EXCEEDED')) - rejectedBefore).toBe(1);
  });

  test('first from variables counts with its value, per request (the same document twice)', async () => {
    const q = 'query Q($n: Int!) { bars(first: $n) { nodes { events(first: $n) { totalCount } } } }';
    const small = await gql(partner.app, key, q, { n: 10 });
    expect((small.body as Body).extensions!.cost.requestedPoints).toBe(1); // 1 + 10 connections
    const big = await gql(partner.app, key, q, { n: 100 }); // 100 + 100 * 100 nodes
    expect(big.status).toBe(400);
    expect((big.body as Body).errors![0]!.extensions.code).toBe('MAX_NODE_LIMIT_EXCEEDED');
    const wrong = await gql(partner.app, key, q, { n: 0 });
    expect((wrong.body as Body).errors![0]!.message).toMatch(/first .*between 1 and 100 \(got 0\)/);
  });

  test('429 when the points do not fit (nothing charged); usage records graphql with its points; alerts fire', async () => {
    await awaitRoomInMinute(10_000); // exact minute counts: all in one minute window (real time)
    const plan = await createPlan(db.owner, 10);
    const k = await issueKey(db.owner, { plan });
    const heavy = nested(100, 5) + ''; // 101 connections: 2 points
    const seven = `{ a: bars(first: 100) { nodes { events(first: 1) { totalCount } } } b: bars(first: 100) { nodes { events(first: 1) { totalCount } } } c: bars(first: 100) { nodes { events(first: 1) { totalCount } } } d: bars(first: 100) { nodes { events(first: 1) { totalCount } } } }`; // 404 connections: 5 points
    expect((await gql(partner.app, k.apiKey, heavy)).headers['x-ratelimit-remaining-minute']).toBe('8');
    const five = await gql(partner.app, k.apiKey, seven);
    expect((five.body as Body).extensions!.cost.requestedPoints).toBe(5);
    expect(five.headers['x-ratelimit-remaining-minute']).toBe('3'); // 7 used: 70 %
    const refused = await gql(partner.app, k.apiKey, seven); // 7 + 5 > 10
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: 'Rate limit exceeded',
      limit: 10,
      period: 'minute',
      request_id: refused.headers['x-request-id'],
    });
    expect(refused.headers['retry-after']).toBeDefined();
    expect(refused.headers['x-ratelimit-remaining-minute']).toBe('3'); // nothing charged
    // 2 points: 7 -> 9 steps over 80 % (8) and reaches 90 % (9)
    const fits = await gql(partner.app, k.apiKey, heavy);
    expect(fits.status).toBe(200);
    expect(fits.headers['x-ratelimit-remaining-minute']).toBe('1');
    await partner.guard.alerts.settle();
    const alerts = await db.owner.query<{ level: string; used: number }>(
      // both levels were crossed at 9: order by severity, not by which insert landed first
      `select level, used from admin.usage_alerts where api_key_id = $1
       order by used, array_position(array['warning', 'high_warning', 'limit_reached'], level)`,
      [k.keyId],
    );
    expect(alerts.rows).toEqual([
      { level: 'warning', used: 9 },
      { level: 'high_warning', used: 9 },
    ]);
    await partner.guard.usage.flush();
    const usage = await db.owner.query<{ endpoint: string; requests: number; rate_limited: number }>(
      'select endpoint, requests::int, rate_limited::int from admin.daily_usage where api_key_id = $1 order by endpoint',
      [k.keyId],
    );
    expect(usage.rows).toEqual([
      { endpoint: '(none)', requests: 0, rate_limited: 1 },
      { endpoint: 'graphql', requests: 2 + 5 + 2, rate_limited: 0 },
    ]);
  });

  test('execution errors: a code and the request id, never SQL; unknown ids are NOT_FOUND', async () => {
    const res = await gql(
      partner.app,
      key,
      // the unknown bar's fields below it give no errors of their own
      `{ bar(id: "999999") { id city { name } occupancy { status } events(first: 1) { nodes { id } } }
         events(state: "ZZ", city: "Nowhere", first: 1) { totalCount } bars(first: 1, near: { latitude: 91, longitude: 0 }) { totalCount } }`,
    );
    expect(res.status).toBe(200);
    const body = res.body as Body;
    expect(body.data).toEqual(null); // bars is non-null and failed
    const codes = body.errors!.map((e) => e.extensions.code).sort();
    expect(codes).toEqual(['BAD_USER_INPUT', 'NOT_FOUND', 'NOT_FOUND']);
    for (const e of body.errors!) expect(e.extensions.request_id).toBe(res.headers['x-request-id']);
    expect(JSON.stringify(body)).not.toMatch(/select|api\.|private\.|stack|at .*\.ts/i);
    const dates = await gql(
      partner.app,
      key,
      '{ events(state: "NY", city: "New York City", first: 1, startDate: "2030-01-02", endDate: "2030-01-01") { totalCount } }',
    );
    expect((dates.body as Body).errors![0]).toMatchObject({
      message: 'endDate must not be before startDate'.replace(/endDate|startDate/g, (m) =>
        m === 'endDate' ? 'end_date' : 'start_date',
      ),
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });

  test("the answer's text: errors, data, extensions in that order, as JSON.stringify writes them", async () => {
    const bar = (await db.owner.query<{ id: string; name: string }>('select id::text, name from private.bars limit 1'))
      .rows[0]!;
    // partial data beside an error: an unknown bar (null) and a known one; a name with quotes and non-ASCII
    await db.owner.query('update private.bars set name = $2 where id = $1', [bar.id, 'Bar "Ü" \\ 🍺\n']);
    try {
      const query = `{ a: bar(id: "999999") { id } b: bar(id: "${bar.id}") { id name googleRating hours { monday { open } } } }`;
      const res = await gql(partner.app, key, query);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.text));
      const body = JSON.parse(res.text) as Body;
      expect(Object.keys(body)).toEqual(['errors', 'data', 'extensions']);
      expect(res.text).toBe(JSON.stringify(body));
      expect(body.errors!.map((e) => e.extensions.code)).toEqual(['NOT_FOUND']);
      expect(body.data).toMatchObject({ a: null, b: { id: bar.id, name: 'Bar "Ü" \\ 🍺\n' } });
      const clean = await gql(partner.app, key, `{ b: bar(id: "${bar.id}") { name } }`);
      expect(Object.keys(JSON.parse(clean.text) as Body)).toEqual(['data', 'extensions']);
      expect(clean.text).toBe(JSON.stringify(JSON.parse(clean.text)));
    } finally {
      await db.owner.query('update private.bars set name = $2 where id = $1', [bar.id, bar.name]);
    }
  });

  test('the role runs only what the schema serves', async () => {
    const client = await db.owner.connect();
    try {
      await client.query('set role bar_partner_graphql');
      await expect(client.query("select api.record_usage('[]'::jsonb)")).rejects.toThrow(/permission denied/);
      await expect(client.query("select api.authenticate('\\x00'::bytea)")).rejects.toThrow(/permission denied/);
      await expect(client.query('select count(*) from admin.api_keys')).rejects.toThrow(/permission denied/);
      await expect(client.query('select count(*) from private.bars')).rejects.toThrow(/permission denied/);
      const { rows } = await client.query<{ ok: boolean }>('select api.categories() is not null as ok');
      expect(rows[0]!.ok).toBe(true);
    } finally {
      await client.query('reset role');
      client.release();
    }
  });
});

describeWithRedis('GraphQL points counted in Redis (the rate-limit script)', () => {
  let db: TestDatabase;
  let partner: GraphqlPartner;
  let redis: Redis;

  beforeAll(async () => {
    db = await createTestDatabase();
    await seedDemoData(db.url, { bars: 120, seed: 3, now: testNow() });
    redis = new Redis(redisUrl!);
    partner = await startGraphqlPartner(db, { redis });
  });
  afterAll(async () => {
    await partner?.close();
    redis?.disconnect();
    await db?.drop();
  });

  test('a query is charged its points in every bucket and in usage; 429 counts nothing', async () => {
    await awaitRoomInMinute(10_000);
    const k = await issueKey(db.owner, { plan: await createPlan(db.owner, 10, 100) });
    const seven = await gql(partner.app, k.apiKey, nested(100, 1) + ' '); // 101 connections: 2 points
    expect(seven.headers['x-ratelimit-remaining-minute']).toBe('8');
    expect(seven.headers['x-ratelimit-remaining-day']).toBe('98');
    const five = `{ ${['a', 'b', 'c', 'd'].map((a) => `${a}: bars(first: 100) { nodes { events(first: 1) { totalCount } } }`).join(' ')} }`;
    expect((await gql(partner.app, k.apiKey, five)).headers['x-ratelimit-remaining-minute']).toBe('3');
    const refused = await gql(partner.app, k.apiKey, five);
    expect(refused.status).toBe(429);
    expect(refused.headers['x-ratelimit-remaining-minute']).toBe('3');
    const over = await gql(partner.app, k.apiKey, nested(100, 100)); // the node limit: charged nothing
    expect(over.status).toBe(400);
    expect(over.headers['x-ratelimit-remaining-minute']).toBe('3');
    await partner.guard.sharedUsage!.flush();
    const usage = await db.owner.query<{ endpoint: string; requests: number; rate_limited: number }>(
      'select endpoint, requests::int, rate_limited::int from admin.daily_usage where api_key_id = $1 order by endpoint',
      [k.keyId],
    );
    expect(usage.rows).toEqual([
      { endpoint: '(none)', requests: 0, rate_limited: 1 },
      { endpoint: 'graphql', requests: 7, rate_limited: 0 },
    ]);
  });
});
