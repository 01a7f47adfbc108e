import { randomBytes } from 'node:crypto';
import { createRedisClient, type RedisClient } from '../../server/redis';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { listen, type Listening } from '../support/http';
import {
  awaitRoomInMinute,
  bearer,
  createPlan,
  issueKey,
  silentLogger,
  startPartner,
  type PartnerInstance,
} from '../support/partner';
import { describeWithRedis, redisUrl } from '../support/redis';
import { OwnRedisServer } from '../support/redis-server';

const TEST = '/api/v1/partner/test_endpoint';

function ready(client: RedisClient): Promise<void> {
  return client.status === 'ready'
    ? Promise.resolve()
    : new Promise((resolve) => client.once('ready', () => resolve()));
}

async function deleteKeys(client: RedisClient, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length) await client.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}

describeWithRedis('rate limits shared through Redis', () => {
  let db: TestDatabase;
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const clients: RedisClient[] = [];
  let a: PartnerInstance;
  let b: PartnerInstance;
  let servers: Listening[];

  beforeAll(async () => {
    db = await createTestDatabase();
    for (let i = 0; i < 2; i++) clients.push(createRedisClient(redisUrl!, silentLogger));
    await Promise.all(clients.map(ready));
    [a, b] = (await Promise.all([0, 1].map((i) => startPartner(db, { redis: clients[i], redisPrefix: prefix })))) as [
      PartnerInstance,
      PartnerInstance,
    ];
    servers = await Promise.all([listen(a.app), listen(b.app)]);
  });
  afterAll(async () => {
    await Promise.all((servers ?? []).map((s) => s.close()));
    await Promise.all([a?.close(), b?.close()]);
    if (clients[0]) await deleteKeys(clients[0], prefix);
    await Promise.all(clients.map((c) => c.quit()));
    await db?.drop();
  });

  test('1,000 concurrent requests of a 600/minute key on two instances: exactly 600 served, alerts once, usage exact', async () => {
    await awaitRoomInMinute(25_000);
    const { apiKey, keyId } = await issueKey(db.owner);
    const results = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => servers[i % 2]!.get(TEST, bearer(apiKey))),
    );
    const byStatus = new Map<number, number>();
    for (const r of results) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
    expect(Object.fromEntries(byStatus)).toEqual({ 200: 600, 429: 400 });
    for (const r of results.filter((x) => x.status === 429)) {
      expect(JSON.parse(r.body)).toMatchObject({ error: 'Rate limit exceeded', limit: 600, period: 'minute' });
      expect(r.headers['x-ratelimit-remaining-minute']).toBe('0');
    }

    // 80%, 90% and 100% of the minute: one alert each, though both instances crossed them.
    await Promise.all([a.guard.alerts.settle(), b.guard.alerts.settle()]);
    const alerts = await db.owner.query(
      'select level, bucket, used, "limit" from admin.usage_alerts where api_key_id = $1 order by used',
      [keyId],
    );
    expect(alerts.rows).toEqual([
      { level: 'warning', bucket: 'minute', used: 480, limit: 600 },
      { level: 'high_warning', bucket: 'minute', used: 540, limit: 600 },
      { level: 'limit_reached', bucket: 'minute', used: 600, limit: 600 },
    ]);

    // 429s refused in process (the bucket known full) reach Redis with the hourly push, every 100 ms: push now
    await Promise.all([a.guard.history.flush(), b.guard.history.flush()]);
    await Promise.all([a.guard.usage.flush(), b.guard.usage.flush()]);
    await Promise.all([a.guard.sharedUsage!.flush(), b.guard.sharedUsage!.flush()]); // counted in Redis by the script
    const usage = await db.owner.query<{ endpoint: string; requests: number; rate_limited: number }>(
      'select endpoint, requests::int, rate_limited::int from admin.daily_usage where api_key_id = $1 order by endpoint',
      [keyId],
    );
    expect(usage.rows).toEqual([
      { endpoint: '(none)', requests: 0, rate_limited: 400 },
      { endpoint: 'test_endpoint', requests: 600, rate_limited: 0 },
    ]);
  });

  test('a request rejected by the day bucket takes its minute count back in Redis', async () => {
    await awaitRoomInMinute(5000);
    const plan = await createPlan(db.owner, 100, 3, null);
    const { apiKey, keyId } = await issueKey(db.owner, { plan });
    for (let i = 0; i < 3; i++) expect((await servers[i % 2]!.get(TEST, bearer(apiKey))).status).toBe(200);
    const rejected = await Promise.all([servers[0]!.get(TEST, bearer(apiKey)), servers[1]!.get(TEST, bearer(apiKey))]);
    expect(rejected.map((r) => [r.status, JSON.parse(r.body).period])).toEqual([
      [429, 'day'],
      [429, 'day'],
    ]);
    await new Promise((r) => setTimeout(r, 100));
    // real time: usage days and rate-limit windows follow the server's real clock, not TEST_CLOCK
    const minuteKey = `${prefix}{${keyId}}:m:${Math.floor(Date.now() / 60_000) * 60_000}`;
    expect(await clients[0]!.get(minuteKey)).toBe('3');
    expect(await clients[0]!.pttl(minuteKey)).toBeGreaterThan(0);
  });

  test('the count is shared: a request on one instance lowers Remaining on the other', async () => {
    await awaitRoomInMinute(5000);
    const plan = await createPlan(db.owner, 50, null, null);
    const { apiKey } = await issueKey(db.owner, { plan });
    const remaining = async (s: Listening) =>
      Number((await s.get(TEST, bearer(apiKey))).headers['x-ratelimit-remaining-minute']);
    expect(await remaining(servers[0]!)).toBe(49);
    expect(await remaining(servers[1]!)).toBe(48);
    expect(await remaining(servers[0]!)).toBe(47);
  });
});

describeWithRedis('when Redis fails mid-flight', () => {
  let db: TestDatabase;
  let redisServer: OwnRedisServer;
  let client: RedisClient;
  let partner: PartnerInstance;
  let server: Listening;
  const logged: { level: number; msg: string }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    redisServer = await OwnRedisServer.start();
    const logger = silentLogger.child({});
    logger.level = 'warn';
    // Capture what the server logs about Redis.
    const capture = (level: number) => (obj: unknown, msg?: string) => {
      logged.push({ level, msg: typeof obj === 'string' ? obj : (msg ?? '') });
    };
    logger.error = capture(50) as typeof logger.error;
    logger.warn = capture(40) as typeof logger.warn;
    client = createRedisClient(redisServer.url, logger);
    await ready(client);
    partner = await startPartner(db, { redis: client, redisPrefix: 'own:', logger });
    server = await listen(partner.app);
  });
  afterAll(async () => {
    await server?.close();
    await partner?.close();
    client?.disconnect();
    await redisServer?.stop();
    await db?.drop();
  });

  test('requests keep being served (per-instance counting, logged), and shared counting resumes when Redis returns', async () => {
    await awaitRoomInMinute(40_000);
    const plan = await createPlan(db.owner, 1000, null, null);
    const small = await createPlan(db.owner, 5, null, null);
    const { apiKey } = await issueKey(db.owner, { plan });
    const limited = await issueKey(db.owner, { plan: small });
    const get = () => server.get(TEST, bearer(apiKey));

    for (let i = 1; i <= 3; i++) expect((await get()).headers['x-ratelimit-remaining-minute']).toBe(String(1000 - i));
    expect(await client.keys('own:*:m:*')).toHaveLength(1); // counted in Redis

    // Stopped while requests are in flight: none fails.
    const other = await issueKey(db.owner, { plan });
    const inFlight = Array.from({ length: 30 }, () => server.get(TEST, bearer(other.apiKey)));
    await redisServer.stop();
    const inFlightResults = await Promise.all(inFlight);
    expect(inFlightResults.map((r) => r.status)).toEqual(Array(30).fill(200));
    expect(inFlightResults.every((r) => r.headers['x-ratelimit-limit-minute'] === '1000')).toBe(true);

    // After: every header, counting in process from zero.
    const during = await Promise.all(Array.from({ length: 20 }, () => get()));
    expect(during.map((r) => r.status)).toEqual(Array(20).fill(200));
    const remainingDuring = during.map((r) => Number(r.headers['x-ratelimit-remaining-minute'])).sort((x, y) => y - x);
    expect(remainingDuring).toEqual(Array.from({ length: 20 }, (_, i) => 999 - i));
    // Limits are still enforced (per instance).
    const limitedResults = [];
    for (let i = 0; i < 6; i++) limitedResults.push((await server.get(TEST, bearer(limited.apiKey))).status);
    expect(limitedResults).toEqual([200, 200, 200, 200, 200, 429]);
    expect(logged.some((l) => l.level === 50 && /Redis unavailable/.test(l.msg))).toBe(true);

    await redisServer.start();
    await ready(client);
    await new Promise((r) => setTimeout(r, 100)); // scripts reloaded on 'ready'
    const after = await get();
    expect(after.status).toBe(200);
    // The restarted Redis is empty (no persistence): shared counting starts again there.
    expect(after.headers['x-ratelimit-remaining-minute']).toBe('999');
    expect(await client.keys('own:*:m:*')).toHaveLength(1);
    expect(logged.some((l) => /Redis is back/.test(l.msg))).toBe(true);
  });
});
