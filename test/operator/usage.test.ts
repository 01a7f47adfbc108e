import request from 'supertest';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { awaitRoomInMinute, bearer, createPlan, issueKey, startPartner } from '../support/partner';
import { startOperatorHarness, type OperatorHarness } from './support';

const TEST = '/api/v1/partner/test_endpoint';
// real time: usage days and rate-limit windows follow the server's real clock, not TEST_CLOCK
const day = (offset: number) => new Date(Date.now() - offset * 86_400_000).toISOString().slice(0, 10);
const sumBy = <T>(rows: T[], key: (r: T) => string, value: (r: T) => number) => {
  const out: Record<string, number> = {};
  for (const r of rows) out[key(r)] = (out[key(r)] ?? 0) + value(r);
  return out;
};
const fromGroups = (groups: { keys: string[]; sum: { requests: string } }[]) =>
  Object.fromEntries(groups.map((g) => [g.keys.join('|'), Number(g.sum.requests)]));

describe('operator GraphQL: usage aggregates and alerts', () => {
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

  test('aggregates (totals, by subscriber and day, by endpoint, since a day) equal the usage rows', async () => {
    const a1 = await issueKey(db.owner);
    const a2 = await issueKey(db.owner, { subscriberId: a1.subscriberId });
    const b1 = await issueKey(db.owner);
    const rows: { day: string; key_id: string; subscriber: string; endpoint: string; requests: number }[] = [];
    let n = 0;
    for (const offset of [0, 1, 2, 5]) {
      for (const key of [a1, a2, b1]) {
        for (const endpoint of ['bars', 'bars/:id', 'search']) {
          n += 1;
          if (n % 4 === 0) continue; // not every combination has traffic
          rows.push({
            day: day(offset),
            key_id: key.keyId,
            subscriber: key.subscriberId,
            endpoint,
            requests: ((n * 37) % 50) + 1,
          });
        }
      }
    }
    // As the partner API's usage recorder writes them.
    await db.owner.query('select api.record_usage($1)', [JSON.stringify(rows)]);

    const res = await ops.gql(
      `query($since: Date!) {
      allDailyUsages {
        totalCount
        aggregates { sum { requests } }
        bySubscriberDay: groupedAggregates(groupBy: [SUBSCRIBER_ID, DAY]) { keys sum { requests } }
        byEndpoint: groupedAggregates(groupBy: [ENDPOINT]) { keys sum { requests } }
      }
      dailyUsageSince(since: $since) { aggregates { sum { requests } } }
    }`,
      { since: day(1) },
    );
    expect(res.body.errors).toBeUndefined();
    const usage = res.body.data!.allDailyUsages;
    expect(usage.totalCount).toBe(rows.length);
    expect(Number(usage.aggregates.sum.requests)).toBe(rows.reduce((s, r) => s + r.requests, 0));
    expect(fromGroups(usage.bySubscriberDay)).toEqual(
      sumBy(
        rows,
        (r) => `${r.subscriber}|${r.day}`,
        (r) => r.requests,
      ),
    );
    expect(fromGroups(usage.byEndpoint)).toEqual(
      sumBy(
        rows,
        (r) => r.endpoint,
        (r) => r.requests,
      ),
    );
    expect(Number(res.body.data!.dailyUsageSince.aggregates.sum.requests)).toBe(
      rows.filter((r) => r.day >= day(1)).reduce((s, r) => s + r.requests, 0),
    );
  });

  test('requests made on the partner REST API add up to what the aggregates show', async () => {
    const partner = await startPartner(db);
    try {
      const key = await issueKey(db.owner);
      const calls = [TEST, TEST, TEST, '/api/v1/partner/bars/1', '/api/v1/partner/bars/2'];
      for (const path of calls) await request(partner.app).get(path).set(bearer(key.apiKey));
      await partner.guard.usage.flush();

      const res = await ops.gql(
        `query($id: UUID!) {
        subscriberByRowId(rowId: $id) {
          dailyUsagesBySubscriberId {
            aggregates { sum { requests } }
            groupedAggregates(groupBy: [ENDPOINT]) { keys sum { requests } }
          }
        }
      }`,
        { id: key.subscriberId },
      );
      expect(res.body.errors).toBeUndefined();
      const usage = res.body.data!.subscriberByRowId.dailyUsagesBySubscriberId;
      expect(Number(usage.aggregates.sum.requests)).toBe(calls.length);
      expect(fromGroups(usage.groupedAggregates)).toEqual({ test_endpoint: 3, 'bars/:id': 2 });
    } finally {
      await partner.close();
    }
  });

  test('alerts recorded by the rate limiter are readable; usageAlertsSince keeps to its window', async () => {
    const key = await issueKey(db.owner);
    // real time: usage days and rate-limit windows follow the server's real clock, not TEST_CLOCK
    const windowStart = new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000);
    await db.owner.query("select api.record_usage_alert($1, 'day', $2, 'warning', 800, 1000)", [
      key.keyId,
      windowStart,
    ]);
    // An old alert, outside "the last day"
    await db.owner.query(
      `insert into admin.usage_alerts (api_key_id, subscriber_id, bucket, window_start, level, used, "limit", created_at)
      values ($1, $2, 'day', $3, 'limit_reached', 1000, 1000, now() - interval '3 days')`,
      [key.keyId, key.subscriberId, new Date(windowStart.getTime() - 3 * 86_400_000)],
    );

    const res = await ops.gql(
      `query($since: Datetime!, $key: UUID!) {
      usageAlertsSince(since: $since, condition: { apiKeyId: $key }, orderBy: CREATED_AT_DESC) {
        nodes { level bucket used limit windowStart subscriberId apiKeyByApiKeyId { keyPrefix status } }
      }
      allUsageAlerts(condition: { apiKeyId: $key }) { totalCount }
    }`,
      { since: new Date(Date.now() - 86_400_000).toISOString(), key: key.keyId },
    );
    expect(res.body.errors).toBeUndefined();
    const nodes = res.body.data!.usageAlertsSince.nodes as { windowStart: string }[];
    expect(nodes).toEqual([
      {
        level: 'warning',
        bucket: 'day',
        used: 800,
        limit: 1000,
        windowStart: expect.any(String),
        subscriberId: key.subscriberId,
        apiKeyByApiKeyId: { keyPrefix: key.apiKey.slice(0, 12), status: 'active' },
      },
    ]);
    expect(new Date(nodes[0]!.windowStart).getTime()).toBe(windowStart.getTime());
    expect(res.body.data!.allUsageAlerts.totalCount).toBe(2);
  });

  test('crossing a limit on the partner REST API creates alerts visible in GraphQL', async () => {
    const plan = await createPlan(db.owner, 5);
    const key = await issueKey(db.owner, { plan });
    const partner = await startPartner(db);
    try {
      await awaitRoomInMinute(10_000);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await request(partner.app).get(TEST).set(bearer(key.apiKey))).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      await partner.guard.alerts.settle();

      const res = await ops.gql(
        `query($since: Datetime!, $key: UUID!) {
        usageAlertsSince(since: $since, condition: { apiKeyId: $key }, orderBy: CREATED_AT_ASC) { nodes { level bucket used limit } }
      }`,
        { since: new Date(Date.now() - 86_400_000).toISOString(), key: key.keyId },
      );
      expect(res.body.errors).toBeUndefined();
      const alerts = res.body.data!.usageAlertsSince.nodes as {
        level: string;
        bucket: string;
        used: number;
        limit: number;
      }[];
      expect(alerts.every((a) => a.bucket === 'minute' && a.limit === 5)).toBe(true);
      expect(alerts.map((a) => a.level)).toEqual(expect.arrayContaining(['warning', 'limit_reached']));
      expect(alerts.find((a) => a.level === 'limit_reached')!.used).toBe(5);
    } finally {
      await partner.close();
    }
  });
});
