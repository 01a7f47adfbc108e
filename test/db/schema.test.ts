import { createTestDatabase, type TestDatabase } from '../support/db';

describe('schema integrity and privileges', () => {
  let db: TestDatabase;
  let cityId: number;
  let barId: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    const city = await db.owner.query<{ id: number }>(
      "insert into private.cities (name, state, time_zone, latitude, longitude) values ('Austin', 'TX', 'America/Chicago', 30.27, -97.74) returning id",
    );
    cityId = city.rows[0]!.id;
    const bar = await db.owner.query<{ id: number }>(
      "insert into private.bars (city_id, name, address, latitude, longitude) values ($1, 'The Tap', '1 Main St', 30.27, -97.74) returning id",
      [cityId],
    );
    barId = bar.rows[0]!.id;
  });
  afterAll(() => db.drop());

  const rejects = (sql: string, params: unknown[] = []) =>
    expect(db.owner.query(sql, params)).rejects.toMatchObject({ code: expect.stringMatching(/^23/) });

  test.each([
    [
      'intensity over 100',
      'insert into private.occupancy (bar_id, current_intensity, weekly_profile) values ($1, 101, array_fill(0::smallint, array[168]))',
    ],
    [
      'intensity below 0',
      'insert into private.occupancy (bar_id, current_intensity, weekly_profile) values ($1, -1, array_fill(0::smallint, array[168]))',
    ],
    [
      'a weekly profile that is not 7 x 24',
      'insert into private.occupancy (bar_id, current_intensity, weekly_profile) values ($1, 10, array_fill(0::smallint, array[24]))',
    ],
    [
      'a profile value over 100',
      'insert into private.occupancy (bar_id, current_intensity, weekly_profile) values ($1, 10, array_fill(101::smallint, array[168]))',
    ],
    // now(): any instant will do; these rows fail their check constraints whatever it is
    [
      'an unknown classification',
      "insert into private.events (bar_id, city_id, title, classification, start_at, end_at) select id, city_id, 'x', 'rave', now(), now() + interval '1 hour' from private.bars where id = $1",
    ],
    [
      'an event ending before it starts',
      "insert into private.events (bar_id, city_id, title, classification, start_at, end_at) select id, city_id, 'x', 'dj', now(), now() - interval '1 hour' from private.bars where id = $1",
    ],
    [
      'an event in another city than its bar',
      "insert into private.events (bar_id, city_id, title, classification, start_at, end_at) values ($1, -1, 'x', 'dj', now(), now() + interval '1 hour')",
    ],
    [
      'an opening time with seconds',
      "insert into private.opening_hours (bar_id, day_of_week, opens, closes) values ($1, 1, '17:00:30', '23:00')",
    ],
    [
      'a day of week 8',
      "insert into private.opening_hours (bar_id, day_of_week, opens, closes) values ($1, 8, '17:00', '23:00')",
    ],
    ['a non-http photo URL', "insert into private.photos (bar_id, url) values ($1, 'ftp://x/y.jpg')"],
    [
      'a second primary category',
      "with c as (insert into private.categories (name, slug) values ('A','a'),('B','b') returning id) insert into private.bar_categories (bar_id, category_id, is_primary) select $1, id, true from c",
    ],
  ])('rejects %s', (_what, sql) => rejects(sql, [barId]));

  test.each([
    [
      'a latitude over 90',
      "insert into private.bars (city_id, name, address, latitude, longitude) values ($1, 'x', 'y', 91, 0)",
    ],
    [
      'a longitude under -180',
      "insert into private.bars (city_id, name, address, latitude, longitude) values ($1, 'x', 'y', 0, -181)",
    ],
    [
      'a rating over 5',
      "insert into private.bars (city_id, name, address, latitude, longitude, google_rating) values ($1, 'x', 'y', 0, 0, 5.5)",
    ],
    [
      'price level 5',
      "insert into private.bars (city_id, name, address, latitude, longitude, price_level) values ($1, 'x', 'y', 0, 0, 5)",
    ],
  ])('rejects a bar with %s', (_what, sql) => rejects(sql, [cityId]));

  test.each([
    [
      'a three-letter state',
      "insert into private.cities (name, state, time_zone, latitude, longitude) values ('X', 'TEX', 'America/Chicago', 0, 0)",
    ],
    [
      'a lowercase state',
      "insert into private.cities (name, state, time_zone, latitude, longitude) values ('X', 'tx', 'America/Chicago', 0, 0)",
    ],
    [
      'an unknown time zone',
      "insert into private.cities (name, state, time_zone, latitude, longitude) values ('X', 'TX', 'Mars/Olympus', 0, 0)",
    ],
    [
      'the same city twice, case aside',
      "insert into private.cities (name, state, time_zone, latitude, longitude) values ('AUSTIN', 'TX', 'America/Chicago', 0, 0)",
    ],
  ])('rejects a city with %s', (_what, sql) => rejects(sql));

  test('accepts an after-midnight slot', async () => {
    const { rows } = await db.owner.query<{ opens: string; closes: string }>(
      `insert into private.opening_hours (bar_id, day_of_week, opens, closes) values ($1, 5, '20:00', '02:00')
       returning opens::text, closes::text`,
      [barId],
    );
    expect(rows).toEqual([{ opens: '20:00:00', closes: '02:00:00' }]);
    const stored = await db.owner.query<{ n: number }>(
      'select count(*)::int as n from private.opening_hours where bar_id = $1 and day_of_week = 5 and closes < opens',
      [barId],
    );
    expect(stored.rows[0]!.n).toBe(1);
  });

  test('the partner role cannot read a private table', async () => {
    const partner = db.partnerPool();
    await expect(partner.query('select * from private.bars')).rejects.toMatchObject({ code: '42501' });
    const { rows } = await partner.query<{ current_user: string }>('select current_user');
    expect(rows[0]!.current_user).toBe('bar_partner');
  });

  test('no function in our schemas is executable by PUBLIC', async () => {
    const acl = await db.owner.query<{ fn: string }>(`
      select p.oid::regprocedure::text as fn
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      cross join lateral aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
      where n.nspname in ('api', 'admin', 'private') and a.grantee = 0 and a.privilege_type = 'EXECUTE'`);
    expect(acl.rows).toEqual([]);
  });

  // db/CONVENTIONS.md "Writing functions": api.* plan once per connection (plpgsql with static SQL; a SQL-language
  // SECURITY DEFINER or SET function is planned on every call on PostgreSQL 15-17, and so is a dynamic EXECUTE).
  // Credential and usage bookkeeping (46-credentials.sql, 47-usage.sql, 50-usage.sql) runs once per key per cache
  // period or per flush batch, not per request: SQL-language SECURITY DEFINER is fine there.
  // So are the hourly-usage batch and the request log's partition upkeep (51-usage-history.sql).
  const offPathApi = new Set([
    'authenticate',
    'record_usage',
    'record_usage_alert',
    'usage_key_ids',
    'record_hourly_usage',
    'request_log_partitions',
  ]);
  const GRAPHQL_SERVED = new Set([
    'bar',
    'bars',
    'bars_by_city',
    'events',
    'posts',
    'feed',
    'search',
    'categories',
    'cities',
    'groups',
  ]);

  test('every api.* function is plan-cached, SECURITY DEFINER with a pinned search_path, and only for bar_partner', async () => {
    const { rows } = await db.owner.query<{
      name: string;
      fn: string;
      lang: string;
      definer: boolean;
      config: string[] | null;
      src: string;
      grantees: string[];
    }>(`
      select p.proname as name, p.oid::regprocedure::text as fn, l.lanname as lang, p.prosecdef as definer,
             p.proconfig as config, p.prosrc as src,
             array(select distinct a.grantee::regrole::text
                   from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                   where a.privilege_type = 'EXECUTE' and a.grantee <> p.proowner order by 1) as grantees
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace join pg_language l on l.oid = p.prolang
      where n.nspname = 'api' order by 2`);
    expect(rows.map((r) => r.name)).toEqual(expect.arrayContaining(['bar', 'bars', 'events', 'posts', 'feed']));
    const problems: string[] = [];
    for (const r of rows) {
      // the partner GraphQL role (functions/60-graphql.sql) executes what its schema serves, and only that
      const expected = r.name.startsWith('graphql_')
        ? ['bar_partner_graphql']
        : GRAPHQL_SERVED.has(r.name)
          ? ['bar_partner', 'bar_partner_graphql']
          : ['bar_partner'];
      if (r.grantees.join() !== expected.join()) {
        problems.push(`${r.fn}: EXECUTE for ${r.grantees.join(', ') || 'nobody'}`);
      }
      if (offPathApi.has(r.name)) continue;
      const searchPath = (r.config ?? []).find((c) => c.startsWith('search_path='));
      if (r.lang === 'plpgsql') {
        if (!r.definer) problems.push(`${r.fn}: not SECURITY DEFINER`);
        if (!searchPath || !/\bpg_temp\b/.test(searchPath)) problems.push(`${r.fn}: search_path not pinned`);
        // dynamic SQL: EXECUTE <expression> (plpgsql), not "execute function" in DDL text
        const code = r.src.replace(/--[^\n]*/g, '');
        if (/\bexecute\s+(?!function\b|procedure\b)/i.test(code)) problems.push(`${r.fn}: EXECUTE of dynamic SQL`);
      } else if (r.lang !== 'sql' || r.definer || r.config) {
        // only an inlinable SQL function (no SECURITY DEFINER, no SET) is planned with its caller
        problems.push(`${r.fn}: ${r.lang}${r.definer ? ' SECURITY DEFINER' : ''}${r.config ? ' with SET' : ''}`);
      }
    }
    expect(problems).toEqual([]);
  });
});
