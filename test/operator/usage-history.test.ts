/**
 * The operator GraphQL endpoint (operators.md › 6): hourly usage by key,
 * endpoint and status class with aggregates, and the request log across
 * subscribers with lookup by request id (401s without a subscriber too);
 * hostile arguments of the new fields are client errors, never a 5xx.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from '../support/db';
import request from 'supertest';
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { awaitRoomInMinute, bearer, createPlan, issueKey, silentLogger, startPartner } from '../support/partner';
import { OwnRedisServer } from '../support/redis-server';
import { startOperatorHarness, type OperatorHarness } from './support';

const HOUR = '2026-11-24T10:00:00Z';
const NEXT = '2026-11-24T11:00:00Z';

describe('operator GraphQL: hourly usage and the request log', () => {
  let db: TestDatabase;
  let ops: OperatorHarness;

  beforeAll(async () => {
    db = await createTestDatabase();
    ops = await startOperatorHarness(db);
  });
  afterAll(async () => {
    await ops?.close();
    await db?.drop();
  });

  test('hourly usage: aggregates by key, endpoint and status class; since an hour; per subscriber', async () => {
    const a = await issueKey(db.owner);
    const b = await issueKey(db.owner);
    const rows = [
      { hour: HOUR, key_id: a.keyId, endpoint: 'bars', status_2xx: 10, status_4xx: 3, rate_limited: 2 },
      { hour: HOUR, key_id: a.keyId, endpoint: 'search', status_2xx: 4, status_5xx: 1 },
      { hour: NEXT, key_id: a.keyId, endpoint: 'bars', status_3xx: 5 },
      { hour: NEXT, key_id: b.keyId, endpoint: 'bars', status_2xx: 7, status_4xx: 1 },
    ];
    await db.owner.query('select api.record_hourly_usage($1)', [JSON.stringify(rows)]);
    const res = await ops.gql(
      `query($since: Datetime!, $sub: UUID!) {
        allHourlyUsages {
          aggregates { sum { requests status2Xx status3Xx status4Xx status5Xx rateLimited } }
          byKeyEndpoint: groupedAggregates(groupBy: [API_KEY_ID, ENDPOINT]) { keys sum { requests status4Xx } }
          byHour: groupedAggregates(groupBy: [HOUR]) { keys sum { requests } }
        }
        hourlyUsageSince(since: $since, orderBy: [HOUR_ASC, ENDPOINT_ASC]) {
          totalCount nodes { hour endpoint requests apiKeyByApiKeyId { keyPrefix } }
        }
        subscriberByRowId(rowId: $sub) { hourlyUsagesBySubscriberId { aggregates { sum { requests } } } }
      }`,
      { since: '2026-11-24T11:30:00Z', sub: a.subscriberId },
    );
    expect(res.body.errors).toBeUndefined();
    const d = res.body.data!;
    expect(d.allHourlyUsages.aggregates.sum).toEqual({
      requests: '31',
      status2Xx: '21',
      status3Xx: '5',
      status4Xx: '4',
      status5Xx: '1',
      rateLimited: '2',
    });
    const groups = Object.fromEntries(
      d.allHourlyUsages.byKeyEndpoint.map((g: { keys: string[]; sum: { requests: string; status4Xx: string } }) => [
        g.keys.join('|'),
        [Number(g.sum.requests), Number(g.sum.status4Xx)],
      ]),
    );
    expect(groups).toEqual({
      [`${a.keyId}|bars`]: [18, 3],
      [`${a.keyId}|search`]: [5, 0],
      [`${b.keyId}|bars`]: [8, 1],
    });
    expect(d.allHourlyUsages.byHour.map((g: { sum: { requests: string } }) => Number(g.sum.requests)).sort()).toEqual([
      13, 18,
    ]);
    // since 11:30: the 11:00 hour (the hour of `since`) on
    expect(d.hourlyUsageSince.totalCount).toBe(2);
    expect(d.subscriberByRowId.hourlyUsagesBySubscriberId.aggregates.sum.requests).toBe('23');
  });

  test('request log: across subscribers, lookup by request id (a 401 without subscriber too), per key', async () => {
    const a = await issueKey(db.owner);
    const b = await issueKey(db.owner);
    // real time: hourly usage is counted in the real UTC hour of each answer
    const now = new Date().toISOString();
    const entry = (keyId: string | null, requestId: string, status: number) => ({
      request_id: requestId,
      created_at: now,
      api_key_id: keyId,
      method: 'GET',
      path: '/api/v1/partner/bars?limit=x',
      endpoint: 'bars',
      status,
      error: 'limit must be an integer between 1 and 250',
      duration_ms: 2.25,
      client_ip: '10.0.0.9',
    });
    await db
      .partnerPool()
      .query('select api.record_requests($1)', [
        JSON.stringify([entry(a.keyId, 'op-a', 400), entry(b.keyId, 'op-b', 404), entry(null, 'op-401', 401)]),
      ]);
    const res = await ops.gql(
      `query($since: Datetime!, $key: UUID!) {
        lookup: requestLogEntries(requestId: "op-401") { nodes { requestId status subscriberId apiKeyId path error } }
        since: requestLogSince(since: $since, orderBy: [CREATED_AT_DESC, ROW_ID_DESC]) {
          totalCount nodes { requestId subscriberBySubscriberId { rowId } }
          groupedAggregates(groupBy: [STATUS]) { keys distinctCount { rowId } }
        }
        byCondition: allRequestLogs(condition: { requestId: "op-a" }) { nodes { status keyPrefix durationMs clientIp } }
        key: apiKeyByRowId(rowId: $key) { requestLogsByApiKeyId { nodes { requestId } } }
      }`,
      { since: new Date(Date.now() - 3600_000).toISOString(), key: b.keyId },
    );
    expect(res.body.errors).toBeUndefined();
    const d = res.body.data!;
    expect(d.lookup.nodes).toEqual([
      {
        requestId: 'op-401',
        status: 401,
        subscriberId: null,
        apiKeyId: null,
        path: '/api/v1/partner/bars?limit=x',
        error: 'limit must be an integer between 1 and 250',
      },
    ]);
    expect(d.since.totalCount).toBe(3);
    expect(
      d.since.nodes
        .map((n: { requestId: string; subscriberBySubscriberId: { rowId: string } | null }) => [
          n.requestId,
          n.subscriberBySubscriberId?.rowId ?? null,
        ])
        .sort(),
    ).toEqual(
      [
        ['op-401', null],
        ['op-a', a.subscriberId],
        ['op-b', b.subscriberId],
      ].sort(),
    );
    expect(d.byCondition.nodes).toEqual([
      { status: 400, keyPrefix: expect.any(String), durationMs: 2.25, clientIp: '10.0.0.9' },
    ]);
    expect(a.apiKey.startsWith(d.byCondition.nodes[0].keyPrefix)).toBe(true);
    expect(d.key.requestLogsByApiKeyId.nodes).toEqual([{ requestId: 'op-b' }]);
  });

  test("docs/OPERATOR-GRAPHQL.md's v1.3 examples run", async () => {
    const doc = fs.readFileSync(path.resolve(__dirname, '../../docs/OPERATOR-GRAPHQL.md'), 'utf8');
    const blocks = [...doc.matchAll(/```graphql\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const keyView = blocks.find((b) => b.includes('query KeyView'))!;
    const lookup = blocks.find((b) => b.includes('requestLogEntries(requestId'))!;
    const k = await issueKey(db.owner);
    const a = await ops.gql(keyView, { since: '2026-11-24T00:00:00Z', key: k.keyId });
    expect(a.body.errors).toBeUndefined();
    expect(a.body.data!.apiKeyByRowId.requestLogsByApiKeyId.nodes).toEqual([]);
    const b = await ops.gql(lookup.replace('3f1c…', 'op-401'));
    expect(b.body.errors).toBeUndefined();
    expect(b.body.data!.requestLogEntries.nodes).toHaveLength(1);
  });

  test.each([
    ['since: PostgreSQL\'s "yesterday"', 'requestLogSince(since: "yesterday") { totalCount }', 200],
    ['since: month 13', 'requestLogSince(since: "2026-13-45T00:00:00Z") { totalCount }', 400],
    ['since: a number', 'hourlyUsageSince(since: 12) { totalCount }', 400],
    ['requestId: null', 'requestLogEntries(requestId: null) { totalCount }', 400],
    ['requestId: 5,000 characters', `requestLogEntries(requestId: "${'x'.repeat(5000)}") { totalCount }`, 200],
    ['requestId: NUL', 'requestLogEntries(requestId: "\\u0000") { totalCount }', 400],
    ['first: -1', 'allRequestLogs(first: -1) { totalCount }', 400],
    ['condition hour: not a time', 'allHourlyUsages(condition: { hour: "not a time" }) { totalCount }', 400],
  ])('%s: a client error or an answer, never a 5xx', async (_label, field, status) => {
    const res = await ops.gql(`{ ${field} }`);
    expect(res.status).toBeLessThan(500);
    if (status === 200) {
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data).toBeDefined();
    } else {
      expect(res.body.errors?.length).toBeGreaterThan(0);
      expect(JSON.stringify(res.body.errors)).not.toMatch(/internal|ECONN|syntax error at/i);
    }
  });
});

describe("operator GraphQL: a key's buckets now (ApiKey.bucketsNow)", () => {
  let db: TestDatabase;
  let redisServer: OwnRedisServer;
  let client: RedisClient;
  let ops: OperatorHarness;
  let plain: OperatorHarness;

  beforeAll(async () => {
    db = await createTestDatabase();
    redisServer = await OwnRedisServer.start();
    client = createRedisClient(redisServer.url, silentLogger);
    await redisReadyPromise(client);
    ops = await startOperatorHarness(db, { buckets: { redis: client, prefix: 'ops-buckets:' } });
    plain = await startOperatorHarness(db);
  });
  afterAll(async () => {
    await ops?.close();
    await plain?.close();
    client?.disconnect();
    await redisServer?.stop();
    await db?.drop();
  });

  const QUERY = `query($key: UUID!) { apiKeyByRowId(rowId: $key) { bucketsNow {
    minute { limit used remaining reset } day { limit used remaining reset } month { limit used remaining reset } } } }`;

  test('the counts the partner API made in Redis, against the plan, with each window end', async () => {
    await awaitRoomInMinute(10_000);
    const partner = await startPartner(db, { redis: client, redisPrefix: 'ops-buckets:' });
    try {
      const key = await issueKey(db.owner, { plan: await createPlan(db.owner, 5, null, 1000) });
      for (let i = 0; i < 3; i++)
        await request(partner.app).get('/api/v1/partner/test_endpoint').set(bearer(key.apiKey)).expect(200);
      const res = await ops.gql(QUERY, { key: key.keyId });
      expect(res.body.errors).toBeUndefined();
      const b = res.body.data!.apiKeyByRowId.bucketsNow;
      expect(b.minute).toMatchObject({ limit: 5, used: 3, remaining: 2 });
      expect(b.day).toMatchObject({ limit: null, used: 0, remaining: null });
      expect(b.month).toMatchObject({ limit: 1000, used: 3, remaining: 997 });
      expect(Date.parse(b.minute.reset) % 60_000).toBe(0);
      // real time: rate-limit windows follow the real clock
      expect(Date.parse(b.minute.reset)).toBeGreaterThan(Date.now() - 1000);
      // without shared counters: null, not an error
      const none = await plain.gql(QUERY, { key: key.keyId });
      expect(none.body.errors).toBeUndefined();
      expect(none.body.data!.apiKeyByRowId.bucketsNow).toBeNull();
    } finally {
      await partner.close();
    }
  });
});
