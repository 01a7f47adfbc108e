/**
 * Precomputed bar documents (db/migrations/functions/10-bar-documents.sql) and
 * the events_today fragments of bars_by_city (23-bars-by-city.sql) must equal a
 * recomputation from the base tables after every kind of change to every source
 * table. The recomputation uses the independent per-field helpers of the
 * committed schema, kept test-only in test_ref (test/support/reference-recomputations.sql:
 * bar_hours_json, bar_categories_json, bar_occupancy_json ...),
 * so the whole list and detail bodies are compared as text, byte for byte.
 */
import { createTestDatabase, type TestDatabase } from '../support/db';

const NOW = '2026-11-25T04:30:00Z'; // 22:30 Tuesday in Chicago: inside the after-midnight slots

// Bars whose stored list or detail body differs from a recomputation, plus
// documents without a bar and bars without a document.
const DRIFT = `
  with expected as (
    select b.id,
      json_build_object(
        'id', b.id::text, 'name', b.name, 'address', b.address, 'city', c.name, 'state', c.state,
        'zip_code', b.zip_code, 'latitude', b.latitude, 'longitude', b.longitude, 'phone', b.phone,
        'website', b.website, 'google_rating', b.google_rating, 'google_ratings_total', b.google_ratings_total,
        'primary_category', test_ref.bar_primary_category_json(b.id),
        'categories', test_ref.bar_categories_json(b.id),
        'hours', test_ref.bar_hours_json(b.id),
        'profile_picture_url', b.profile_picture_url,
        'photos', test_ref.bar_photos_json(b.id),
        'occupancy', test_ref.bar_occupancy_json(b.id, $1::timestamptz at time zone c.time_zone, false))::text as list,
      json_build_object(
        'id', b.id::text, 'name', b.name, 'address', b.address, 'city', c.name, 'state', c.state,
        'zip_code', b.zip_code, 'latitude', b.latitude, 'longitude', b.longitude, 'phone', b.phone,
        'website', b.website, 'google_rating', b.google_rating, 'google_ratings_total', b.google_ratings_total,
        'primary_category', test_ref.bar_primary_category_json(b.id),
        'categories', test_ref.bar_categories_json(b.id),
        'hours', test_ref.bar_hours_json(b.id),
        'profile_picture_url', b.profile_picture_url,
        'photos', test_ref.bar_photos_json(b.id),
        'occupancy', test_ref.bar_occupancy_json(b.id, $1::timestamptz at time zone c.time_zone, true),
        'description', b.description,
        'price_level', b.price_level,
        'events', (select coalesce(json_agg(private.event_short_json(e) order by e.start_at, e.id), '[]'::json)
                   from (select * from private.events e where e.bar_id = b.id and e.end_at > $1::timestamptz
                         order by e.start_at, e.id limit 10) e))::text as detail
    from private.bars b join private.cities c on c.id = b.city_id),
  actual as (
    select d.bar_id as id,
      (select r.body::text from private.bar_list_row(d.bar_id, $1::timestamptz) r) as list,
      (select r.body::text from private.bar_detail_row(d.bar_id, $1::timestamptz) r) as detail
    from private.bar_documents d)
  select count(*)::int as n from ((select * from expected except select * from actual)
                                  union all (select * from actual except select * from expected)) x`;

// events_today of every city as bars_by_city serves it (through the fragments)
// against a recomputation.
const EVENTS_DRIFT = `
  select count(*)::int as n from private.cities c
  cross join lateral (select ($1::timestamptz at time zone c.time_zone)::date as day) d
  where private.city_events_today(c, d.day)::text[] is distinct from (
    select coalesce(array_agg(private.event_with_bar_json(e, b)::text order by e.start_at, e.id), '{}')
    from private.events e join private.bars b on b.id = e.bar_id
    where e.city_id = c.id
      and (e.start_at at time zone c.time_zone)::date = d.day)`;

// Stored next-events fragments that differ from a recomputation as of now() (what the triggers store),
// plus bars with events but no fragment and fragments of bars without events.
const NEXT_EVENTS_DRIFT = `
  with expected as (
    select b.bar_id, f.body, f.valid_until
    from (select distinct bar_id from private.events) b
    cross join lateral private.bar_next_events_build(b.bar_id, now()) f),
  actual as (select bar_id, body, valid_until from private.bar_next_events)
  select count(*)::int as n from ((select * from expected except select * from actual)
                                  union all (select * from actual except select * from expected)) x`;

describe('bar documents and events_today fragments stay exact', () => {
  let db: TestDatabase;
  const q = async (sql: string, values: unknown[] = []) => (await db.owner.query(sql, values)).rows;
  const drift = async () => (await q(DRIFT, [NOW]))[0].n as number;
  const eventsDrift = async () => (await q(EVENTS_DRIFT, [NOW]))[0].n as number;
  const nextEventsDrift = async () => (await q(NEXT_EVENTS_DRIFT))[0].n as number;
  const documents = async () => (await q('select count(*)::int as n from private.bar_documents'))[0].n as number;

  const load = async () => {
    await q(`insert into private.categories (name, slug) values ('Pub', 'pub'), ('Dive Bar', 'dive-bar'), ('Wine "Bar"', 'wine-bar')
             on conflict do nothing`);
    await q(`insert into private.bars (city_id, name, address, latitude, longitude, phone, website, google_rating,
               google_ratings_total, price_level, description, zip_code)
             select 1 + (g % 2), 'Bar ' || g || case when g = 3 then ' "quoted" \\ é' else '' end, g || ' Main St',
                    30.27 + g / 1000.0, -97.74 - g / 3000.0, case when g % 2 = 0 then '+1 512 555 0100' end,
                    'https://bar' || g || '.example', case when g % 4 <> 0 then (g % 50) / 10.0 end, g * 7,
                    case when g % 3 <> 0 then 1 + g % 4 end, case when g % 2 = 1 then 'Line one
line two' end, '7870' || g % 10
             from generate_series(1, 24) g`);
    await q(`insert into private.bar_categories (bar_id, category_id, is_primary, position)
             select b.id, k.id, k.id = 1 + b.id % 3, k.id from private.bars b, private.categories k where (b.id + k.id) % 4 <> 0`);
    await q(`insert into private.photos (bar_id, url, position)
             select b.id, 'https://img.example/' || b.id || '/' || g, 3 - g from private.bars b, generate_series(1, 2) g where b.id % 5 <> 0`);
    await q(`insert into private.opening_hours (bar_id, day_of_week, opens, closes)
             select b.id, d, '18:00', case when b.id % 3 = 0 then '02:00'::time else '23:00'::time end
             from private.bars b cross join generate_series(1, 7) d where b.id % 5 <> 0`);
    await q(`insert into private.occupancy (bar_id, current_intensity, weekly_profile)
             select id, id * 4 % 100, array(select (h % 100)::smallint from generate_series(1, 168) h)
             from private.bars where id % 4 <> 0`);
    await q(
      `insert into private.events (bar_id, city_id, title, description, classification, start_at, end_at)
             select b.id, b.city_id, 'Event ' || g, 'About ' || g, 'trivia',
                    $1::timestamptz + (g - 5) * interval '3 hours', $1::timestamptz + (g - 4) * interval '3 hours'
             from private.bars b, generate_series(1, 12) g where b.id % 2 = 0`,
      [NOW],
    );
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    await q(`insert into private.cities (name, state, time_zone, latitude, longitude)
             values ('Austin', 'TX', 'America/Chicago', 30.27, -97.74), ('Dallas', 'TX', 'America/Chicago', 32.78, -96.8)`);
    await load();
  });
  afterAll(async () => db.drop());

  it('after inserts into every source table (the comparison can fail: a tampered document is seen)', async () => {
    expect(await documents()).toBe(24);
    expect(await drift()).toBe(0);
    expect(await eventsDrift()).toBe(0);
    expect(await nextEventsDrift()).toBe(0);
    await q(`update private.bar_documents set head = replace(head, '"Bar 2"', '"Bar two"') where bar_id = 2`);
    expect(await drift()).toBe(2); // the stored body and the recomputed one
    await q(`select private.bar_documents_refresh(array[2::bigint])`);
    expect(await drift()).toBe(0);
  });

  it('after updates of bars, bar_categories, categories, photos, opening_hours and cities', async () => {
    await q(`update private.bars set name = name || ' II', price_level = 4, description = null where id in (1, 2)`);
    await q(`update private.bars set google_rating = 4.5, latitude = 30.5 where id = 4`);
    await q(`update private.bar_categories set is_primary = not is_primary where bar_id = 6 and category_id in (1, 3)`);
    await q(`update private.bar_categories set position = 10 - position where bar_id = 7`);
    await q(`update private.bar_categories set bar_id = 8 where bar_id = 9 and not is_primary
               and category_id not in (select category_id from private.bar_categories where bar_id = 8)`);
    await q(`update private.categories set name = 'Public House' where slug = 'pub'`);
    await q(`update private.photos set position = position + 5 where bar_id = 11 and position = 1`);
    await q(`update private.photos set bar_id = 12 where bar_id = 13`);
    await q(`update private.opening_hours set closes = '01:30' where bar_id = 1 and day_of_week = 2`);
    await q(`update private.opening_hours set bar_id = 5 where bar_id = 4 and day_of_week = 1`);
    await q(`update private.cities set name = 'Austin City', state = 'OK' where id = 1`);
    await q(`update private.cities set time_zone = 'America/New_York' where id = 2`);
    // the stored hourly_data follows a new weekly profile; an intensity update keeps it
    await q(
      `update private.occupancy set weekly_profile[49:72] = array_fill(7::smallint, array[24]) where bar_id in (1, 5)`,
    );
    await q(`update private.occupancy set current_intensity = 99, weekly_profile[50] = null where bar_id = 6`);
    await q(`update private.occupancy set current_intensity = 3 where bar_id = 7`);
    expect(await drift()).toBe(0);
    // every day of the week (the pinned instant is a Wednesday in Chicago; the detail shows one day)
    for (let day = 0; day < 7; day++)
      expect(await q(DRIFT, [new Date(Date.parse(NOW) + day * 86400e3).toISOString()])).toEqual([{ n: 0 }]);
    expect(await eventsDrift()).toBe(0);
    expect(await nextEventsDrift()).toBe(0);
  });

  it('events_today follows event inserts, updates, deletes and bar renames', async () => {
    expect(await eventsDrift()).toBe(0); // fragments stored now
    expect((await q('select count(*)::int as n from private.city_events_today'))[0].n).toBeGreaterThan(0);
    await q(
      `insert into private.events (bar_id, city_id, title, classification, start_at, end_at)
             select id, city_id, 'Late addition', 'trivia', $1::timestamptz - interval '1 hour', $1::timestamptz
             from private.bars where id = 2`,
      [NOW],
    );
    expect(await eventsDrift()).toBe(0);
    await q(`update private.events set title = 'Renamed' where title = 'Late addition'`);
    expect(await eventsDrift()).toBe(0);
    await q(`update private.bars set name = 'Bar Renamed' where id = 2`);
    expect(await eventsDrift()).toBe(0);
    expect(await nextEventsDrift()).toBe(0);
    await q(`delete from private.events where title = 'Renamed'`);
    expect(await eventsDrift()).toBe(0);
    expect(await nextEventsDrift()).toBe(0);
    await q(`update private.cities set time_zone = 'America/Los_Angeles' where id = 1`);
    expect(await drift()).toBe(0);
    expect(await eventsDrift()).toBe(0);
    expect(await nextEventsDrift()).toBe(0);
  });

  it('the detail form is exact at instants outside a stored next-events window (before, at and after its end)', async () => {
    // events of bar 3 relative to the real clock (the fragments are built as of now()): 12, an hour apart
    await q(`insert into private.events (bar_id, city_id, title, classification, start_at, end_at)
             select 3, city_id, 'Soon ' || g, 'trivia', now() + g * interval '1 hour', now() + (g + 2) * interval '1 hour'
             from private.bars, generate_series(1, 12) g where id = 3`);
    const windows = await q(
      `select bar_id, valid_from, valid_until from private.bar_next_events where valid_until is not null order by bar_id`,
    );
    expect(windows.map((w) => Number(w.bar_id))).toContain(3);
    for (const w of windows) {
      const until = new Date(w.valid_until as Date).getTime();
      for (const at of [
        new Date(w.valid_from as Date).getTime() - 3600e3 * 24 * 30, // before the fragment was built
        until - 1,
        until, // the first listed event has ended: the fragment no longer answers
        until + 3600e3 * 24 * 365,
      ])
        expect(await q(DRIFT, [new Date(at).toISOString()])).toEqual([{ n: 0 }]);
    }
    // the comparison can fail: a tampered fragment inside its window is seen
    const bar = 3;
    await q(`update private.bar_next_events set body = '[]' where bar_id = $1`, [bar]);
    expect((await q(DRIFT, [new Date(Date.now() + 1000).toISOString()]))[0].n).toBeGreaterThan(0);
    expect(await nextEventsDrift()).toBe(2);
    // an expired fragment is renewed by the refresh, a current one is left alone
    await q(`update private.bar_next_events set valid_until = now() - interval '1 second' where bar_id = $1`, [bar]);
    expect((await q(`select private.bar_next_events_refresh_expired() as n`))[0].n).toBe(1);
    expect(await nextEventsDrift()).toBe(0);
  });

  it('after deletes, including a bar with everything it owns', async () => {
    await q(`delete from private.bar_categories where bar_id = 10`);
    await q(`delete from private.photos where bar_id = 11`);
    await q(`delete from private.opening_hours where bar_id = 12 and day_of_week in (1, 2)`);
    await q(`delete from private.occupancy where bar_id = 2`);
    await q(`delete from private.bars where id = 14`); // cascades to categories, hours, photos, events
    expect(await documents()).toBe(23);
    expect(await drift()).toBe(0);
    expect(await eventsDrift()).toBe(0);
    expect(await nextEventsDrift()).toBe(0);
  });

  it('after TRUNCATE of each source table, and a fresh load', async () => {
    await q(`truncate private.photos`);
    expect(await drift()).toBe(0);
    await q(`truncate private.opening_hours`);
    expect(await drift()).toBe(0);
    await q(`truncate private.bar_categories`);
    expect(await drift()).toBe(0);
    await q(`truncate private.categories cascade`);
    expect(await drift()).toBe(0);
    await q(`truncate private.events`);
    expect(await eventsDrift()).toBe(0);
    expect((await q('select count(*)::int as n from private.bar_next_events'))[0].n).toBe(0);
    await q(`truncate private.bars cascade`);
    expect(await documents()).toBe(0);
    expect(await drift()).toBe(0);
    await load();
    expect(await documents()).toBe(24);
    expect(await drift()).toBe(0);
    expect(await eventsDrift()).toBe(0);
    expect(await nextEventsDrift()).toBe(0);
    await q(`truncate private.cities cascade`);
    expect(await documents()).toBe(0);
    expect(await drift()).toBe(0);
  });
});
