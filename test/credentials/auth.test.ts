import request from 'supertest';
import { hashApiKey } from '../../server/credentials/key';
import { createTestDatabase, type TestDatabase } from '../support/db';
import {
  awaitRoomInMinute,
  bearer,
  issueKey,
  startPartner,
  type IssuedKey,
  type PartnerInstance,
} from '../support/partner';

const TEST = '/api/v1/partner/test_endpoint';

async function waitFor(what: () => Promise<boolean>, withinMs: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await what()) return Date.now() - started;
    if (Date.now() - started > withinMs) throw new Error(`not within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('API key authentication', () => {
  let db: TestDatabase;
  let a: PartnerInstance;
  let b: PartnerInstance;
  let key: IssuedKey;

  beforeAll(async () => {
    db = await createTestDatabase();
    [a, b] = await Promise.all([startPartner(db), startPartner(db)]);
    key = await issueKey(db.owner);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await db?.drop();
  });

  test('a valid key as Bearer and as X-API-Key: 200 with the identity', async () => {
    for (const headers of [
      bearer(key.apiKey),
      { 'X-API-Key': key.apiKey },
      { authorization: `bearer ${key.apiKey}` },
    ]) {
      const res = await request(a.app).get(TEST).set(headers);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ subscriber_id: key.subscriberId, plan: 'standard' });
    }
  });

  test('Bearer is preferred over X-API-Key', async () => {
    const res = await request(a.app)
      .get(TEST)
      .set({ ...bearer(key.apiKey), 'X-API-Key': 'pbk_' + 'x'.repeat(43) });
    expect(res.status).toBe(200);
    const other = await request(a.app)
      .get(TEST)
      .set({ ...bearer('pbk_' + 'x'.repeat(43)), 'X-API-Key': key.apiKey });
    expect(other.status).toBe(401);
  });

  test.each([
    ['no key at all', {}, 'Missing API key'],
    ['an empty X-API-Key', { 'X-API-Key': '  ' }, 'Missing API key'],
    ['a key of the wrong format', { 'X-API-Key': 'hello' }, 'Invalid API key'],
    ['a key one character short', { 'X-API-Key': 'pbk_' + 'a'.repeat(42) }, 'Invalid API key'],
    ['Basic authorization', { Authorization: 'Basic dXNlcjpwYXNz' }, 'Invalid API key'],
    [
      'Basic authorization beside an X-API-Key',
      { Authorization: 'Basic dXNlcjpwYXNz', 'X-API-Key': 'KEY' },
      'Invalid API key',
    ],
    ['a Bearer without a token', { Authorization: 'Bearer' }, 'Invalid API key'],
    ['a well-formed key that does not exist', { 'X-API-Key': 'pbk_' + 'A'.repeat(43) }, 'Invalid API key'],
  ])('%s: 401', async (_what, headers, message) => {
    const res = await request(a.app)
      .get(TEST)
      .set(
        Object.fromEntries(
          Object.entries(headers as Record<string, string>).map(([k, v]) => [k, v === 'KEY' ? key.apiKey : v]),
        ),
      );
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: message, request_id: res.headers['x-request-id'] });
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  });

  test('a malformed key is refused without a database lookup', async () => {
    const spy = jest.spyOn(a.pool, 'query');
    try {
      const res = await request(a.app).get(TEST).set('X-API-Key', 'pbk_not-a-key');
      expect(res.status).toBe(401);
      expect(spy).not.toHaveBeenCalled();
      await request(a.app)
        .get(TEST)
        .set('X-API-Key', 'pbk_' + 'B'.repeat(43));
      expect(spy).toHaveBeenCalledTimes(1); // well-formed: looked up
    } finally {
      spy.mockRestore();
    }
  });

  test('a known key is served from the cache (no database round trip per request)', async () => {
    await request(a.app).get(TEST).set(bearer(key.apiKey)).expect(200);
    const spy = jest.spyOn(a.pool, 'query');
    try {
      // The route itself calls the database; the guard must not.
      await request(a.app).get('/api/v1/partner/no_such_path').set(bearer(key.apiKey)).expect(404);
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  test('precedence: revoked before suspended before expired', async () => {
    // real time: key validity is checked against the real clock
    const k = await issueKey(db.owner, { endsAt: new Date(Date.now() - 60_000) });
    const status = async () => {
      const res = await request(a.app).get(TEST).set(bearer(k.apiKey));
      return [res.status, res.body.error];
    };
    expect(await status()).toEqual([403, 'Subscription has expired']);
    await db.owner.query('select admin.suspend_subscriber($1)', [k.subscriberId]);
    await waitFor(async () => (await status())[1] === 'Subscriber account is suspended', 1000);
    await db.owner.query('select admin.revoke_key($1)', [k.keyId]);
    await waitFor(async () => (await status())[1] === 'API key has been revoked', 1000);
    expect(await status()).toEqual([403, 'API key has been revoked']);
  });

  test('every state change is seen within 1 s by both instances', async () => {
    const k = await issueKey(db.owner);
    // Limits far above what the polling below can use up: a stale answer polled while a change is on
    // its way is a counted 200, and a plan of 5 a minute was once full before the plan change was checked.
    const plan = await db.owner.query<{ name: string }>(
      "select name from admin.create_plan('gold-' || substr(md5(random()::text), 1, 6), 5000, null, null)",
    );
    const expectEverywhere = async (check: (res: request.Response) => boolean) => {
      for (const instance of [a, b]) {
        const ms = await waitFor(async () => check(await request(instance.app).get(TEST).set(bearer(k.apiKey))), 1000);
        expect(ms).toBeLessThan(1000);
      }
    };
    // Warm both caches first.
    await expectEverywhere((res) => res.status === 200);

    await db.owner.query('select admin.suspend_subscriber($1)', [k.subscriberId]);
    await expectEverywhere((res) => res.status === 403 && res.body.error === 'Subscriber account is suspended');
    await db.owner.query('select admin.activate_subscriber($1)', [k.subscriberId]);
    await expectEverywhere((res) => res.status === 200);

    await db.owner.query('select admin.set_subscription_ends_at($1, $2)', [
      k.subscriberId,
      new Date(Date.now() - 1000),
    ]);
    await expectEverywhere((res) => res.status === 403 && res.body.error === 'Subscription has expired');
    await db.owner.query('select admin.set_subscription_ends_at($1, null)', [k.subscriberId]);
    await expectEverywhere((res) => res.status === 200);

    await db.owner.query('select admin.set_subscriber_plan($1, $2)', [k.subscriberId, plan.rows[0]!.name]);
    await expectEverywhere(
      (res) =>
        res.status === 200 &&
        res.body.plan === plan.rows[0]!.name &&
        res.headers['x-ratelimit-limit-minute'] === '5000',
    );
    // Plan limits changed directly by a DBA: also seen.
    await db.owner.query('update admin.plans set per_minute = 7000 where name = $1', [plan.rows[0]!.name]);
    await expectEverywhere((res) => res.headers['x-ratelimit-limit-minute'] === '7000');

    await db.owner.query('select admin.revoke_key($1)', [k.keyId]);
    await expectEverywhere((res) => res.status === 403 && res.body.error === 'API key has been revoked');
  });

  test('a subscription expires as time passes, without any notification', async () => {
    // real time: key validity is checked against the real clock
    const endsAt = Date.now() + 4000;
    const k = await issueKey(db.owner, { endsAt: new Date(endsAt) });
    const spy = jest.spyOn(a.pool, 'query');
    try {
      // Issuing the key notifies every instance, which empties its cache whenever the notification
      // arrives (late on a loaded machine): wait until two requests in a row are answered from the cache.
      let cachedInARow = 0;
      while (cachedInARow < 2) {
        expect(Date.now()).toBeLessThan(endsAt - 500);
        spy.mockClear();
        await request(a.app).get(TEST).set(bearer(k.apiKey)).expect(200);
        const authenticated = spy.mock.calls.some(([sql]) => String(sql).includes('api.authenticate'));
        cachedInARow = authenticated ? 0 : cachedInARow + 1;
        await new Promise((r) => setTimeout(r, 50));
      }
      spy.mockClear();
      await new Promise((r) => setTimeout(r, endsAt + 100 - Date.now()));
      const res = await request(a.app).get(TEST).set(bearer(k.apiKey));
      expect([res.status, res.body.error]).toEqual([403, 'Subscription has expired']);
      expect(spy).not.toHaveBeenCalled(); // decided from the cached identity
    } finally {
      spy.mockRestore();
    }
  });

  test('a change made while the listener is reconnecting is not missed', async () => {
    const k = await issueKey(db.owner);
    await request(a.app).get(TEST).set(bearer(k.apiKey)).expect(200);
    expect(a.guard.listener.isListening).toBe(true);
    // Kill every listener connection of this database, then change the state at once.
    await db.owner.query(
      "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'partner-api-credentials-listener'",
    );
    await db.owner.query('select admin.suspend_subscriber($1)', [k.subscriberId]);
    for (const instance of [a, b]) {
      const ms = await waitFor(
        async () => (await request(instance.app).get(TEST).set(bearer(k.apiKey))).status === 403,
        1000,
      );
      expect(ms).toBeLessThan(1000);
    }
    await waitFor(async () => a.guard.listener.isListening && b.guard.listener.isListening, 5000);
    await db.owner.query('select admin.activate_subscriber($1)', [k.subscriberId]);
    await waitFor(async () => (await request(a.app).get(TEST).set(bearer(k.apiKey))).status === 200, 1000);
  });

  describe('failed authentication limit', () => {
    let c: PartnerInstance;
    beforeAll(async () => {
      c = await startPartner(db);
    });
    afterAll(() => c.close());

    test('more than 30 failures a minute from one address: 429; valid (cached) keys still served', async () => {
      await awaitRoomInMinute(15_000);
      await request(c.app).get(TEST).set(bearer(key.apiKey)).expect(200); // now in c's identity cache
      for (let i = 0; i < 30; i++) {
        const res = await request(c.app)
          .get(TEST)
          .set(i % 2 ? { 'X-API-Key': 'nope' } : {});
        expect(res.status).toBe(401);
      }
      const res = await request(c.app)
        .get(TEST)
        .set('X-API-Key', 'pbk_' + 'C'.repeat(43));
      expect(res.status).toBe(429);
      expect(res.body).toEqual({
        error: 'Rate limit exceeded',
        limit: 30,
        period: 'minute',
        request_id: res.headers['x-request-id'],
      });
      const retryAfter = Number(res.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      await request(c.app)
        .get(TEST)
        .set(bearer('pbk_' + 'D'.repeat(43)))
        .expect(429);
      await request(c.app).get(TEST).set(bearer(key.apiKey)).expect(200);
    });

    test("a blocked address: a valid key whose cache entry aged out is read again and served; others aren't looked up", async () => {
      const aging = await startPartner(db, { identityCache: { maxAgeMs: 300 } });
      try {
        await awaitRoomInMinute(15_000);
        await request(aging.app).get(TEST).set(bearer(key.apiKey)).expect(200); // cached, valid
        for (let i = 0; i < 30; i++) await request(aging.app).get(TEST).expect(401);
        await request(aging.app).get(TEST).expect(429); // the address is blocked
        await new Promise((r) => setTimeout(r, 400)); // the key's entry has aged out
        expect(aging.guard.cache.peek(hashApiKey(key.apiKey))).toBeUndefined();
        const lookups = jest.spyOn(aging.guard.cache, 'lookup');
        await request(aging.app).get(TEST).set(bearer(key.apiKey)).expect(200);
        expect(lookups).toHaveBeenCalledTimes(1); // read again
        lookups.mockClear();
        await request(aging.app)
          .get(TEST)
          .set(bearer('pbk_' + 'G'.repeat(43)))
          .expect(429);
        expect(lookups).not.toHaveBeenCalled(); // an unknown key is not looked up from a blocked address
      } finally {
        await aging.close();
      }
    });
  });
});
