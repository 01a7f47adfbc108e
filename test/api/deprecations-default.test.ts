/**
 * A deprecation of a parameter's DEFAULT (Deprecation.newDefault; docs/COMPATIBILITY.md), declared
 * here on GET cities' per_page with an injected clock: from `since`, an answer the new default would
 * change carries Deprecation/Sunset/Link (a 304 too) and is counted; one it would not change, or a
 * request that sends the parameter, carries nothing; from the sunset the new default applies, with
 * no 410. The real declaration (bars_by_city's events_today_limit): test/api/events-today-limit.test.ts.
 */
import request from 'supertest';
import { validateDeprecations } from '../../server/contract/deprecations';
import { E, type Deprecation } from '../../server/contract/endpoints';
import { openApiFor } from '../../server/openapi/document';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { bearer, issueKey, startPartner, type PartnerInstance } from '../support/partner';

const P = '/api/v1/partner';
const at = (iso: string) => Date.parse(iso);

// more than 2 cities in the answer: the new default (2 a page) would cut it
const PER_PAGE_DEFAULT: Deprecation = {
  endpoint: E.cities,
  parameter: 'per_page',
  newDefault: {
    to: '2',
    affects: (body) => (JSON.parse(body) as { pagination: { total_count: number } }).pagination.total_count > 2,
  },
  since: '2026-01-15',
  sunset: '2026-07-15',
  replacement: 'send per_page',
  changelog: '/api/v1/partner/changelog#2026-01-15-cities-per-page',
};

describe('a declared new default: validation and the OpenAPI document', () => {
  test('refused without its parameter or its value', () => {
    const { parameter: _, ...noParameter } = PER_PAGE_DEFAULT;
    expect(() => validateDeprecations([noParameter])).toThrow('a new default needs its parameter');
    expect(() =>
      validateDeprecations([{ ...PER_PAGE_DEFAULT, newDefault: { ...PER_PAGE_DEFAULT.newDefault!, to: '' } }]),
    ).toThrow('a new default needs its value (to)');
    expect(() => validateDeprecations([PER_PAGE_DEFAULT])).not.toThrow();
  });

  test('the parameter is described, not deprecated; no 410 is documented', () => {
    const doc = openApiFor([PER_PAGE_DEFAULT]) as unknown as {
      paths: Record<string, { get: { parameters: Record<string, unknown>[]; responses: Record<string, unknown> } }>;
      components: { responses: Record<string, unknown> };
    };
    const op = doc.paths['/cities']!.get;
    const param = op.parameters.find((p) => p.name === 'per_page')!;
    expect(param.deprecated).toBeUndefined();
    expect(param.description).toContain('The default becomes 2: Deprecated since 2026-01-15, removed on 2026-07-15');
    expect(op.responses['410']).toBeUndefined();
    expect(doc.components.responses.Gone).toBeUndefined();
    expect(Object.keys(op.responses['200'] as object)).toContain('headers');
  });
});

describe('a declared new default over HTTP (injected clock)', () => {
  let db: TestDatabase;
  let partner: PartnerInstance;
  let now = at('2026-03-10T12:00:00Z');
  let key: string;
  let keyId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const fx = fixtures(db.owner);
    for (const name of ['Austin', 'Boston', 'Chicago', 'Denver']) {
      await fx.bar(await fx.city({ name, state: 'TX', time_zone: 'America/Chicago' }), { name: `${name} Bar` });
    }
    partner = await startPartner(db, { deprecations: { list: [PER_PAGE_DEFAULT], now: () => now } });
    ({ apiKey: key, keyId } = await issueKey(db.owner));
  });
  afterAll(async () => {
    await partner?.close();
    await db?.drop();
  });

  const get = (url: string) => request(partner.app).get(`${P}${url}`).set(bearer(key));
  const headersOf = (res: request.Response) => [res.headers.deprecation, res.headers.sunset, res.headers.link];

  test('the test data has more than 2 cities, and a prefix with at most 2', async () => {
    const all = await get('/cities?per_page=100').expect(200);
    expect(all.body.pagination.total_count).toBeGreaterThan(2);
    const few = await get('/cities?q=aus&per_page=100').expect(200);
    expect(few.body.pagination.total_count).toBeLessThanOrEqual(2);
  });

  test('before since: nothing; from since: the headers only on answers the new default would change', async () => {
    now = at('2026-01-14T23:59:59Z');
    expect(headersOf(await get('/cities').expect(200))).toEqual([undefined, undefined, undefined]);

    now = at('2026-03-10T12:00:00Z');
    const cut = await get('/cities').expect(200);
    expect(headersOf(cut)).toEqual([
      `@${Date.UTC(2026, 0, 15) / 1000}`,
      'Wed, 15 Jul 2026 00:00:00 GMT',
      `<${PER_PAGE_DEFAULT.changelog}>; rel="deprecation"`,
    ]);
    expect(cut.body.pagination.per_page).toBe(20); // today's default still applies
    // a 304 of the same answer says so too
    const again = await get('/cities')
      .set('If-None-Match', cut.headers.etag as string)
      .expect(304);
    expect(again.headers.sunset).toBe('Wed, 15 Jul 2026 00:00:00 GMT');
    // not changed by the new default, or the parameter sent: nothing
    expect(headersOf(await get('/cities?q=aus').expect(200))).toEqual([undefined, undefined, undefined]);
    expect(headersOf(await get('/cities?per_page=20').expect(200))).toEqual([undefined, undefined, undefined]);
  });

  test('counted per key as "default of per_page" (the two affected answers above and this one)', async () => {
    now = at('2026-03-10T13:00:00Z');
    await get('/cities').expect(200);
    await partner.guard.deprecatedCalls.flush();
    const { rows } = await db.owner.query(
      'select what, sum(calls)::int as calls from admin.deprecated_calls where api_key_id = $1 group by what',
      [keyId],
    );
    expect(rows).toEqual([{ what: 'GET /cities default of per_page', calls: 3 }]);
  });

  test('from the sunset: the new default applies, without headers and without a 410', async () => {
    now = at('2026-07-15T00:00:00Z');
    const res = await get('/cities').expect(200);
    expect(res.body.pagination.per_page).toBe(2);
    expect(res.body.cities).toHaveLength(2);
    expect(headersOf(res)).toEqual([undefined, undefined, undefined]);
    expect((await get('/cities?per_page=3').expect(200)).body.cities).toHaveLength(3);
    expect((await get('/cities?state=TX').expect(200)).body.pagination.per_page).toBe(2);
  });
});
