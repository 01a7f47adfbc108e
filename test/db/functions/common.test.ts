/**
 * 00-common.sql and 05-city-lookup.sql: value helpers and the city lookup. They run inside the api.*
 * functions as the owner; bar_partner and bar_operator may not call them directly.
 */
import { errorOf, familyDatabase } from './sql';

const sql = familyDatabase();

describe('00-common: dates, pagination, slots, ids', () => {
  const one = async <T>(query: string, params: unknown[] = []) =>
    sql.run(async (tx) => Object.values((await tx.query(query, params))[0]!)[0] as T);

  test.each([
    // a date is a local day of the city: its start, and an end date includes the whole day
    ['2026-11-22', false, '2026-11-22T06:00:00.000Z'],
    ['2026-11-22', true, '2026-11-23T06:00:00.000Z'],
    // fall back (Chicago, 2026-11-01): the end of the 25-hour day is the next local midnight
    ['2026-11-01', false, '2026-11-01T05:00:00.000Z'],
    ['2026-11-01', true, '2026-11-02T06:00:00.000Z'],
    // spring forward (2026-03-08): a 23-hour day
    ['2026-03-08', true, '2026-03-09T05:00:00.000Z'],
    // a date-time with an offset is that instant; an end date-time is inclusive (+1 microsecond)
    ['2026-11-22T03:00:00Z', false, '2026-11-22T03:00:00.000Z'],
    ['2026-11-22T03:00:00+02:00', false, '2026-11-22T01:00:00.000Z'],
    // without an offset: the city's local time
    ['2026-11-22T03:00:00', false, '2026-11-22T09:00:00.000Z'],
  ])('date_bound(%s, America/Chicago, end=%s) = %s', async (value, isEnd, expected) => {
    const bound = await one<Date>("select private.date_bound($1, 'America/Chicago', $2)", [value, isEnd]);
    expect(bound.toISOString()).toBe(expected);
  });

  test('an end date-time is inclusive: one microsecond after the instant', async () => {
    const gap = await one<string>(
      "select (private.date_bound('2026-11-22T03:00:00Z', 'UTC', true) - '2026-11-22T03:00:00Z'::timestamptz)::text",
    );
    expect(gap).toBe('00:00:00.000001');
  });

  test.each([
    [1, 20, 0, { current_page: 1, total_pages: 0, total_count: 0, per_page: 20 }],
    [2, 20, 40, { current_page: 2, total_pages: 2, total_count: 40, per_page: 20 }],
    [3, 20, 41, { current_page: 3, total_pages: 3, total_count: 41, per_page: 20 }],
    [9, 1, 1, { current_page: 9, total_pages: 1, total_count: 1, per_page: 1 }],
  ])('pagination_json(page %s, per_page %s, total %s)', async (page, perPage, total, expected) => {
    expect(await one('select private.pagination_json($1, $2, $3)', [page, perPage, total])).toEqual(expected);
  });

  test.each([
    [0, true, 'quiet'],
    [24, true, 'quiet'],
    [25, true, 'moderate'],
    [49, true, 'moderate'],
    [50, true, 'busy'],
    [74, true, 'busy'],
    [75, true, 'very_busy'],
    [100, true, 'very_busy'],
    [null, true, null],
    [90, false, 'closed'],
  ])('occupancy_status(%s, open=%s) = %s', async (intensity, open, expected) => {
    expect(await one('select private.occupancy_status($1, $2)', [intensity, open])).toBe(expected);
  });

  test('slot_minutes: an after-midnight slot runs into the next day, Sunday into Monday', async () => {
    // Friday 20:00-02:00: one range from Friday 20:00 to Saturday 02:00
    expect(await one("select private.slot_minutes(5::smallint, '20:00', '02:00')::text")).toBe(
      `{[${4 * 1440 + 1200},${5 * 1440 + 120})}`,
    );
    expect(await one("select private.slot_minutes(7::smallint, '22:00', '03:00')::text")).toBe(
      `{[0,180),[${6 * 1440 + 1320},${7 * 1440})}`,
    );
    expect(await one("select private.slot_minutes(3::smallint, '11:00', '14:00')::text")).toBe(
      `{[${2 * 1440 + 660},${2 * 1440 + 840})}`,
    );
  });

  test('minute_of_week: Monday 00:00 is 0, Sunday 23:59 the last minute, seconds dropped', async () => {
    expect(await one("select private.minute_of_week('2026-11-23 00:00:59')")).toBe(0);
    expect(await one("select private.minute_of_week('2026-11-29 23:59:30')")).toBe(7 * 1440 - 1);
  });

  test.each([
    ['1', '1'],
    ['123456789012345678', '123456789012345678'],
    ['0', null],
    ['01', null],
    ['-1', null],
    ['1e3', null],
    ['1234567890123456789', null],
    [' 1', null],
  ])('bar_id_or_null(%j) = %j', async (id, expected) => {
    expect(await one('select private.bar_id_or_null($1)::text', [id])).toBe(expected);
  });

  test('like_prefix escapes the LIKE wildcards and the escape character', async () => {
    expect(await one("select private.like_prefix('50%_off\\')")).toBe('50\\%\\_off\\\\%');
  });

  test('is_time_zone and is_http_url (the check constraints)', async () => {
    expect(await one("select private.is_time_zone('America/Chicago')")).toBe(true);
    expect(await one("select private.is_time_zone('Mars/Olympus')")).toBe(false);
    expect(await one("select private.is_http_url('https://example.com/a?b')")).toBe(true);
    expect(await one("select private.is_http_url('https:// example.com')")).toBe(false);
    expect(await one("select private.is_http_url('ftp://example.com')")).toBe(false);
  });
});

describe('05-city-lookup: find_city', () => {
  test('state and city case-insensitively, the city accent-insensitively; the lowest id wins a fold tie', async () => {
    await sql.run(async (tx) => {
      const canon = await tx.fx.city({ name: 'Cañon City', state: 'CO', time_zone: 'America/Denver' });
      const find = async (state: string, city: string) =>
        (await tx.query<{ id: number }>('select id from private.find_city($1, $2)', [state, city])).map((r) => r.id);
      expect(await find('co', 'CAÑON CITY')).toEqual([canon]);
      expect(await find('CO', 'canon city')).toEqual([canon]);
      expect(await find('CO', 'canon  city ')).toEqual([canon]);
      expect(await find('CA', 'canon city')).toEqual([]);
      // a second city folding to the same name: the exact spelling first, else the lowest id
      const plain = await tx.fx.city({ name: 'Canon City', state: 'CO', time_zone: 'America/Denver' });
      expect(await find('CO', 'canon city')).toEqual([plain]);
      expect(await find('CO', 'CANON CITY')).toEqual([plain]);
      expect(await find('CO', 'cañon city')).toEqual([canon]);
      expect(await find('CO', 'cânon city')).toEqual([canon]);
    });
  });

  test('search_fold: case, accents, apostrophes and runs of white space', async () => {
    await sql.run(async (tx) => {
      const [row] = await tx.query<{ f: string }>("select private.search_fold('  O''Reilly’s   PUB Ōsaka ') as f");
      expect(row!.f).toBe('oreillys pub osaka');
    });
  });
});

describe('privileges', () => {
  test.each([
    ['bar_partner', "select private.date_bound('2026-11-22', 'UTC', false)"],
    ['bar_partner', "select * from private.find_city('CO', 'x')"],
    ['bar_operator', 'select private.pagination_json(1, 20, 0)'],
  ] as const)('%s may not call the helpers directly: %s', async (role, query) => {
    await sql.run(async (tx) => {
      expect((await errorOf(tx, role, query)).code).toBe('42501');
    });
  });
});
