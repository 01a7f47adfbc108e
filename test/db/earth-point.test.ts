/**
 * private.earth_point (db/migrations/functions/00-common.sql): contrib
 * earthdistance's ll_to_earth spelled out without a SET clause, so that it is
 * inlined (the generated geo columns call it per row). It must give exactly
 * ll_to_earth's points, be inlined, and work under an empty search_path (as
 * pg_restore recomputes generated columns). private.earth_chord and
 * private.radius_box, its gc_to_sec and earth_box: equal to the extension's, and
 * inlined (the extension's are planned again on every request).
 */
import { createTestDatabase, type TestDatabase } from '../support/db';

let db: TestDatabase;
const q = async (sql: string, values: unknown[] = []) => (await db.owner.query(sql, values)).rows;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => db.drop());

describe('private.earth_point', () => {
  test('equals ll_to_earth exactly, poles and antimeridian included', async () => {
    const rows = await q(`
      with p(lat, lon) as (
        select -90 + random() * 180, -180 + random() * 360 from generate_series(1, 2000)
        union all values (90::float8, 0::float8), (-90, 180), (0, -180), (0, 180), (40.71427, -74.00597), (0, 0))
      select count(*)::int as n,
             count(*) filter (where private.earth_point(lat, lon)::public.cube = public.ll_to_earth(lat, lon)::public.cube)::int as equal,
             count(*) filter (where private.earth_point(lat, lon) is null)::int as nulls
      from p`);
    expect(rows[0]).toEqual({ n: 2006, equal: 2006, nulls: 0 });
    expect((await q('select private.earth_point(null, 1) is null as n'))[0].n).toBe(true);
  });

  test('is inlined: the plan calls the cube functions, not earth_point', async () => {
    const plan = (
      await q(`explain (verbose, costs off) select private.earth_point(x, x) from generate_series(1, 3) x(x)`)
    )
      .map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN'])
      .join('\n');
    expect(plan).not.toMatch(/earth_point/);
    expect(plan).toMatch(/cube/);
  });

  test('works under an empty search_path, also as a generated column', async () => {
    const client = await db.owner.connect();
    try {
      const expected = (await client.query('select public.ll_to_earth(31.5, -99.9)::text as geo')).rows[0].geo;
      await client.query('begin');
      await client.query("set local search_path = ''");
      const { rows } = await client.query(
        `insert into private.cities (name, state, time_zone, latitude, longitude)
         values ('Nowhere', 'TX', 'America/Chicago', 31.5, -99.9) returning geo::text as geo`,
      );
      expect(rows[0].geo).toBe(expected);
      // (ll_to_earth itself resolves its calls through the search_path: it cannot)
      await client.query('savepoint s');
      await expect(client.query('select public.ll_to_earth(31.5, -99.9)')).rejects.toThrow(/does not exist/);
      await client.query('rollback to savepoint s');
      await client.query('rollback');
    } finally {
      client.release();
    }
  });
});

describe('private.earth_chord and private.radius_box', () => {
  test("equal gc_to_sec and earth_box exactly: negative, zero, a radius's range, past half the earth, null", async () => {
    const rows = await q(`
      with m(m) as (
        select random() * 100000 from generate_series(1, 2000)
        union all values (-1::float8), (0), (1609.344 * 5), (1609.344 * 25), (2e7), (4.1e7), (1e9))
      select count(*)::int as n,
             count(*) filter (where private.earth_chord(m) = public.gc_to_sec(m))::int as chords,
             count(*) filter (where private.radius_box(private.earth_point(40.7, -74), m)
                                    = public.earth_box(private.earth_point(40.7, -74), m))::int as boxes
      from m`);
    expect(rows[0]).toEqual({ n: 2007, chords: 2007, boxes: 2007 });
    const [nulls] = await q('select private.earth_chord(null) is null as c, private.radius_box(null, 1) is null as b');
    expect(nulls).toEqual({ c: true, b: true });
  });

  test('are inlined: the plan calls cube_enlarge and sin, neither helper nor gc_to_sec', async () => {
    const plan = (
      await q(
        `explain (verbose, costs off)
         select private.radius_box(private.earth_point(x, x), x * 1000) from generate_series(1, 3) x(x)`,
      )
    )
      .map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN'])
      .join('\n');
    expect(plan).not.toMatch(/radius_box|earth_chord|gc_to_sec/);
    expect(plan).toMatch(/cube_enlarge/);
    expect(plan).toMatch(/sin\(/);
  });
});
