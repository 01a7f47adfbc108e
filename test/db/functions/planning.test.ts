/**
 * The partner endpoints keep their plans (db/CONVENTIONS.md › Writing functions). A SQL-language
 * helper that the planner does not inline is parsed and planned again each time its caller runs:
 * a FROM in a function called as a value, an immutable wrapper over a stable call, a costly
 * argument used twice. At 1M bars such helpers cost the feed 1.4 ms of 3.2, GET events 1.1 of 1.9
 * (docs/performance/2026-11-26-v1.3.md). PostgreSQL's function statistics (track_functions = all)
 * count exactly the SQL functions that ran as functions; inlined ones are never counted.
 */
import { CHICAGO } from '../../support/fixtures';
import { familyDatabase, type Role, type Tx } from './sql';

const sql = familyDatabase();
const NOW = '2026-11-23T07:00:00Z'; // a Monday, 01:00 in Chicago

/**
 * SQL functions that may run as functions, with why: earthdistance's earth() and sec_to_gc (contrib,
 * not ours: earth_distance, for the bars at a radius's edge and search's distances). Not allowed:
 * earthdistance's gc_to_sec and earth_box (the radius paths use private.earth_chord and
 * private.radius_box, which are inlined), and private.search_fold (stable, as unaccent is, so it is
 * inlined; declared immutable it was parsed and planned on every call: docs/performance/2026-12-02-v1.3.md).
 */
const ALLOWED = new Set(['public.earth', 'public.sec_to_gc']);

/** Calls so far in this transaction of each SQL-language function that ran as a function, by schema.name. */
async function sqlFunctionCallCounts(tx: Tx): Promise<Map<string, number>> {
  return new Map(
    (
      await tx.query<{ name: string; calls: string }>(
        `select f.schemaname || '.' || f.funcname as name, f.calls
         from pg_stat_xact_user_functions f
         join pg_proc p on p.oid = f.funcid join pg_language l on l.oid = p.prolang
         where l.lanname = 'sql'`,
      )
    ).map((r) => [r.name, Number(r.calls)]),
  );
}

async function sqlFunctionCalls(
  tx: Tx,
  call: string,
  params: unknown[],
  role: Role = 'bar_partner',
): Promise<string[]> {
  const counts = () => sqlFunctionCallCounts(tx);
  const before = await counts();
  await tx.as(role, call, params);
  const after = await counts();
  return [...after].filter(([name, n]) => n > (before.get(name) ?? 0) && !ALLOWED.has(name)).map(([name]) => name);
}

async function city(tx: Tx) {
  const cityId = await tx.fx.city(CHICAGO);
  const bars: number[] = [];
  for (const name of ['Stage', 'Tap Room', 'Velvet Lounge']) {
    const id = await tx.fx.bar(cityId, { name });
    await tx.fx.alwaysOpen(id);
    await tx.fx.occupancy(id, 40);
    bars.push(id);
  }
  await tx.fx.group(cityId, 'loop', bars.slice(0, 2));
  const user = await tx.fx.user();
  for (const [i, id] of bars.entries()) {
    await tx.fx.post(id, user, `post ${i}`, `2026-11-22T1${i}:30:00Z`, ['https://example.com/p.jpg']);
    await tx.fx.event(id, {
      title: `event ${i}`,
      start_at: `2026-11-23T1${i}:00:00Z`,
      end_at: `2026-11-23T2${i}:00:00Z`,
    });
  }
  return bars;
}

const CALLS: [string, string, (bars: number[]) => unknown[]][] = [
  ['bar', 'select api.bar($1, $2)', (b) => [String(b[0]), NOW]],
  [
    'bars, radius',
    'select api.bars(p_latitude => 41.88, p_longitude => -87.63, p_radius => 5, p_limit => 50, p_now => $1)',
    () => [NOW],
  ],
  [
    'bars, box',
    'select api.bars(p_corner1_latitude => 41, p_corner1_longitude => -88, p_corner2_latitude => 42, p_corner2_longitude => -87, p_now => $1)',
    () => [NOW],
  ],
  ['bars, ids', 'select api.bars(p_ids => $2, p_now => $1)', (b) => [NOW, b.map(String)]],
  ['bars, filtered', 'select api.bars(p_open_now => true, p_min_rating => 0, p_now => $1)', () => [NOW]],
  ['bars_by_city', "select api.bars_by_city('IL', 'Chicago', p_events_today_limit => 100, p_now => $1)", () => [NOW]],
  ['bars_by_city, group', "select api.bars_by_city('IL', 'Chicago', 'loop', p_now => $1)", () => [NOW]],
  ['events', "select api.events('IL', 'Chicago', p_now => $1)", () => [NOW]],
  ['events, group', "select api.events('IL', 'Chicago', p_group_slug => 'loop', p_now => $1)", () => [NOW]],
  ['posts', "select api.posts('IL', 'Chicago', p_now => $1)", () => [NOW]],
  ['posts, page 2', "select api.posts('IL', 'Chicago', p_per_page => 1, p_page => 2, p_now => $1)", () => [NOW]],
  ['feed', "select api.feed('IL', 'Chicago', p_now => $1)", () => [NOW]],
  ['feed, page 2', "select api.feed('IL', 'Chicago', p_per_page => 1, p_page => 2, p_now => $1)", () => [NOW]],
  ['search', "select api.search('lounge')", () => []],
  ['search, near', "select api.search('tap', 41.88, -87.63)", () => []],
];

describe('partner endpoints call no SQL helper that is planned on every call', () => {
  test.each(CALLS)('%s', async (_name, call, params) => {
    await sql.run(async (tx) => {
      const bars = await city(tx);
      await tx.query("set local track_functions = 'all'");
      // Generic plans only: a custom plan folds an immutable helper over its (then constant)
      // arguments by running it once, which would be counted too. What still runs is not inlined.
      await tx.query('set local plan_cache_mode = force_generic_plan');
      await tx.as('bar_partner', call, params(bars));
      expect(await sqlFunctionCalls(tx, call, params(bars))).toEqual([]);
    });
  });

  test('bars, radius: the walks test each bar without an SQL function (earth_distance is sec_to_gc)', async () => {
    await sql.run(async (tx) => {
      await city(tx); // three bars within the radius, all at the city's centre
      await tx.query("set local track_functions = 'all'");
      const secToGcCalls = async () => (await sqlFunctionCallCounts(tx)).get('public.sec_to_gc') ?? 0;
      const [, radiusCall, params] = CALLS.find(([name]) => name === 'bars, radius')!;
      let before = await secToGcCalls();
      // (api.bars returns its JSON text)
      const served = JSON.parse(await tx.call<string>('bar_partner', radiusCall, params([]))) as { bars: unknown[] };
      expect(served.bars).toHaveLength(3);
      expect((await secToGcCalls()) - before).toBe(0);
      // The filtered walk proves a page of three (p_limit 3); its tie query turns the page's last
      // distance into metres once, in its index condition, not once a bar.
      await tx.query('update private.bars set google_rating = 4'); // all three pass p_min_rating 0
      before = await secToGcCalls();
      const filtered = await tx.call<{ bars: unknown[] }>(
        'bar_partner',
        'select api.bars(p_latitude => 41.88, p_longitude => -87.63, p_radius => 5, p_limit => 3, p_min_rating => 0, p_now => $1)::json',
        params([]),
      );
      expect(filtered.bars).toHaveLength(3);
      expect((await secToGcCalls()) - before).toBeLessThanOrEqual(1);
    });
  });

  test('bars with filters, the collect step: each bar of the region tested without an SQL function', async () => {
    await sql.run(async (tx) => {
      const cityId = await tx.fx.city(CHICAGO);
      // 40 bars within 5 mi of the centre (none on its edge), all matching. With p_limit 50 the walk finds
      // 40 matches, fewer than the page: it proves nothing, and the collect step gives the page, testing the
      // radius of every bar of its region (private.bar_in_area)
      for (let i = 0; i < 40; i++) {
        await tx.fx.bar(cityId, { name: `Bar ${i}`, latitude: 41.88 + i * 0.001, longitude: -87.63 - i * 0.001 });
      }
      await tx.query('update private.bars set google_rating = 4');
      await tx.query("set local track_functions = 'all'");
      const secToGc = async () => (await sqlFunctionCallCounts(tx)).get('public.sec_to_gc') ?? 0;
      const before = await secToGc();
      const page = await tx.call<{ bars: { id: string }[] }>(
        'bar_partner',
        'select api.bars(p_latitude => 41.88, p_longitude => -87.63, p_radius => 5, p_limit => 50, p_min_rating => 0, p_now => $1)::json',
        [NOW],
      );
      expect((await secToGc()) - before).toBe(0); // earth_distance: once a bar (40)
      // the page is its definition: every bar within 5 mi, by distance, id
      const expected = await tx.query<{ id: string }>(
        `select b.id::text as id from private.bars b
         where earth_distance(b.geo, private.earth_point(41.88, -87.63)) <= 5 * 1609.344
         order by b.geo <-> private.earth_point(41.88, -87.63), b.id`,
      );
      expect(expected).toHaveLength(40);
      expect(page.bars.map((b) => b.id)).toEqual(expected.map((r) => r.id));
    });
  });

  test('the check sees a helper that is not inlined', async () => {
    await sql.run(async (tx) => {
      await tx.query("set local track_functions = 'all'");
      // a FROM: called as a value, never inlined
      await tx.query(
        'create function private.test_not_inlined(p integer) returns integer language sql stable as $$ select n from generate_series(p, p) n $$',
      );
      expect(await sqlFunctionCalls(tx, 'select private.test_not_inlined(1)', [], 'owner')).toEqual([
        'private.test_not_inlined',
      ]);
    });
  });
});
