import request from 'supertest';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { awaitRoomInMinute, bearer, createPlan, issueKey, silentLogger, startPartner } from '../support/partner';

const TEST = '/api/v1/partner/test_endpoint';

describe('usage accounting and usage alerts', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  test('requests per key, UTC day and route pattern, written in batches and on close', async () => {
    const partner = await startPartner(db);
    const { apiKey, keyId, subscriberId } = await issueKey(db.owner);
    const spy = jest.spyOn(partner.pool, 'query');
    const calls = [
      [TEST, 200],
      [TEST, 200],
      [TEST, 200],
      ['/api/v1/partner/bars/1', 404],
      ['/api/v1/partner/bars/2', 404], // unknown bars, same endpoint
      ['/api/v1/partner/bars?limit=0', 400],
      ['/api/v1/partner/nowhere', 404],
    ] as const;
    for (const [path, status] of calls) await request(partner.app).get(path).set(bearer(apiKey)).expect(status);
    await request(partner.app).get(TEST).expect(401); // not a partner's request: not counted
    // No write per request: only the routes' own queries ran.
    expect(spy.mock.calls.filter(([sql]) => String(sql).includes('record_usage'))).toHaveLength(0);
    spy.mockRestore();
    const before = await db.owner.query('select count(*)::int as n from admin.daily_usage where api_key_id = $1', [
      keyId,
    ]);
    expect(before.rows[0].n).toBe(0);

    await partner.close(); // a clean shutdown writes what is pending
    const { rows } = await db.owner.query(
      `select day::text, subscriber_id, endpoint, requests::int, rate_limited::int from admin.daily_usage
        where api_key_id = $1 order by endpoint`,
      [keyId],
    );
    // real time: usage days and rate-limit windows follow the server's real clock, not TEST_CLOCK
    const today = new Date().toISOString().slice(0, 10);
    expect(rows).toEqual([
      { day: today, subscriber_id: subscriberId, endpoint: '(none)', requests: 1, rate_limited: 0 },
      { day: today, subscriber_id: subscriberId, endpoint: 'bars', requests: 1, rate_limited: 0 },
      { day: today, subscriber_id: subscriberId, endpoint: 'bars/:id', requests: 2, rate_limited: 0 },
      { day: today, subscriber_id: subscriberId, endpoint: 'test_endpoint', requests: 3, rate_limited: 0 },
    ]);
    const key = await db.owner.query<{ last_used_at: Date }>('select last_used_at from admin.api_keys where id = $1', [
      keyId,
    ]);
    // last_used_at is a real-time stamp (the usage flush's)
    expect(Date.now() - key.rows[0]!.last_used_at.getTime()).toBeLessThan(60_000);
  });

  test('a failed usage write is kept and retried', async () => {
    const partner = await startPartner(db);
    const { apiKey, keyId } = await issueKey(db.owner);
    await request(partner.app).get(TEST).set(bearer(apiKey)).expect(200);
    const spy = jest
      .spyOn(partner.pool, 'query')
      .mockImplementationOnce(() => Promise.reject(new Error('connection lost')));
    await partner.guard.usage.flush();
    spy.mockRestore();
    await request(partner.app).get(TEST).set(bearer(apiKey)).expect(200);
    await partner.guard.usage.flush();
    const { rows } = await db.owner.query(
      'select sum(requests)::int as n from admin.daily_usage where api_key_id = $1',
      [keyId],
    );
    expect(rows[0].n).toBe(2);
    await partner.close();
  });

  test('alerts at 80/90/100% of a bucket: exactly once each, even when two instances cross them concurrently', async () => {
    await awaitRoomInMinute(10_000);
    const logged: string[] = [];
    const logger = silentLogger.child({});
    logger.warn = ((obj: { alert?: { level: string } }) => {
      if (obj?.alert) logged.push(obj.alert.level);
    }) as typeof logger.warn;
    // Without Redis each instance counts on its own, so both reach every threshold.
    const [a, b] = await Promise.all([startPartner(db, { logger }), startPartner(db, { logger })]);
    const plan = await createPlan(db.owner, 10, 100, null);
    const { apiKey, keyId, subscriberId } = await issueKey(db.owner, { plan });
    const results = await Promise.all(
      [a, b].flatMap((p) => Array.from({ length: 12 }, () => request(p.app).get(TEST).set(bearer(apiKey)))),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(20);
    expect(results.filter((r) => r.status === 429)).toHaveLength(4);
    await Promise.all([a.guard.alerts.settle(), b.guard.alerts.settle()]);

    const { rows } = await db.owner.query(
      `select subscriber_id, bucket, level, used, "limit", window_start from admin.usage_alerts where api_key_id = $1 order by used`,
      [keyId],
    );
    // real time: usage days and rate-limit windows follow the server's real clock, not TEST_CLOCK
    const minuteStart = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    expect(rows).toEqual([
      {
        subscriber_id: subscriberId,
        bucket: 'minute',
        level: 'warning',
        used: 8,
        limit: 10,
        window_start: minuteStart,
      },
      {
        subscriber_id: subscriberId,
        bucket: 'minute',
        level: 'high_warning',
        used: 9,
        limit: 10,
        window_start: minuteStart,
      },
      {
        subscriber_id: subscriberId,
        bucket: 'minute',
        level: 'limit_reached',
        used: 10,
        limit: 10,
        window_start: minuteStart,
      },
    ]);
    expect(logged.sort()).toEqual(['high_warning', 'limit_reached', 'warning']); // logged once each
    // Partners never see alerts.
    for (const r of results) expect(JSON.stringify(r.body) + JSON.stringify(r.headers)).not.toMatch(/warning|alert/i);
    await Promise.all([a.close(), b.close()]);
  });

  describe('an alert write PostgreSQL ends with a deadlock (nothing written)', () => {
    // What the server logged, and the partner pool's queries that recorded an alert.
    async function alertWith(failures: Array<'deadlock' | 'connection lost'>) {
      const logged = { alerts: [] as string[], errors: [] as string[] };
      const logger = silentLogger.child({});
      logger.warn = ((obj: { alert?: { level: string } }) => {
        if (obj?.alert) logged.alerts.push(obj.alert.level);
      }) as typeof logger.warn;
      logger.error = ((_obj: unknown, message: string) => void logged.errors.push(message)) as typeof logger.error;
      const partner = await startPartner(db, { logger });
      const { keyId, subscriberId } = await issueKey(db.owner);
      const query = partner.pool.query.bind(partner.pool) as (...args: unknown[]) => Promise<unknown>;
      const left = [...failures];
      let calls = 0;
      const spy = jest.spyOn(partner.pool, 'query').mockImplementation(((...args: unknown[]) => {
        if (!String(args[0]).includes('record_usage_alert')) return query(...args);
        calls++;
        const failure = left.shift();
        if (failure === 'connection lost') return Promise.reject(new Error('connection lost'));
        // a real 40P01 from PostgreSQL, as when it ends one of two deadlocked transactions
        if (failure === 'deadlock')
          return query(`do $$ begin raise exception 'deadlock detected' using errcode = 'deadlock_detected'; end $$`);
        return query(...args);
      }) as never);
      const resetTime = new Date(Date.UTC(2026, 10, 27, 12, 1));
      partner.guard.alerts.check({ keyId, subscriberId }, [{ bucket: 'minute', used: 8, limit: 10, resetTime }]);
      await partner.guard.alerts.settle();
      spy.mockRestore();
      const { rows } = await db.owner.query(
        `select level, used, window_start from admin.usage_alerts where api_key_id = $1`,
        [keyId],
      );
      await partner.close();
      return { logged, calls, rows };
    }

    test('is made again: one deadlock, then two, and the alert is recorded once', async () => {
      for (const failures of [['deadlock'], ['deadlock', 'deadlock']] as const) {
        const { logged, calls, rows } = await alertWith([...failures]);
        expect(calls).toBe(failures.length + 1);
        expect(rows).toEqual([{ level: 'warning', used: 8, window_start: new Date(Date.UTC(2026, 10, 27, 12, 0)) }]);
        expect(logged).toEqual({ alerts: ['warning'], errors: [] });
      }
    });

    test('after three deadlocks, or at once on any other error, it is given up and logged', async () => {
      for (const failures of [['deadlock', 'deadlock', 'deadlock'], ['connection lost']] as const) {
        const { logged, calls, rows } = await alertWith([...failures]);
        expect(calls).toBe(failures.length);
        expect(rows).toEqual([]);
        expect(logged).toEqual({ alerts: [], errors: ['could not record a usage alert'] });
      }
    });
  });
});
