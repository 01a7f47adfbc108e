/**
 * The derived tables behind the fast paths (2-partner-api.sql: bar_live,
 * city_bar_counts, city_post_hours; bar_open_slots, the filters' "open at an
 * instant" index) must equal a recomputation from the base
 * tables after every kind of change. Correctness only; speed is bench/'s job.
 */
import { createTestDatabase, type TestDatabase } from '../support/db';
import { DRIFT } from '../support/derived-drift';

describe('derived tables stay exact', () => {
  let db: TestDatabase;
  const q = async (sql: string, values: unknown[] = []) => (await db.owner.query(sql, values)).rows;
  const drift = async () => ({
    barLive: (await q(DRIFT.barLive))[0].n as number,
    openSlots: (await q(DRIFT.openSlots))[0].n as number,
    zoneExtents: (await q(DRIFT.zoneExtents))[0].n as number,
    zoneExtentsExact: (await q(DRIFT.zoneExtentsExact))[0].n as number,
    barCounts: (await q(DRIFT.barCounts))[0].n as number,
    postHours: (await q(DRIFT.postHours))[0].n as number,
  });
  const none = { barLive: 0, openSlots: 0, zoneExtents: 0, zoneExtentsExact: 0, barCounts: 0, postHours: 0 };

  beforeAll(async () => {
    db = await createTestDatabase();
    await q(`insert into private.cities (name, state, time_zone, latitude, longitude)
             values ('Austin', 'TX', 'America/Chicago', 30.27, -97.74), ('Dallas', 'TX', 'America/Chicago', 32.78, -96.8),
                    ('Denver', 'CO', 'America/Denver', 39.74, -104.99)`);
    await q(`insert into private.users (username) values ('ann'), ('bob')`);
  });
  afterAll(async () => db.drop());

  it('after bulk inserts into every source table', async () => {
    await q(`insert into private.bars (city_id, name, address, latitude, longitude)
             select 1 + (g % 2), 'Bar ' || g, g || ' Main St', 30.27, -97.74 from generate_series(1, 40) g`);
    await q(`insert into private.opening_hours (bar_id, day_of_week, opens, closes)
             select b.id, d, '18:00', case when b.id % 3 = 0 then '02:00'::time else '23:00'::time end
             from private.bars b cross join generate_series(1, 7) d where b.id % 5 <> 0`);
    await q(`insert into private.occupancy (bar_id, current_intensity, weekly_profile)
             select id, id % 100, array_fill(10::smallint, array[168]) from private.bars where id % 4 <> 0`);
    await q(`insert into private.posts (bar_id, city_id, user_id, content, created_at)
             select b.id, b.city_id, 1 + (g % 2), 'hi', now() - g * interval '17 minutes'
             from private.bars b cross join generate_series(1, 10) g`);
    expect(await drift()).toEqual(none);
    expect((await q('select count(*)::int as n from private.bar_live'))[0].n).toBe(40);
    expect((await q('select count(*)::int as n from private.bar_open_slots'))[0].n).toBeGreaterThan(200);
    expect((await q('select count(*)::int as n from private.city_post_hours'))[0].n).toBeGreaterThan(1);
  });

  it('after updates that move rows between bars, cities and hours', async () => {
    await q(`update private.opening_hours set closes = '01:00' where bar_id in (1, 2) and day_of_week = 7`);
    await q(`update private.opening_hours set bar_id = 5 where bar_id = 4 and day_of_week = 1`);
    // A bar with posts cannot change city (posts reference (bar, city)); these have none yet.
    await q(`insert into private.bars (city_id, name, address, latitude, longitude)
             select 1, 'New ' || g, g || ' Side St', 30.27, -97.74 from generate_series(1, 3) g`);
    await q(`update private.bars set city_id = 2, name = name || ' (moved)' where name like 'New %'`);
    await q(`insert into private.opening_hours (bar_id, day_of_week, opens, closes)
             select id, 5, '21:00', '04:00' from private.bars where name like 'New %'`);
    // to another time zone: a bar moving city, a city changing its time zone (a new one, then back)
    await q(`update private.bars set city_id = 3 where name = 'New 1 (moved)'`);
    await q(`update private.cities set time_zone = 'America/Phoenix' where name = 'Dallas'`);
    expect(await drift()).toEqual(none);
    await q(`update private.cities set time_zone = 'America/Chicago' where name = 'Dallas'`);
    // bars moving within their city, far out (the zone's extent grows)
    await q(`update private.bars set latitude = 31.5, longitude = -99.9 where id in (2, 3)`);
    await q(`update private.occupancy set current_intensity = 99 where bar_id in (1, 2, 3)`);
    await q(`update private.occupancy set bar_id = 4 where bar_id = 5`);
    await q(`update private.posts set created_at = created_at - interval '3 hours' where id % 7 = 0`);
    expect(await drift()).toEqual(none);
  });

  it('time zone extents shrink when the bar on their edge is deleted or moved, or its city changes zone', async () => {
    const extent = async (zone: string) =>
      (await q(`select location_extent::text as e from private.time_zones where name = $1`, [zone]))[0]?.e as string;
    await q(`insert into private.bars (city_id, name, address, latitude, longitude)
             values (1, 'Far north', '1 Edge Rd', 33.5, -97.0), (1, 'Far west', '2 Edge Rd', 30.0, -99.5)`);
    expect(await drift()).toEqual(none);
    const wide = await extent('America/Chicago');
    await q(`delete from private.bars where name = 'Far north'`);
    expect(await drift()).toEqual(none);
    expect(await extent('America/Chicago')).not.toBe(wide); // shrunk
    await q(`update private.bars set latitude = 30.3, longitude = -97.8 where name = 'Far west'`); // within its city
    expect(await drift()).toEqual(none);
    await q(`update private.bars set latitude = 30.0, longitude = -99.5 where name = 'Far west'`);
    await q(`update private.bars set city_id = 3 where name = 'Far west'`); // to Denver's zone
    expect(await drift()).toEqual(none);
    await q(`insert into private.cities (name, state, time_zone, latitude, longitude)
             values ('El Paso', 'TX', 'America/Chicago', 31.76, -106.44)`);
    await q(`insert into private.bars (city_id, name, address, latitude, longitude)
             select id, 'Border', '3 Edge Rd', 31.76, -106.44 from private.cities where name = 'El Paso'`);
    expect(await drift()).toEqual(none);
    await q(`update private.cities set time_zone = 'America/Denver' where name = 'El Paso'`); // its bars leave Chicago's zone
    expect(await drift()).toEqual(none);
    // the comparison can fail: a stale (too wide) extent is seen
    await q(
      `update private.time_zones set location_extent = box(point(-120, 20), point(-80, 50)) where name = 'America/Chicago'`,
    );
    expect((await drift()).zoneExtentsExact).toBe(1);
    await q(`select private.time_zone_extents_recompute(array['America/Chicago'])`);
    expect(await drift()).toEqual(none);
    await q(`delete from private.bars where name in ('Far west', 'Border')`);
    await q(`delete from private.cities where name = 'El Paso'`);
    expect(await drift()).toEqual(none);
  });

  it('after deletes, including a bar with everything it owns', async () => {
    await q(`delete from private.opening_hours where bar_id = 1 and day_of_week in (1, 2)`);
    await q(`delete from private.occupancy where bar_id = 2`);
    await q(`delete from private.posts where id % 3 = 0`);
    await q(`delete from private.bars where id = 9`); // cascades to hours, occupancy, posts
    expect(await drift()).toEqual(none);
  });

  it('after TRUNCATE of the bar data (the seed --reset path) and a fresh load', async () => {
    await q(`truncate private.posts, private.occupancy, private.opening_hours, private.bars cascade`);
    expect((await q('select count(*)::int as n from private.bar_live'))[0].n).toBe(0);
    expect(await drift()).toEqual(none);
    await q(
      `insert into private.bars (city_id, name, address, latitude, longitude) values (1, 'Again', '1 St', 30.27, -97.74)`,
    );
    await q(`insert into private.opening_hours (bar_id, day_of_week, opens, closes)
             select id, 3, '20:00', '03:00' from private.bars`);
    expect(await drift()).toEqual(none);
  });
});
