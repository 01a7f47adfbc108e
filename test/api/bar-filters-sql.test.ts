/**
 * The v1.1 filters of api.bars and api.bars_by_city at the SQL level
 * (decisions.md "Filters"): open_now, open_at (each bar's local time,
 * after-midnight slots, time zones, DST), price_levels, min_rating, statuses;
 * AND-combined, before limit and pagination; bars_by_city totals count filtered bars.
 */
import { createTestDatabase, type TestDatabase } from '../support/db';

interface BarsBody {
  bars: { id: string; name: string; occupancy: { status: string | null } }[];
}
interface CityBody extends BarsBody {
  pagination: { total_count: number; total_pages: number };
}

describe('bar filters (SQL)', () => {
  let db: TestDatabase;
  const q = async (sql: string, values: unknown[] = []) => (await db.owner.query(sql, values)).rows;
  const ids = (body: BarsBody) => body.bars.map((b) => b.name);
  const bars = async (args: string, values: unknown[] = []): Promise<BarsBody> =>
    JSON.parse((await q(`select api.bars(${args})::text as body`, values))[0].body);
  const city = async (args: string, values: unknown[] = []): Promise<CityBody> =>
    JSON.parse((await q(`select api.bars_by_city(${args})::text as body`, values))[0].body);

  beforeAll(async () => {
    db = await createTestDatabase();
    await q(`insert into private.cities (id, name, state, time_zone, latitude, longitude) overriding system value
             values (1, 'Austin', 'TX', 'America/Chicago', 30.27, -97.74), (2, 'Brooklyn', 'NY', 'America/New_York', 40.68, -73.94)`);
    // name, city, price, rating, hours (every day), occupancy
    await q(`insert into private.bars (id, city_id, name, address, latitude, longitude, price_level, google_rating) overriding system value
             values (1, 1, 'A Late', '1 St', 30.27, -97.74, 1, 4.5),      -- 18:00-02:00 (after midnight)
                    (2, 1, 'B Evening', '2 St', 30.271, -97.741, 2, 3.9), -- 18:00-23:00
                    (3, 1, 'C Unrated', '3 St', 30.272, -97.742, null, null), -- 18:00-23:00, no occupancy row
                    (4, 2, 'D Brooklyn', '4 St', 40.68, -73.94, 4, 5.0),  -- 18:00-23:00 New York time
                    (5, 1, 'E Closed', '5 St', 30.273, -97.743, 3, 4.0)    -- no hours`);
    await q(`insert into private.opening_hours (bar_id, day_of_week, opens, closes)
             select b, d, '18:00', case when b = 1 then '02:00'::time else '23:00'::time end
             from unnest(array[1, 2, 3, 4]) b, generate_series(1, 7) d`);
    await q(`insert into private.occupancy (bar_id, current_intensity, weekly_profile)
             values (1, 80, array_fill(10::smallint, array[168])), (2, 30, array_fill(10::smallint, array[168])),
                    (4, 10, array_fill(10::smallint, array[168])), (5, 60, array_fill(10::smallint, array[168]))`);
  });
  afterAll(async () => db.drop());

  // Wednesday 2026-11-25 22:30 in Austin (CST, UTC-6) = 23:30 in Brooklyn (EST).
  const WED_2230_CHICAGO = '2026-11-26T04:30:00Z';

  test('open_at: an after-midnight slot is open after midnight and closed after it ends', async () => {
    // Thursday 01:30 Austin: only the bar whose Wednesday slot runs to 02:00
    expect(ids(await bars('p_open_at => $1', ['2026-11-26T07:30:00Z']))).toEqual(['A Late']);
    // Thursday 02:00 Austin: the slot has ended
    expect(ids(await bars('p_open_at => $1', ['2026-11-26T08:00:00Z']))).toEqual([]);
    // Wednesday 17:59 Austin: nothing yet (18:59 in Brooklyn: D is open)
    expect(ids(await bars('p_open_at => $1', ['2026-11-25T23:59:00Z']))).toEqual(['D Brooklyn']);
  });

  test('open_at is judged in each bar’s own time zone', async () => {
    // 22:30 Austin (A, B, C open until 23:00/02:00) = 23:30 Brooklyn (D closed at 23:00)
    expect(ids(await bars('p_open_at => $1', [WED_2230_CHICAGO]))).toEqual(['A Late', 'B Evening', 'C Unrated']);
    // 21:30 Austin = 22:30 Brooklyn: D open too
    expect(ids(await bars('p_open_at => $1', ['2026-11-26T03:30:00Z']))).toEqual([
      'A Late',
      'B Evening',
      'C Unrated',
      'D Brooklyn',
    ]);
  });

  test('open_at across DST changes (America/Chicago)', async () => {
    // 2026-11-01 (fall back at 02:00 CDT): 01:30 happens twice, both inside Saturday's 18:00-02:00 slot
    expect(ids(await bars('p_open_at => $1', ['2026-11-01T06:30:00Z']))).toEqual(['A Late']); // 01:30 CDT
    expect(ids(await bars('p_open_at => $1', ['2026-11-01T07:30:00Z']))).toEqual(['A Late']); // 01:30 CST
    expect(ids(await bars('p_open_at => $1', ['2026-11-01T08:00:00Z']))).toEqual([]); // 02:00 CST
    // 2026-03-08 (spring forward at 02:00 CST -> 03:00 CDT): one UTC minute apart
    expect(ids(await bars('p_open_at => $1', ['2026-03-08T07:59:00Z']))).toEqual(['A Late']); // 01:59 CST
    expect(ids(await bars('p_open_at => $1', ['2026-03-08T08:00:00Z']))).toEqual([]); // 03:00 CDT
  });

  test('open_now true and false follow p_now', async () => {
    expect(ids(await bars('p_open_now => true, p_now => $1', [WED_2230_CHICAGO]))).toEqual([
      'A Late',
      'B Evening',
      'C Unrated',
    ]);
    expect(ids(await bars('p_open_now => false, p_now => $1', [WED_2230_CHICAGO]))).toEqual(['D Brooklyn', 'E Closed']);
  });

  test('price_levels (any of) and min_rating (inclusive; no rating never matches)', async () => {
    expect(ids(await bars(`p_price_levels => '{2,4}'`))).toEqual(['B Evening', 'D Brooklyn']);
    expect(ids(await bars(`p_price_levels => '{}'`))).toEqual([]);
    expect(ids(await bars('p_min_rating => 4.0'))).toEqual(['A Late', 'D Brooklyn', 'E Closed']);
    expect(ids(await bars('p_min_rating => 0'))).toEqual(['A Late', 'B Evening', 'D Brooklyn', 'E Closed']);
    expect(ids(await bars('p_min_rating => 5'))).toEqual(['D Brooklyn']);
  });

  test('statuses: the current occupancy status; an open bar without occupancy data has none', async () => {
    const at = [WED_2230_CHICAGO];
    expect(ids(await bars(`p_statuses => '{very_busy}', p_now => $1`, at))).toEqual(['A Late']);
    expect(ids(await bars(`p_statuses => '{moderate,busy}', p_now => $1`, at))).toEqual(['B Evening']);
    // D is closed at 23:30 in Brooklyn; E has no hours (closed) although its intensity is 60
    expect(ids(await bars(`p_statuses => '{closed}', p_now => $1`, at))).toEqual(['D Brooklyn', 'E Closed']);
    const body = await bars(`p_statuses => '{closed,quiet,moderate,busy,very_busy}', p_now => $1`, at);
    expect(ids(body)).not.toContain('C Unrated');
    expect(body.bars.every((b) => b.occupancy.status !== null)).toBe(true);
  });

  test('indexed_filters_estimate: the planner’s estimate of the indexed filters against a bound', async () => {
    await q('analyze private.bar_live');
    const few = async (args: unknown[]) =>
      (await q('select private.indexed_filters_estimate($1, $2, $3, $4) < $5 as few', args))[0].few as boolean;
    const all = Number((await q('select count(*) as n from private.bar_live'))[0].n);
    expect(all).toBeGreaterThan(3);
    // every bar passes no filter at all, or a rating of 0 and up: not fewer than half of them
    expect(await few([null, null, null, null, 1])).toBe(false);
    expect(await few([0, null, null, null, Math.floor(all / 2)])).toBe(false);
    expect(await few([null, null, 0, 100, Math.floor(all / 2)])).toBe(false);
    // no bar passes a rating above 5, a price level 9 or an intensity above 100: fewer than 2 (the planner's floor is 1)
    expect(await few([5.5, null, null, null, 2])).toBe(true);
    expect(await few([null, [9], null, null, 2])).toBe(true);
    expect(await few([null, null, 101, 200, 2])).toBe(true);
  });

  test('filters combine with AND and apply before limit; with location and category too', async () => {
    const at = [WED_2230_CHICAGO];
    expect(ids(await bars('p_open_now => true, p_min_rating => 3.9, p_now => $1', at))).toEqual([
      'A Late',
      'B Evening',
    ]);
    expect(ids(await bars('p_open_now => true, p_min_rating => 3.9, p_limit => 1, p_now => $1', at))).toEqual([
      'A Late',
    ]);
    // nearest first within a radius, filtered before the limit
    const near = 'p_latitude => 30.273, p_longitude => -97.743, p_radius => 5, p_limit => 2';
    expect(ids(await bars(`${near}, p_now => $1`, at))).toEqual(['E Closed', 'C Unrated']);
    expect(ids(await bars(`${near}, p_open_now => true, p_now => $1`, at))).toEqual(['C Unrated', 'B Evening']);
    // nearest first without a radius, a box, ids
    expect(
      ids(await bars('p_latitude => 40, p_longitude => -74, p_price_levels => $2, p_now => $1', [...at, [1, 3]])),
    ).toEqual(['A Late', 'E Closed']);
    const box =
      'p_corner1_latitude => 30, p_corner1_longitude => -98, p_corner2_latitude => 31, p_corner2_longitude => -97';
    expect(ids(await bars(`${box}, p_statuses => '{closed}', p_now => $1`, at))).toEqual(['E Closed']);
    expect(ids(await bars(`p_ids => '{5,4,3,2,1}', p_min_rating => 4, p_now => $1`, at))).toEqual([
      'E Closed',
      'D Brooklyn',
      'A Late',
    ]);
    await q(`insert into private.categories (name, slug) values ('Pub', 'pub')`);
    await q(`insert into private.bar_categories (bar_id, category_id, is_primary, position)
             select b, (select id from private.categories where slug = 'pub'), true, 1 from unnest(array[1, 2, 5]) b`);
    expect(ids(await bars(`p_category => 'pub', p_open_now => false, p_now => $1`, at))).toEqual(['E Closed']);
    expect(ids(await bars(`p_category => 'pub', ${box}, p_price_levels => '{1,2}', p_now => $1`, at))).toEqual([
      'A Late',
      'B Evening',
    ]);
  });

  test('nearest first with filters: matches tied at the distance of the last one are ordered by id', async () => {
    // inserted in another order than their ids: the index walk meets ties in no particular order
    await q(`insert into private.bars (id, city_id, name, address, latitude, longitude, price_level, google_rating) overriding system value
             values (503, 1, 'Tie C', '9 St', 30.5, -97.5, 2, 4.2), (501, 1, 'Tie A', '9 St', 30.5, -97.5, 2, 4.2),
                    (502, 1, 'Tie B', '9 St', 30.5, -97.5, 2, 4.2)`);
    try {
      for (const radius of ['', ', p_radius => 50']) {
        const near = (limit: number) =>
          bars(`p_latitude => 30.6, p_longitude => -97.5${radius}, p_min_rating => 4.1, p_limit => ${limit}`);
        expect(ids(await near(1))).toEqual(['Tie A']);
        expect(ids(await near(2))).toEqual(['Tie A', 'Tie B']);
        expect(ids(await near(4))).toEqual(['Tie A', 'Tie B', 'Tie C', 'A Late']);
      }
    } finally {
      await q('delete from private.bars where id in (501, 502, 503)');
    }
  });

  test('bars_by_city: filters narrow the page and the totals, before pagination', async () => {
    const at = [WED_2230_CHICAGO];
    const all = await city(`'TX', 'Austin', p_now => $1`, at);
    expect(all.pagination.total_count).toBe(4);
    const open = await city(`'TX', 'Austin', p_open_now => true, p_per_page => 2, p_now => $1`, at);
    expect(ids(open)).toEqual(['A Late', 'B Evening']);
    expect(open.pagination).toMatchObject({ total_count: 3, total_pages: 2 });
    const page2 = await city(`'TX', 'Austin', p_open_now => true, p_per_page => 2, p_page => 2, p_now => $1`, at);
    expect(ids(page2)).toEqual(['C Unrated']);
    const rated = await city(`'TX', 'Austin', p_min_rating => 4, p_price_levels => '{1,3}', p_now => $1`, at);
    expect(ids(rated)).toEqual(['A Late', 'E Closed']);
    expect(rated.pagination.total_count).toBe(2);
    const none = await city(`'TX', 'Austin', p_statuses => '{quiet}', p_now => $1`, at);
    expect(none).toMatchObject({ bars: [], pagination: { total_count: 0, total_pages: 0 } });
    // a group: filters narrow its bars and total
    await q(`insert into private.groups (city_id, slug, name) values (1, 'late', 'Late')`);
    await q(
      `insert into private.bar_groups (group_id, bar_id) select (select id from private.groups where slug = 'late'), b from unnest(array[1, 2, 5]) b`,
    );
    const group = await city(`'TX', 'Austin', p_group_slug => 'late', p_open_now => false, p_now => $1`, at);
    expect(ids(group)).toEqual(['E Closed']);
    expect(group.pagination.total_count).toBe(1);
  });

  test('busiest_bars of a big city at night: past the 2,000 most intense (all closed) to the few open bars', async () => {
    // 2,100 busy bars without hours (closed) and two quiet ones open at 22:30 in Austin
    await q(`insert into private.bars (id, city_id, name, address, latitude, longitude) overriding system value
             select 1000 + g, 1, 'Z closed ' || g, g || ' Big St', 30.3, -97.7 from generate_series(1, 2100) g`);
    await q(`insert into private.occupancy (bar_id, current_intensity, weekly_profile)
             select id, 90, array_fill(10::smallint, array[168]) from private.bars where name like 'Z closed %'`);
    const body = await city(`'TX', 'Austin', p_per_page => 1, p_now => $1`, [WED_2230_CHICAGO]);
    const busiest = (body as unknown as { busiest_bars: { name: string; current_intensity: number }[] }).busiest_bars;
    expect(busiest).toEqual([
      { id: '1', name: 'A Late', current_intensity: 80 },
      { id: '2', name: 'B Evening', current_intensity: 30 },
    ]);
  });

  test('a filter matching only bars beyond the walk budget: the set-based evaluation equals brute force', async () => {
    // 6,000 non-matching bars near the center (and first in name order), then 3 matching ones farther out.
    // Scattered in longitude: cube's GiST (bars_geo) inserts collinear points in quadratic time.
    await q(`insert into private.cities (id, name, state, time_zone, latitude, longitude) overriding system value
             values (3, 'Denver', 'CO', 'America/Denver', 39.74, -104.99)`);
    await q(`insert into private.bars (id, city_id, name, address, latitude, longitude, price_level, google_rating) overriding system value
             select 20000 + g, 3, 'F near ' || g, g || ' Near St', 39.74 + g * 0.00001, -104.99 + (g * 7919 % 1000) * 0.000001, 1, 3.0
             from generate_series(1, 6000) g
             union all
             select 30000 + g, 3, 'ZZ far ' || (4 - g), g || ' Far St', 39.81 + g * 0.001, -104.99, 4, 4.8
             from generate_series(1, 3) g`);
    await q(`insert into private.categories (name, slug) values ('Rare', 'rare')`);
    await q(`insert into private.bar_categories (bar_id, category_id, is_primary, position)
             select b, (select id from private.categories where slug = 'rare'), true, 1 from unnest(array[20001, 30002, 30003]) b`);
    const at = '2026-11-26T04:30:00Z';
    const center = [39.74, -104.99];
    // brute force: the per-bar test over every bar, ordered as the API orders
    const brute = async (order: string, where = 'true', limit = 250) =>
      (
        await q(
          `select b.name from private.bars b
           where ${where} and private.bar_filters_match(b.id, $1, $2, null, $3, $4, $5)
           order by ${order} limit ${limit}`,
          [at, null, [4], 4.5, ['closed'], ...(`${order} ${where}`.includes('$6') ? center : [])],
        )
      ).map((r: { name: string }) => r.name);
    const byDistance = 'b.geo <-> private.earth_point($6, $7), b.id';
    const filters = `p_price_levels => '{4}', p_min_rating => 4.5, p_statuses => '{closed}', p_now => $1`;
    // the walk of 5,000 candidates finds no match: the fallback is needed
    const nearer = await q(
      `select count(*)::int as n from private.bars b
       where b.geo <-> private.earth_point($1, $2) < (select min(b2.geo <-> private.earth_point($1, $2))
                                                      from private.bars b2 where b2.id > 30000)`,
      center,
    );
    expect(nearer[0].n).toBeGreaterThan(5000);
    const radius = await bars(`p_latitude => $2, p_longitude => $3, p_radius => 10, p_limit => 2, ${filters}`, [
      at,
      ...center,
    ]);
    const bruteRadius = await brute(
      byDistance,
      'earth_distance(b.geo, private.earth_point($6, $7)) <= 10 * 1609.344',
      2,
    );
    expect(ids(radius)).toEqual(bruteRadius);
    expect(bruteRadius).toEqual(['ZZ far 3', 'ZZ far 2']);
    const nearest = await bars(`p_latitude => $2, p_longitude => $3, ${filters}`, [at, ...center]);
    expect(ids(nearest)).toEqual(await brute(byDistance));
    expect(ids(nearest)).toEqual(['ZZ far 3', 'ZZ far 2', 'ZZ far 1', 'D Brooklyn']);
    const byName = await bars(filters, [at]);
    expect(ids(byName)).toEqual(await brute('b.name, b.id'));
    expect(ids(byName)).toEqual(['D Brooklyn', 'ZZ far 1', 'ZZ far 2', 'ZZ far 3']);
    const box =
      'p_corner1_latitude => 39, p_corner1_longitude => -106, p_corner2_latitude => 41, p_corner2_longitude => -104';
    expect(ids(await bars(`${box}, ${filters}`, [at]))).toEqual(['ZZ far 1', 'ZZ far 2', 'ZZ far 3']);
    expect(ids(await bars(`p_category => 'rare', ${filters}`, [at]))).toEqual(['ZZ far 1', 'ZZ far 2']);
    // open_now=false (every bar here has no hours) in name order: the walk suffices, same as brute force
    const closed = await bars(`p_open_now => false, p_limit => 5, p_now => $1`, [at]);
    const bruteClosed = (
      await q(
        `select b.name from private.bars b where private.bar_filters_match(b.id, $1, false, null, null, null, null)
         order by b.name, b.id limit 5`,
        [at],
      )
    ).map((r: { name: string }) => r.name);
    expect(ids(closed)).toEqual(bruteClosed);

    // The collect path's index conditions: the intensity range of the statuses, "open at a minute" (GiST on
    // open_week, over each time zone's local minute), rating and price. Two far bars open late and very busy.
    await q(`insert into private.opening_hours (bar_id, day_of_week, opens, closes)
             select b, d, '18:00', '02:00' from unnest(array[30001, 30002]) b, generate_series(1, 7) d`);
    await q(`insert into private.occupancy (bar_id, current_intensity, weekly_profile)
             select b, i, array_fill(10::smallint, array[168]) from unnest(array[30001, 30002], array[90, 60]) u(b, i)`);
    const cases: [string, string][] = [
      ['p_statuses', `'{very_busy}'`],
      ['p_statuses', `'{busy,very_busy}'`],
      ['p_statuses', `'{quiet}'`],
      ['p_open_now', 'true'],
      ['p_open_at', `'2026-11-26T04:45:00Z'::timestamptz`],
      ['p_open_at', `'2026-11-26T12:00:00Z'::timestamptz`],
    ];
    for (const [param, value] of cases) {
      const bruteArgs = {
        p_open_now: param === 'p_open_now' ? value : 'null',
        p_open_at: param === 'p_open_at' ? value : 'null',
        p_statuses: param === 'p_statuses' ? value : 'null',
      };
      const match = `private.bar_filters_match(b.id, $1, ${bruteArgs.p_open_now}, ${bruteArgs.p_open_at}, null, null, ${bruteArgs.p_statuses})`;
      const bruteOf = async (where: string, order: string, limit: number, values: unknown[]) =>
        (
          await q(`select b.name from private.bars b where ${where} and ${match} order by ${order} limit ${limit}`, [
            at,
            ...values,
          ])
        ).map((r: { name: string }) => r.name);
      const given = `${param} => ${value}, p_now => $1`;
      const near = await bars(`p_latitude => $2, p_longitude => $3, p_radius => 10, p_limit => 3, ${given}`, [
        at,
        ...center,
      ]);
      const expected = await bruteOf(
        'earth_distance(b.geo, private.earth_point($2, $3)) <= 10 * 1609.344',
        'b.geo <-> private.earth_point($2, $3), b.id',
        3,
        center,
      );
      expect({ param, value, got: ids(near) }).toEqual({ param, value, got: expected });
      const named = await bars(`p_limit => 3, ${given}`, [at]);
      expect({ param, value, got: ids(named) }).toEqual({
        param,
        value,
        got: await bruteOf('true', 'b.name, b.id', 3, []),
      });
    }
    // the far, very busy bars are found although 6,000 nearer bars come first
    expect(
      ids(await bars(`p_latitude => $2, p_longitude => $3, p_statuses => '{very_busy}', p_now => $1`, [at, ...center])),
    ).toEqual(expect.arrayContaining(['ZZ far 3']));

    // Few bars open at an instant (fewer than 2,000 anywhere) are collected through their open slots (above);
    // with more open, the walk serves open_now / open_at: the same answers as brute force.
    expect((await q('select private.open_bars_fewer_than($1, null, null, null, 2000) as few', [at]))[0].few).toBe(true);
    // a region probes only the time zones whose bars' extent it meets
    const zones = async (where: string) =>
      (
        await q(
          `select z.name from private.time_zones z
           where z.id::bigint * 10080 + private.minute_of_week($1 at time zone z.name) in (select k from ${where})
           order by 1`,
          [at],
        )
      ).map((r: { name: string }) => r.name);
    expect(await zones('private.open_slot_keys($1)')).toEqual([
      'America/Chicago',
      'America/Denver',
      'America/New_York',
    ]);
    expect(await zones('private.open_slot_keys($1, private.earth_point(39.74, -104.99), 20000, null)')).toEqual([
      'America/Denver',
    ]);
    expect(await zones(`private.open_slot_keys($1, null, null, box(point(-98, 30), point(-73, 41)))`)).toEqual([
      'America/Chicago',
      'America/New_York',
    ]);
    await q(`insert into private.opening_hours (bar_id, day_of_week, opens, closes)
             select 20000 + g, d, '12:00', '23:00' from generate_series(1, 2500, 2) g, generate_series(1, 7) d`);
    await q(`insert into private.opening_hours (bar_id, day_of_week, opens, closes)
             select 20000 + g, d, '21:00', '03:00' from generate_series(2, 2500, 2) g, generate_series(1, 7) d`);
    expect((await q('select private.open_bars_fewer_than($1, null, null, null, 2000) as few', [at]))[0].few).toBe(
      false,
    );
    for (const instant of [at, '2026-11-26T08:15:00Z', '2026-11-26T18:00:00Z']) {
      const open = `private.bar_filters_match(b.id, $1, true, null, null, null, null)`;
      const near = await bars(
        `p_latitude => $2, p_longitude => $3, p_radius => 10, p_limit => 5, p_open_now => true, p_now => $1`,
        [instant, ...center],
      );
      const expectedNear = (
        await q(
          `select b.name from private.bars b
           where earth_distance(b.geo, private.earth_point($2, $3)) <= 10 * 1609.344 and ${open}
           order by b.geo <-> private.earth_point($2, $3), b.id limit 5`,
          [instant, ...center],
        )
      ).map((r: { name: string }) => r.name);
      expect({ instant, got: ids(near) }).toEqual({ instant, got: expectedNear });
      if (instant !== '2026-11-26T18:00:00Z') expect(expectedNear).toHaveLength(5); // 21:30 and 01:15 in Denver
      const named = await bars(`p_limit => 5, p_open_at => $1`, [instant]);
      const expectedNamed = (
        await q(
          `select b.name from private.bars b where private.bar_filters_match(b.id, $1, null, $1, null, null, null)
           order by b.name, b.id limit 5`,
          [instant],
        )
      ).map((r: { name: string }) => r.name);
      expect({ instant, got: ids(named) }).toEqual({ instant, got: expectedNamed });
    }
  }, 180_000); // 20,000+ bars written through every trigger: seconds alone, minutes beside a busy suite

  test('a name-order walk over a box reads at most 20,000 entries of the name index; the page is the same', async () => {
    // 20,100 bars outside the box come first in name order, then 2,000 inside it (more than the
    // walk's "few bars" probe), three of them at price level 2: the walk reads no bar of the box
    // before its entry cap and the collect step finds the page.
    await q(`insert into private.cities (id, name, state, time_zone, latitude, longitude) overriding system value
             values (5, 'Miami', 'FL', 'America/New_York', 25.77, -80.19)`);
    await q(`insert into private.bars (id, city_id, name, address, latitude, longitude, price_level, google_rating) overriding system value
             select 100000 + g, 5, 'AA out ' || lpad(g::text, 5, '0'), g || ' Out St',
                    47 + (g * 7919 % 10000) * 0.0001, -122 + (g * 104729 % 10000) * 0.0001, 3, 4.0
             from generate_series(1, 20100) g
             union all
             select 200000 + g, 5, 'MM in ' || lpad(g::text, 5, '0'), g || ' In St',
                    25.70 + (g * 7919 % 1000) * 0.0001, -80.25 + (g * 104729 % 1000) * 0.0001,
                    case when g in (7, 500, 1999) then 2 else 3 end, 4.0
             from generate_series(1, 2000) g`);
    await q('analyze private.bars');
    const box =
      'p_corner1_latitude => 25.6, p_corner1_longitude => -80.3, p_corner2_latitude => 25.9, p_corner2_longitude => -80.1';
    const brute = async (price: number, limit: number) =>
      (
        await q(
          `select b.name from private.bars b
           where b.location <@ box(point(-80.3, 25.6), point(-80.1, 25.9)) and b.price_level = $1
           order by b.name, b.id limit $2`,
          [price, limit],
        )
      ).map((r: { name: string }) => r.name);
    expect(ids(await bars(`${box}, p_price_levels => '{2}'`))).toEqual(await brute(2, 100));
    expect(await brute(2, 100)).toEqual(['MM in 00007', 'MM in 00500', 'MM in 01999']);
    expect(ids(await bars(`${box}, p_price_levels => '{3}', p_limit => 5`))).toEqual(await brute(3, 5));
    expect(await brute(3, 5)).toHaveLength(5);
    // bars of the box first in name order: the walk fills the page itself
    await q(`insert into private.bars (id, city_id, name, address, latitude, longitude, price_level, google_rating) overriding system value
             select 300000 + g, 5, '0 in ' || lpad(g::text, 5, '0'), g || ' First St',
                    25.70 + (g * 7919 % 1000) * 0.0001, -80.25 + (g * 104729 % 1000) * 0.0001, 3, 4.0
             from generate_series(1, 50) g`);
    expect(ids(await bars(`${box}, p_price_levels => '{3}', p_limit => 5`))).toEqual(await brute(3, 5));
    expect(await brute(3, 5)).toEqual(['0 in 00001', '0 in 00002', '0 in 00003', '0 in 00004', '0 in 00005']);
  }, 180_000);
});
