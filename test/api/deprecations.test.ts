/**
 * Deprecations (decisions.md v1.3 "Deprecations and the changelog"; docs/COMPATIBILITY.md), with
 * deprecations DECLARED HERE (no real endpoint is deprecated) and an injected clock: the three
 * headers on a request that uses one, nothing on one that does not, the per-key count in GET usage
 * and the operator GraphQL, the 410 after the sunset, `deprecated: true` in the OpenAPI document,
 * `@deprecated` in the GraphQL schema, and the validation of the declarations.
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { printSchema } from 'postgraphile/graphql';
import request from 'supertest';
import { makePartnerSchema } from '../../server/graphql/schema';
import { TYPE_DEFS } from '../../server/graphql/type-defs';
import { createPartnerApp } from '../../server/http/app';
import { deprecateSdl, validateDeprecations } from '../../server/contract/deprecations';
import { DEPRECATIONS, E, type Deprecation } from '../../server/contract/endpoints';
import { openApiDocument, openApiFor, openApiJson } from '../../server/openapi/document';
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { OwnRedisServer } from '../support/redis-server';
import { startOperatorHarness, type OperatorHarness } from '../operator/support';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { validateResponse } from '../support/openapi';
import { bearer, issueKey, silentLogger, startPartner, type PartnerInstance } from '../support/partner';

const P = '/api/v1/partner';
const at = (iso: string) => Date.parse(iso);

const Q_PARAM: Deprecation = {
  endpoint: E.cities,
  parameter: 'q',
  graphql: 'Query.cities(q)',
  since: '2026-01-15',
  sunset: '2026-07-15',
  replacement: 'GET search?type=city&q=',
  changelog: 'https://api.example.test/api/v1/partner/changelog#2026-01-15-cities-q',
};
const CATEGORIES: Deprecation = {
  endpoint: E.categories,
  graphql: 'Query.categories',
  since: '2026-02-01',
  sunset: '2026-12-01',
  replacement: 'GET cities',
  changelog: '/api/v1/partner/changelog#2026-02-01-categories',
};
const PRICE_FIELD: Deprecation = {
  endpoint: E.bar,
  field: 'BarDetail.price_level',
  graphql: 'Bar.priceLevel',
  since: '2026-01-15',
  sunset: '2026-07-15',
  replacement: 'price_level of GET bars',
  changelog: 'https://api.example.test/changelog/price-level',
};
const LIST = [Q_PARAM, CATEGORIES, PRICE_FIELD];

describe('deprecation declarations', () => {
  const valid = Q_PARAM;
  const refusals: [Partial<Deprecation>, string][] = [
    [{ sunset: '2026-07-14' }, 'sunset 2026-07-14 is less than 6 months after 2026-01-15 (earliest: 2026-07-15)'],
    [{ since: '2026-02-30' }, 'since "2026-02-30" is not a YYYY-MM-DD day'],
    [{ sunset: '1 July 2026' }, 'sunset "1 July 2026" is not a YYYY-MM-DD day'],
    [{ parameter: 'query' }, 'parameter "query" is not a query parameter of the endpoint'],
    [{ replacement: ' ' }, 'replacement is required'],
    [{ changelog: 'changelog.html' }, 'changelog must be an absolute http(s) URL or a path starting with /'],
    [{ graphql: 'cities' }, 'graphql must be Type.field or Type.field(argument)'],
    [{ field: 'BarDetail.price_level' }, 'a parameter or a field, not both'],
    [{ endpoint: { ...E.cities } }, 'endpoint is not a declared endpoint'],
  ];
  test.each(refusals.map(([change, message]) => [message, change] as const))('refused: %s', (message, change) => {
    expect(() => validateDeprecations([{ ...valid, ...change }])).toThrow(message);
  });

  test('a sunset exactly 6 months later, the declared list and the test list pass; a duplicate does not', () => {
    expect(() => validateDeprecations([valid])).not.toThrow();
    expect(() => validateDeprecations(LIST)).not.toThrow();
    expect(() => validateDeprecations(DEPRECATIONS)).not.toThrow();
    expect(() => validateDeprecations([valid, { ...valid }])).toThrow('declared twice');
  });

  test('the partner app refuses to start with an invalid declaration', () => {
    expect(() =>
      createPartnerApp({
        config: { env: 'test' },
        logger: silentLogger,
        pool: {} as never,
        guard: [],
        deprecations: { list: [{ ...valid, sunset: '2026-03-01' }] },
      }),
    ).toThrow(/invalid deprecation declarations/);
  });
});

describe('deprecation in the OpenAPI document and the GraphQL schema', () => {
  type Op = {
    deprecated?: boolean;
    parameters: { name: string; deprecated?: boolean }[];
    responses: Record<string, unknown>;
  };
  const doc = openApiFor(LIST) as unknown as {
    paths: Record<string, { get: Op }>;
    components: { schemas: Record<string, { properties: Record<string, { deprecated?: boolean }> }> };
  };

  test('deprecated: true on the parameter, the operation and the schema property; 410 documented', () => {
    const cities = doc.paths['/cities']!.get;
    expect(cities.deprecated).toBeUndefined(); // only its parameter is
    expect(cities.parameters.find((p) => p.name === 'q')!.deprecated).toBe(true);
    expect(cities.parameters.find((p) => p.name === 'state')!.deprecated).toBeUndefined();
    expect(cities.responses['410']).toEqual({ $ref: '#/components/responses/Gone' });
    expect(doc.paths['/categories']!.get.deprecated).toBe(true);
    expect(doc.components.schemas.BarDetail!.properties.price_level!.deprecated).toBe(true);
    expect(doc.components.schemas.Bar!.properties.google_rating!.deprecated).toBeUndefined();
    expect(doc.paths['/bars/{id}']!.get.responses['410']).toBeUndefined(); // a field never makes its endpoint 410
    // the shared document is untouched, and the served one (no real deprecation) marks nothing
    expect(JSON.stringify(openApiDocument)).not.toContain('"deprecated":true');
    expect(openApiJson).not.toContain('"deprecated":true');
  });

  test('@deprecated(reason) on the field and the argument in the partner GraphQL schema', () => {
    const schema = makePartnerSchema(LIST);
    const bar = schema.getType('Bar') as unknown as { getFields(): Record<string, { deprecationReason?: string }> };
    expect(bar.getFields().priceLevel!.deprecationReason).toBe(
      'Deprecated since 2026-01-15, removed on 2026-07-15: price_level of GET bars (https://api.example.test/changelog/price-level)',
    );
    const query = schema.getQueryType()!.getFields();
    expect(query.cities!.args.find((a) => a.name === 'q')!.deprecationReason).toContain('GET search?type=city&q=');
    expect(query.categories!.deprecationReason).toContain('removed on 2026-12-01');
    expect(printSchema(schema)).toMatch(/cities\([^)]*q: String @deprecated\(reason: "Deprecated since 2026-01-15/);
    // the published schema (no real deprecation) has none
    expect(printSchema(makePartnerSchema())).not.toContain('@deprecated');
    expect(() => deprecateSdl(TYPE_DEFS, [{ ...PRICE_FIELD, graphql: 'Bar.nope' }])).toThrow('Bar.nope');
  });
});

describe.each(['in-process counters', 'Redis (own redis-server)'])('deprecated calls (%s, injected clock)', (mode) => {
  let db: TestDatabase;
  let partner: PartnerInstance;
  let ops: OperatorHarness;
  let redisServer: OwnRedisServer | undefined;
  let client: RedisClient | undefined;
  let now = at('2026-03-10T12:00:00Z');
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  ajv.addSchema(openApiFor(LIST), 'doc');
  const goneValid = ajv.compile({ $ref: 'doc#/components/schemas/Gone' });

  beforeAll(async () => {
    db = await createTestDatabase();
    if (mode.startsWith('Redis')) {
      redisServer = await OwnRedisServer.start();
      client = createRedisClient(redisServer.url, silentLogger);
      await redisReadyPromise(client);
    }
    partner = await startPartner(db, { redis: client, deprecations: { list: LIST, now: () => now } });
    ops = await startOperatorHarness(db);
  });
  afterAll(async () => {
    await ops?.close();
    await partner?.close();
    client?.disconnect();
    await redisServer?.stop();
    await db?.drop();
  });

  const get = (url: string, apiKey: string) => request(partner.app).get(`${P}${url}`).set(bearer(apiKey));
  const usage = async (apiKey: string) => {
    await partner.guard.deprecatedCalls.flush();
    const res = await get('/usage', apiKey).expect(200);
    validateResponse('GET', `${P}/usage`, {
      status: 200,
      headers: res.headers as Record<string, string>,
      text: res.text,
    });
    return res.body as { deprecated_calls: Record<string, unknown>[] };
  };

  test('a deprecated parameter: the three headers, counted per key in GET usage and the operator GraphQL', async () => {
    const a1 = await issueKey(db.owner);
    const a2 = await issueKey(db.owner, { subscriberId: a1.subscriberId });
    const other = await issueKey(db.owner);

    now = at('2026-01-14T23:59:59Z'); // the day before `since`: not deprecated yet
    const before = await get('/cities?q=aus', a1.apiKey).expect(200);
    expect(before.headers.deprecation).toBeUndefined();

    now = at('2026-03-10T12:00:00Z');
    const res = await get('/cities?q=aus', a1.apiKey).expect(200);
    expect(res.headers.deprecation).toBe(`@${Date.UTC(2026, 0, 15) / 1000}`); // RFC 9745
    expect(res.headers.sunset).toBe('Wed, 15 Jul 2026 00:00:00 GMT'); // RFC 8594 HTTP-date
    expect(res.headers.link).toBe(`<${Q_PARAM.changelog}>; rel="deprecation"`);
    validateResponse('GET', `${P}/cities?q=aus`, {
      status: 200,
      headers: res.headers as Record<string, string>,
      text: res.text,
    });
    // the same endpoint without the parameter: nothing deprecated, nothing counted
    const plain = await get('/cities?state=TX', a1.apiKey).expect(200);
    expect(plain.headers.deprecation).toBeUndefined();
    expect(plain.headers.sunset).toBeUndefined();
    expect(plain.headers.link).toBeUndefined();

    await get('/cities?q=new', a2.apiKey).expect(200);
    now = at('2026-03-11T08:30:00Z');
    await get('/cities?q=bos', a2.apiKey).expect(200);
    now = at('2026-02-20T10:00:00Z'); // 19 days before the GET usage below: outside its 14 days
    await get('/cities?q=old', a1.apiKey).expect(200);

    now = at('2026-03-11T09:00:00Z');
    expect((await usage(a1.apiKey)).deprecated_calls).toEqual([
      {
        what: 'GET /cities parameter q',
        sunset: '2026-07-15T00:00:00Z',
        calls_last_14_days: 3, // both keys of the subscriber; not the call of 2026-02-20
        last_call_at: '2026-03-11T08:30:00Z',
      },
    ]);
    expect((await usage(other.apiKey)).deprecated_calls).toEqual([]);

    // per key, per day, for operators
    const gql = await ops.gql<{ allDeprecatedCalls: { nodes: Record<string, unknown>[] } }>(
      `{ allDeprecatedCalls(orderBy: DAY_ASC) { nodes { day apiKeyId what calls } } }`,
    );
    expect(gql.body.errors).toBeUndefined();
    const byDayAndKey = (n: Record<string, unknown>) => `${String(n.day)}|${n.apiKeyId === a1.keyId ? 1 : 2}`;
    const nodes = gql.body.data!.allDeprecatedCalls.nodes.sort((x, y) => (byDayAndKey(x) < byDayAndKey(y) ? -1 : 1));
    expect(nodes).toEqual([
      { day: '2026-02-20', apiKeyId: a1.keyId, what: 'GET /cities parameter q', calls: '1' },
      { day: '2026-03-10', apiKeyId: a1.keyId, what: 'GET /cities parameter q', calls: '1' },
      { day: '2026-03-10', apiKeyId: a2.keyId, what: 'GET /cities parameter q', calls: '1' },
      { day: '2026-03-11', apiKeyId: a2.keyId, what: 'GET /cities parameter q', calls: '1' },
    ]);
  });

  test('after the sunset: 410 with the replacement; the endpoint without the parameter still answers', async () => {
    const key = await issueKey(db.owner);
    now = at('2026-07-14T23:59:59Z');
    await get('/cities?q=aus', key.apiKey).expect(200);
    now = at('2026-07-15T00:00:00Z');
    const gone = await get('/cities?q=aus', key.apiKey).expect(410);
    expect(gone.headers['content-type']).toMatch(/^application\/json/);
    expect(gone.body).toEqual({
      error: 'GET /cities parameter q was removed on 2026-07-15; use instead: GET search?type=city&q=',
      sunset: '2026-07-15T00:00:00Z',
      replacement: 'GET search?type=city&q=',
      request_id: gone.headers['x-request-id'],
    });
    expect(goneValid(gone.body)).toBe(true);
    expect(gone.headers.sunset).toBe('Wed, 15 Jul 2026 00:00:00 GMT');
    expect(gone.headers.link).toContain('rel="deprecation"');
    await get('/cities?state=TX', key.apiKey).expect(200);
    // a deprecated response field keeps its endpoint answering after the sunset (headers go on)
    const bar = await get('/bars/1', key.apiKey);
    expect(bar.status).not.toBe(410);
    expect(bar.headers.sunset).toBe('Wed, 15 Jul 2026 00:00:00 GMT');
    // a whole endpoint: headers before its sunset, 410 from it
    now = at('2026-11-30T23:59:59Z');
    const categories = await get('/categories', key.apiKey).expect(200);
    expect(categories.headers.deprecation).toBe(`@${Date.UTC(2026, 1, 1) / 1000}`);
    now = at('2026-12-01T00:00:00Z');
    const ended = await get('/categories', key.apiKey).expect(410);
    expect(ended.body.replacement).toBe('GET cities');
    expect((await usage(key.apiKey)).deprecated_calls.map((c) => [c.what, c.calls_last_14_days])).toEqual([
      ['GET /categories', 2],
    ]);
  });

  test('the served OpenAPI document marks what the app was given', async () => {
    const res = await request(partner.app).get(`${P}/openapi.json`).expect(200);
    expect(res.body.paths['/categories'].get.deprecated).toBe(true);
    expect(JSON.stringify(res.body)).toBe(JSON.stringify(openApiFor(LIST)));
  });

  test('the count is kept in memory and written by the periodic flush, not per request', async () => {
    const key = await issueKey(db.owner);
    now = at('2026-03-12T10:00:00Z');
    await partner.guard.deprecatedCalls.flush();
    for (let i = 0; i < 5; i++) await get('/cities?q=a', key.apiKey).expect(200);
    expect(partner.guard.deprecatedCalls.pending).toBe(5);
    const { rows } = await db.owner.query(
      'select count(*)::int as n from admin.deprecated_calls where api_key_id = $1',
      [key.keyId],
    );
    expect(rows[0].n).toBe(0);
    await partner.guard.deprecatedCalls.flush();
    expect(partner.guard.deprecatedCalls.pending).toBe(0);
    const after = await db.owner.query('select calls::int from admin.deprecated_calls where api_key_id = $1', [
      key.keyId,
    ]);
    expect(after.rows).toEqual([{ calls: 5 }]);
  });
});
