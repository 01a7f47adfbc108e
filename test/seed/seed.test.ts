import { SeedRefusedError, barDataTables, seedDemoData } from '../../db/seed';
import { selectCities } from '../../db/seed/cities';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { DRIFT } from '../support/derived-drift';

const bars = 300;
// Friday 22:30 in New York, 19:30 in Los Angeles: plenty of bars open, some closed.
const now = new Date('2026-11-21T03:30:00Z');
const anchor = '2026-11-21T03:00:00Z';

/** One md5 per bar-data table over its rows in a fixed order (ids included: they are generated deterministically). */
async function checksums(db: TestDatabase): Promise<Record<string, string>> {
  const result: Record<string, string> = {};
  for (const table of barDataTables) {
    const { rows } = await db.owner.query<{ md5: string | null }>(
      `select md5(string_agg(x::text, '|' order by x::text)) as md5 from private.${table} x`,
    );
    result[table] = rows[0]!.md5 ?? 'empty';
  }
  return result;
}

async function one<T>(db: TestDatabase, sql: string, params: unknown[] = []): Promise<T> {
  const { rows } = await db.owner.query(sql, params);
  return rows[0] as T;
}

describe('demo data generator', () => {
  let a: TestDatabase;
  let b: TestDatabase;
  const progress: string[] = [];

  beforeAll(async () => {
    [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    await seedDemoData(a.url, { bars, seed: 7, now, onProgress: (m) => progress.push(m) });
  });
  afterAll(() => Promise.all([a?.drop(), b?.drop()]));

  test('produces the promised counts', async () => {
    const counts = await one<Record<string, number>>(
      a,
      `
      select (select count(*)::int from private.bars) as bars,
             (select count(*)::int from private.cities) as cities,
             (select count(*)::int from private.events) as events,
             (select count(*)::int from private.posts) as posts,
             (select count(*)::int from private.users) as users,
             (select count(*)::int from private.occupancy) as occupancy,
             (select count(distinct bar_id)::int from private.opening_hours) as bars_with_hours,
             (select max(n)::int from (select count(*) as n from private.photos group by bar_id) p) as max_photos,
             (select max(n)::int from (select count(*) as n from private.post_media group by post_id) m) as max_media,
             (select count(*)::int from private.bar_groups) as group_members`,
    );
    expect(counts.bars).toBe(bars);
    expect(counts.cities).toBe(selectCities(bars).length);
    expect(counts.cities).toBeGreaterThanOrEqual(10);
    expect(counts.events! / bars).toBeGreaterThan(2.5);
    expect(counts.events! / bars).toBeLessThan(3.5);
    expect(counts.posts! / bars).toBeGreaterThan(8.5);
    expect(counts.posts! / bars).toBeLessThan(11.5);
    expect(counts.users).toBeGreaterThan(0);
    expect(counts.occupancy).toBe(bars);
    expect(counts.bars_with_hours).toBe(bars);
    expect(counts.max_photos).toBeLessThanOrEqual(5);
    expect(counts.max_media).toBeLessThanOrEqual(3);
    expect(counts.group_members).toBeGreaterThan(0);
  });

  test('reports progress per phase', () => {
    expect(progress.some((m) => /^seed: bars: 300 rows in [\d.]+ s \(elapsed [\d.]+ s\)$/.test(m))).toBe(true);
    expect(progress.at(-1)).toMatch(/^seed: done, 300 bars in/);
    // the steps run as DO blocks report the rows they wrote (they said 0 before)
    expect(progress.some((m) => /^seed: bar_live and open slots: 300 rows in /.test(m))).toBe(true);
    expect(progress.some((m) => /^seed: bar documents: 300 rows in /.test(m))).toBe(true);
    const terms = progress.find((m) => m.startsWith('seed: search terms: '));
    expect(Number(/: ([\d,]+) rows/.exec(terms ?? '')?.[1]?.replace(/,/g, ''))).toBeGreaterThan(300);
  });

  test('the hourly_data texts the seed stores per profile equal their recomputation', async () => {
    const drift = await one<{ n: number; total: number }>(
      a,
      `select count(*) filter (where hourly_days is distinct from private.hourly_days_json(weekly_profile))::int as n,
              count(*)::int as total from private.occupancy`,
    );
    expect(drift).toEqual({ n: 0, total: 300 });
  });

  test('the next-events fragments the seed builds set-based equal the per-bar definition', async () => {
    const drift = await one<{ n: number; total: number }>(
      a,
      `select count(*) filter (where (n.body, n.valid_until) is distinct from (f.body, f.valid_until))::int as n,
              count(*)::int as total
       from private.bar_next_events n cross join lateral private.bar_next_events_build(n.bar_id, n.valid_from) f`,
    );
    expect(drift.n).toBe(0);
    expect(drift.total).toBe(
      (await one<{ n: number }>(a, 'select count(distinct bar_id)::int as n from private.events')).n,
    );
  });

  test('every bar has exactly one primary category and at most three', async () => {
    const bad = await one<{ n: number }>(
      a,
      `
      select count(*)::int as n from private.bars b
      where (select count(*) from private.bar_categories c where c.bar_id = b.id and c.is_primary) <> 1
         or (select count(*) from private.bar_categories c where c.bar_id = b.id) not between 1 and 3`,
    );
    expect(bad.n).toBe(0);
  });

  test('cities span time zones and names with spaces, apostrophes and non-ASCII letters', async () => {
    const r = await one<Record<string, number | boolean>>(
      a,
      `
      select count(distinct time_zone)::int as zones,
             count(distinct time_zone) filter (where name ~ '[''‘’]' or name ~ '[^\\x01-\\x7f]')::int as unusual_zones,
             bool_or(name like '% %') as space, bool_or(name like '%''%') as apostrophe,
             bool_or(name ~ '[^\\x01-\\x7f]') as non_ascii,
             bool_or(name = 'Española' and state = 'NM') as espanola
      from private.cities`,
    );
    expect(r).toEqual({
      zones: expect.any(Number),
      unusual_zones: expect.any(Number),
      space: true,
      apostrophe: true,
      non_ascii: true,
      espanola: true,
    });
    expect(r.zones).toBeGreaterThanOrEqual(4);
    expect(r.unusual_zones).toBeGreaterThanOrEqual(4);
  });

  test('hours have several slots a day, after-midnight closing and closed days', async () => {
    const r = await one<Record<string, number>>(
      a,
      `
      select (select count(*)::int from private.opening_hours where closes < opens) as after_midnight,
             (select count(*)::int from (select 1 from private.opening_hours group by bar_id, day_of_week having count(*) > 1) s) as split_days,
             (select count(*)::int from (select 1 from private.opening_hours group by bar_id having count(distinct day_of_week) < 7) s) as with_closed_days,
             (select count(*)::int from private.opening_hours where day_of_week in (5, 6) and closes < opens and closes > '00:00') as weekend_late`,
    );
    for (const value of Object.values(r)) expect(value).toBeGreaterThan(0);
  });

  test('occupancy is 0 exactly when the bar is closed by its hours, at seed time and in the weekly profile', async () => {
    // Open-ness recomputed from opening_hours, independently of the generator's templates.
    const r = await one<Record<string, number>>(
      a,
      `
      with at_hour as (
        select b.id, o.current_intensity, o.weekly_profile, h.idx,
               timestamp '2024-01-01 00:00' + make_interval(hours => h.idx) as local -- 2024-01-01 is a Monday
        from private.bars b join private.occupancy o on o.bar_id = b.id cross join generate_series(0, 167) as h(idx)
      ), open_at as (
        select x.*, exists (
          select from private.opening_hours s
          where s.bar_id = x.id
            and ((s.day_of_week = extract(isodow from x.local) and x.local::time >= s.opens
                  and (s.closes <= s.opens or x.local::time < s.closes))
              or (s.day_of_week = extract(isodow from x.local - interval '1 day') and s.closes <= s.opens
                  and x.local::time < s.closes))) as open
        from at_hour x
      ), now_local as (
        select b.id, o.current_intensity,
               (extract(isodow from $1::timestamptz at time zone c.time_zone) - 1) * 24
                 + extract(hour from $1::timestamptz at time zone c.time_zone) as idx
        from private.bars b join private.cities c on c.id = b.city_id join private.occupancy o on o.bar_id = b.id
      )
      select count(*) filter (where open <> (weekly_profile[idx + 1] > 0))::int as profile_mismatches,
             (select count(*) from now_local n join open_at x on x.id = n.id and x.idx = n.idx
               where x.open <> (n.current_intensity > 0))::int as now_mismatches,
             (select count(*) from now_local where current_intensity = 0)::int as closed_now,
             (select count(*) from now_local where current_intensity > 0)::int as open_now,
             avg(weekly_profile[idx + 1]) filter (where idx in (4 * 24 + 22, 5 * 24 + 22)) as friday_saturday_22,
             avg(weekly_profile[idx + 1]) filter (where idx = 1 * 24 + 16) as tuesday_16
      from open_at`,
      [anchor],
    );
    expect(r.profile_mismatches).toBe(0);
    expect(r.now_mismatches).toBe(0);
    expect(r.closed_now).toBeGreaterThan(0);
    expect(r.open_now).toBeGreaterThan(0);
    expect(Number(r.friday_saturday_22)).toBeGreaterThan(2 * Number(r.tuesday_16));
  });

  test('events cover every classification, in local evenings, 1-4 hours, 60 days either side', async () => {
    const { rows } = await a.owner.query<{ classification: string }>(
      'select distinct classification from private.events order by 1',
    );
    expect(rows.map((r) => r.classification)).toEqual([
      'comedy',
      'dj',
      'happy_hour',
      'karaoke',
      'live_music',
      'special',
      'sports',
      'trivia',
    ]);
    const r = await one<Record<string, number>>(
      a,
      `
      select count(*) filter (where extract(hour from e.start_at at time zone c.time_zone) not between 12 and 23)::int as odd_start,
             count(*) filter (where e.end_at - e.start_at not between interval '1 hour' and interval '4 hours')::int as odd_length,
             count(*) filter (where e.start_at not between $1::timestamptz - interval '61 days' and $1::timestamptz + interval '61 days')::int as out_of_range,
             count(*) filter (where e.created_at > least(e.start_at, $1::timestamptz))::int as created_late,
             count(*) filter (where e.start_at > $1::timestamptz)::int as upcoming
      from private.events e join private.cities c on c.id = e.city_id`,
      [anchor],
    );
    expect(r).toEqual({ odd_start: 0, odd_length: 0, out_of_range: 0, created_late: 0, upcoming: expect.any(Number) });
    expect(r.upcoming).toBeGreaterThan(bars);
  });

  test('posts are from the last 60 days with 0-3 absolute https media', async () => {
    const r = await one<Record<string, number>>(
      a,
      `
      select (select count(*) from private.posts where created_at not between $1::timestamptz - interval '61 days' and $1::timestamptz)::int as out_of_range,
             (select count(*) from private.post_media where url !~ '^https://')::int as bad_media,
             (select count(*) from private.photos where url !~ '^https://')::int as bad_photos,
             (select count(*) from private.bars where website !~ '^https://' or profile_picture_url !~ '^https://')::int as bad_bar_urls,
             (select count(*) from private.bars where google_rating not between 0 and 5 or price_level not between 1 and 4)::int as bad_values`,
      [anchor],
    );
    expect(r).toEqual({ out_of_range: 0, bad_media: 0, bad_photos: 0, bad_bar_urls: 0, bad_values: 0 });
  });

  test('groups hold bars of their own city', async () => {
    const r = await one<Record<string, number>>(
      a,
      `
      select count(distinct g.id)::int as groups, count(*) filter (where b.city_id <> g.city_id)::int as foreign_bars
      from private.groups g join private.bar_groups bg on bg.group_id = g.id join private.bars b on b.id = bg.bar_id`,
    );
    expect(r.groups).toBeGreaterThanOrEqual(2);
    expect(r.foreign_bars).toBe(0);
  });

  test('leaves every index and foreign key of the schema in place, and identities past the ids', async () => {
    const catalog = `
      select (select string_agg(indexdef, E'\\n' order by indexdef) from pg_indexes where schemaname = 'private') as indexes,
             (select string_agg(conname || pg_get_constraintdef(oid), E'\\n' order by conname)
                from pg_constraint where connamespace = 'private'::regnamespace and contype = 'f') as fks`;
    expect(await one(a, catalog)).toEqual(await one(b, catalog)); // b is still the untouched template clone
    const inserted = await one<{ id: number }>(
      a,
      "insert into private.users (username) values ('after_seed') returning id",
    );
    expect(inserted.id).toBeGreaterThan(bars / 4);
    await a.owner.query("delete from private.users where username = 'after_seed'");
  });

  test('builds the derived tables of the load exactly (bar_live, open slots, zone extents, counts)', async () => {
    for (const [name, sql] of Object.entries(DRIFT)) {
      expect({ name, drift: (await one<{ n: number }>(a, sql)).n }).toEqual({ name, drift: 0 });
    }
    const live = await one<{ bars: number; slots: number }>(
      a,
      'select (select count(*)::int from private.bar_live) as bars, (select count(*)::int from private.bar_open_slots) as slots',
    );
    expect(live).toEqual({ bars, slots: expect.any(Number) });
    expect(live.slots).toBeGreaterThan(bars);
  });

  test('is deterministic: the same seed twice gives identical tables', async () => {
    await seedDemoData(b.url, { bars, seed: 7, now });
    expect(await checksums(b)).toEqual(await checksums(a));
  });

  test('refuses to seed over existing bars, and --reset replaces them', async () => {
    await expect(seedDemoData(a.url, { bars: 20, seed: 7, now })).rejects.toThrow(SeedRefusedError);
    await expect(seedDemoData(a.url, { bars: 20, seed: 7, now })).rejects.toThrow(/already has 300 bars.*--reset/);
    expect((await one<{ n: number }>(a, 'select count(*)::int as n from private.bars')).n).toBe(bars);

    const before = await checksums(b);
    await seedDemoData(b.url, { bars, seed: 8, now, reset: true });
    const after = await checksums(b);
    expect((await one<{ n: number }>(b, 'select count(*)::int as n from private.bars')).n).toBe(bars);
    expect(after.bars).not.toEqual(before.bars); // another seed, other data
    expect(after.cities).toEqual(before.cities); // the same places at the same scale
  });

  test('rejects a bar count or seed out of range before touching the database', async () => {
    await expect(seedDemoData('postgres://nowhere.invalid/x', { bars: 0 })).rejects.toThrow(/bars must be an integer/);
    await expect(seedDemoData('postgres://nowhere.invalid/x', { bars: 10, seed: -1 })).rejects.toThrow(
      /seed must be an integer/,
    );
  });
});
