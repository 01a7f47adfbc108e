import { createTestDatabase, type TestDatabase } from '../support/db';

describe('schema integrity and privileges', () => {
  let db: TestDatabase;
  let cityId: number;
  let barId: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    const city = await db.owner.query<{ id: number }>(
      "insert into private.cities (name, state, time_zone, latitude, longitude) values ('Austin', 'TX', 'America/Chicago', 30.27, -97.74) returning id");
    cityId = city.rows[0]!.id;
    const bar = await db.owner.query<{ id: number }>(
      "insert into private.bars (city_id, name, address, latitude, longitude) values ($1, 'The Tap', '1 Main St', 30.27, -97.74) returning id", [cityId]);
    barId = bar.rows[0]!.id;
  });
  afterAll(() => db.drop());

  const rejects = (sql: string, params: unknown[] = []) =>
    expect(db.owner.query(sql, params)).rejects.toMatchObject({ code: expect.stringMatching(/^23/) });

  test.each([
    ['intensity over 100', 'insert into private.occupancy (bar_id, current_intensity, weekly_profile) values ($1, 101, array_fill(0::smallint, array[168]))'],
    ['intensity below 0', 'insert into private.occupancy (bar_id, current_intensity, weekly_profile) values ($1, -1, array_fill(0::smallint, array[168]))'],
    ['a weekly profile that is not 7 x 24', 'insert into private.occupancy (bar_id, current_intensity, weekly_profile) values ($1, 10, array_fill(0::smallint, array[24]))'],
    ['a profile value over 100', 'insert into private.occupancy (bar_id, current_intensity, weekly_profile) values ($1, 10, array_fill(101::smallint, array[168]))'],
    ['an unknown classification', "insert into private.events (bar_id, city_id, title, classification, start_at, end_at) select id, city_id, 'x', 'rave', now(), now() + interval '1 hour' from private.bars where id = $1"],
    ['an event ending before it starts', "insert into private.events (bar_id, city_id, title, classification, start_at, end_at) select id, city_id, 'x', 'dj', now(), now() - interval '1 hour' from private.bars where id = $1"],
    ['an event in another city than its bar', "insert into private.events (bar_id, city_id, title, classification, start_at, end_at) values ($1, -1, 'x', 'dj', now(), now() + interval '1 hour')"],
    ['an opening time with seconds', "insert into private.opening_hours (bar_id, day_of_week, opens, closes) values ($1, 1, '17:00:30', '23:00')"],
    ['a day of week 8', "insert into private.opening_hours (bar_id, day_of_week, opens, closes) values ($1, 8, '17:00', '23:00')"],
    ['a non-http photo URL', "insert into private.photos (bar_id, url) values ($1, 'ftp://x/y.jpg')"],
    ['a second primary category', "with c as (insert into private.categories (name, slug) values ('A','a'),('B','b') returning id) insert into private.bar_categories (bar_id, category_id, is_primary) select $1, id, true from c"],
  ])('rejects %s', (_what, sql) => rejects(sql, [barId]));

  test.each([
    ['a latitude over 90', "insert into private.bars (city_id, name, address, latitude, longitude) values ($1, 'x', 'y', 91, 0)"],
    ['a longitude under -180', "insert into private.bars (city_id, name, address, latitude, longitude) values ($1, 'x', 'y', 0, -181)"],
    ['a rating over 5', "insert into private.bars (city_id, name, address, latitude, longitude, google_rating) values ($1, 'x', 'y', 0, 0, 5.5)"],
    ['price level 5', "insert into private.bars (city_id, name, address, latitude, longitude, price_level) values ($1, 'x', 'y', 0, 0, 5)"],
  ])('rejects a bar with %s', (_what, sql) => rejects(sql, [cityId]));

  test.each([
    ['a three-letter state', "insert into private.cities (name, state, time_zone, latitude, longitude) values ('X', 'TEX', 'America/Chicago', 0, 0)"],
    ['a lowercase state', "insert into private.cities (name, state, time_zone, latitude, longitude) values ('X', 'tx', 'America/Chicago', 0, 0)"],
    ['an unknown time zone', "insert into private.cities (name, state, time_zone, latitude, longitude) values ('X', 'TX', 'Mars/Olympus', 0, 0)"],
    ['the same city twice, case aside', "insert into private.cities (name, state, time_zone, latitude, longitude) values ('AUSTIN', 'TX', 'America/Chicago', 0, 0)"],
  ])('rejects a city with %s', (_what, sql) => rejects(sql));

  test('accepts an after-midnight slot', async () => {
    await db.owner.query("insert into private.opening_hours (bar_id, day_of_week, opens, closes) values ($1, 5, '20:00', '02:00')", [barId]);
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
});
