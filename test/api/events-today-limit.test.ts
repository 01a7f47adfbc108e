/**
 * GET bars_by_city's events_today_limit and its announced default (issue 34; the declaration in
 * server/contract/endpoints.ts DEPRECATIONS, the mechanism in test/api/deprecations-default.test.ts):
 * with the REAL declaration and an injected deprecation clock, a city with more than 100 events
 * today gets all of them and the three headers until 2027-05-25, then the first 100 without headers;
 * a smaller city, a group and a request that sends the parameter get no headers.
 */
import request from 'supertest';
import { DEPRECATIONS, EVENTS_TODAY_DEFAULT } from '../../server/contract/endpoints';
import { testNow } from '../support/clock';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { bearer, issueKey, startPartner, type PartnerInstance } from '../support/partner';

const P = '/api/v1/partner';
const at = (iso: string) => Date.parse(iso);
const BIG = EVENTS_TODAY_DEFAULT + 1;

describe('events_today_limit and the announced default of 100', () => {
  let db: TestDatabase;
  let partner: PartnerInstance;
  let key: string;
  let now = at('2026-12-01T12:00:00Z');

  beforeAll(async () => {
    db = await createTestDatabase();
    const fx = fixtures(db.owner);
    // events starting in the first minutes of the city's local today (as of the answer clock)
    const today = async (cityId: number, barId: number, n: number) => {
      const { rows } = await db.owner.query<{ start: Date }>(
        `select private.local_day_start(($1::timestamptz at time zone c.time_zone)::date, c.time_zone) as start
         from private.cities c where c.id = $2`,
        [testNow(), cityId],
      );
      const startOf = (m: number) => new Date(rows[0]!.start.getTime() + m * 60_000).toISOString();
      for (let i = 0; i < n; i++) {
        await fx.event(barId, { title: `event ${i + 1}`, start_at: startOf(i), end_at: startOf(i + 60) });
      }
    };
    const big = await fx.city({ name: 'Big City', state: 'NY', time_zone: 'America/New_York' });
    const loud = await fx.bar(big, { name: 'Loud Bar' });
    const quiet = await fx.bar(big, { name: 'Quiet Bar' });
    await today(big, loud, BIG - 2);
    await today(big, quiet, 2);
    await fx.group(big, 'quiet', [quiet]);
    const small = await fx.city({ name: 'Small Town', state: 'NY', time_zone: 'America/New_York' });
    await today(small, await fx.bar(small, { name: 'Only Bar' }), 3);
    partner = await startPartner(db, { deprecations: { list: DEPRECATIONS, now: () => now } });
    key = (await issueKey(db.owner)).apiKey;
  }, 60_000);
  afterAll(async () => {
    await partner?.close();
    await db?.drop();
  });

  const get = (path: string) => request(partner.app).get(`${P}/bars_by_city/NY/${path}`).set(bearer(key));
  const summary = (res: request.Response) => ({
    events: (res.body.events_today as unknown[]).length,
    total: res.body.events_today_total as number,
    sunset: res.headers.sunset as string | undefined,
  });
  const SUNSET = 'Tue, 25 May 2027 00:00:00 GMT';

  test('before the announcement: all events, no headers', async () => {
    now = at('2026-11-24T23:59:59Z');
    expect(summary(await get('Big%20City').expect(200))).toEqual({ events: BIG, total: BIG, sunset: undefined });
  });

  test('from the announcement: all events still, and the headers where 100 would cut', async () => {
    now = at('2026-12-01T12:00:00Z');
    const res = await get('Big%20City').expect(200);
    expect(summary(res)).toEqual({ events: BIG, total: BIG, sunset: SUNSET });
    expect(res.headers.deprecation).toBe(`@${Date.UTC(2026, 10, 25) / 1000}`);
    expect(res.headers.link).toBe('</api/v1/partner/changelog>; rel="deprecation"');
    // not cut by the new default: no headers
    expect(summary(await get('Small%20Town').expect(200))).toEqual({ events: 3, total: 3, sunset: undefined });
    expect(summary(await get('Big%20City?group_slug=quiet').expect(200))).toEqual({
      events: 2,
      total: 2,
      sunset: undefined,
    });
    // the parameter sent: its value, no headers
    expect(summary(await get('Big%20City?events_today_limit=1000').expect(200))).toEqual({
      events: BIG,
      total: BIG,
      sunset: undefined,
    });
    expect(summary(await get('Big%20City?events_today_limit=7').expect(200))).toEqual({
      events: 7,
      total: BIG,
      sunset: undefined,
    });
  });

  test('GET usage names it among the deprecated calls', async () => {
    now = at('2026-12-01T13:00:00Z');
    await get('Big%20City').expect(200);
    await partner.guard.deprecatedCalls.flush();
    const usage = await request(partner.app).get(`${P}/usage`).set(bearer(key)).expect(200);
    expect(usage.body.deprecated_calls).toEqual([
      expect.objectContaining({
        what: 'GET /bars_by_city/{state}/{city} default of events_today_limit',
        sunset: '2027-05-25T00:00:00Z',
      }),
    ]);
  });

  test('from the sunset: the first 100, counted in full, without headers; more on request', async () => {
    now = at('2027-05-25T00:00:00Z');
    const res = await get('Big%20City').expect(200);
    expect(summary(res)).toEqual({ events: EVENTS_TODAY_DEFAULT, total: BIG, sunset: undefined });
    expect(res.headers.deprecation).toBeUndefined();
    expect(summary(await get('Big%20City?events_today_limit=1000').expect(200)).events).toBe(BIG);
  });
});
