/**
 * 40-export.sql: api.export_bars / api.export_events (a cursor opened as bar_partner and FETCHed as
 * bar_partner, as the server does), api.export_watermark, the updated_at triggers and the tombstones.
 * Through HTTP (byte-for-byte lines, streaming, slots, 400/404/406): test/api/export.test.ts.
 */
import pg from 'pg';
import { adminUrl } from '../../support/db';
import { databaseUrl } from '../../support/urls';
import { errorOf, familyDatabase, type Tx } from './sql';

const sql = familyDatabase();

type Line =
  | { type: 'bar'; bar: { id: string; updated_at: string } }
  | { type: 'event'; event: { id: string; start_at: string; updated_at: string } }
  | { type: 'deleted'; kind: 'bar' | 'event'; id: string; deleted_at: string };

let cursors = 0;
/** The lines of an export (opened and FETCHed as bar_partner), or null when the function returns no cursor. */
async function exported(
  tx: Tx,
  fn: 'export_bars' | 'export_events',
  args: Record<string, string | null> = {},
): Promise<Line[] | null> {
  const named = Object.keys(args).map((k, i) => `, ${k} => $${i + 2}`);
  const cursor = await tx.call<string | null>('bar_partner', `select api.${fn}(p_cursor => $1${named.join('')})`, [
    `export_${++cursors}`,
    ...Object.values(args),
  ]);
  if (cursor === null) return null;
  const rows = await tx.as('bar_partner', `fetch all from ${cursor}`);
  await tx.as('bar_partner', `close ${cursor}`);
  return rows.map((r) => JSON.parse(Object.values(r)[0] as string) as Line);
}
/** What each line names: 'bar:12', 'event:7', 'deleted bar:3'. */
const names = (lines: Line[] | null) =>
  lines?.map((l) =>
    l.type === 'deleted' ? `deleted ${l.kind}:${l.id}` : l.type === 'bar' ? `bar:${l.bar.id}` : `event:${l.event.id}`,
  ) ?? null;

/**
 * A changes export of bars: its bar lines as a set, then its tombstone lines in order (the bar lines'
 * order, (updated_at, id), has a test of its own).
 */
function changes(lines: Line[] | null) {
  const n = names(lines)!;
  const objects = n.filter((x) => !x.startsWith('deleted '));
  return { bars: objects.sort(), deleted: n.slice(objects.length) };
}
const set = (ids: string[]) => [...ids].sort();

// Fixed instants well before the test's own now() (the transaction's start), to the microsecond.
const T0 = '2026-11-20T10:00:00.000001Z';
const T1 = '2026-11-20T10:00:00.000002Z';
const T1_PLUS = '2026-11-20T10:00:00.000003Z';

async function places(tx: Tx) {
  const austin = await tx.fx.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
  const dallas = await tx.fx.city({ name: 'Dallas', state: 'TX', time_zone: 'America/Chicago' });
  const denver = await tx.fx.city({ name: 'Denver', state: 'CO', time_zone: 'America/Denver' });
  const bar = async (cityId: number, name: string) => String(await tx.fx.bar(cityId, { name }));
  const bars = {
    a1: await bar(austin, 'Armadillo'),
    a2: await bar(austin, 'Broken Spoke'),
    d1: await bar(dallas, 'Deep Ellum'),
    c1: await bar(denver, 'Mile High'),
  };
  await tx.query('update private.bars set updated_at = $1', [T0]);
  return { austin, dallas, denver, ...bars };
}
const setUpdatedAt = (tx: Tx, table: 'bars' | 'events', at: string, ids: string[]) =>
  tx.query(`update private.${table} set updated_at = $1 where id = any($2::bigint[])`, [at, ids]);

describe('api.export_bars', () => {
  test('a snapshot: every bar by id, no tombstones; state (any case) and city (folded) narrow', async () => {
    await sql.run(async (tx) => {
      const p = await places(tx);
      await tx.query('delete from private.bars where id = $1', [p.c1]);
      expect(names(await exported(tx, 'export_bars'))).toEqual([`bar:${p.a1}`, `bar:${p.a2}`, `bar:${p.d1}`]);
      expect(names(await exported(tx, 'export_bars', { p_state: 'tx' }))).toEqual([
        `bar:${p.a1}`,
        `bar:${p.a2}`,
        `bar:${p.d1}`,
      ]);
      expect(names(await exported(tx, 'export_bars', { p_state: 'TX', p_city: 'AUSTIN' }))).toEqual([
        `bar:${p.a1}`,
        `bar:${p.a2}`,
      ]);
      const [line] = (await exported(tx, 'export_bars', { p_state: 'TX', p_city: 'Dallas' }))!;
      expect(line).toMatchObject({ type: 'bar', bar: { id: p.d1, name: 'Deep Ellum', updated_at: T0 } });
    });
  });

  test('an unknown state is an empty export; an unknown city, or a city without its state, no cursor (404)', async () => {
    await sql.run(async (tx) => {
      await places(tx);
      expect(await exported(tx, 'export_bars', { p_state: 'ZZ' })).toEqual([]);
      expect(await exported(tx, 'export_bars', { p_state: 'ZZ', p_updated_since: T0 })).toEqual([]);
      expect(await exported(tx, 'export_bars', { p_state: 'TX', p_city: 'Nowhere' })).toBeNull();
      expect(await exported(tx, 'export_bars', { p_state: 'CO', p_city: 'Austin' })).toBeNull();
      expect(await exported(tx, 'export_bars', { p_city: 'Austin' })).toBeNull();
    });
  });

  test('changes since: updated_at >= since (the edge in, a microsecond later out), narrowed by state and city', async () => {
    await sql.run(async (tx) => {
      const p = await places(tx);
      await setUpdatedAt(tx, 'bars', T1, [p.d1, p.a2, p.a1]);
      await setUpdatedAt(tx, 'bars', T1_PLUS, [p.c1]);
      const since = async (at: string, filter: Record<string, string> = {}) =>
        changes(await exported(tx, 'export_bars', { ...filter, p_updated_since: at })).bars;
      expect(await since(T1)).toEqual(set([`bar:${p.a1}`, `bar:${p.a2}`, `bar:${p.d1}`, `bar:${p.c1}`]));
      expect(await since(T1_PLUS)).toEqual([`bar:${p.c1}`]);
      expect(await since('2026-11-20T10:00:00.000004Z')).toEqual([]);
      expect(await since(T1, { p_state: 'TX' })).toEqual(set([`bar:${p.a1}`, `bar:${p.a2}`, `bar:${p.d1}`]));
      expect(await since(T1, { p_state: 'TX', p_city: 'Austin' })).toEqual(set([`bar:${p.a1}`, `bar:${p.a2}`]));
      expect(await since(T1_PLUS, { p_state: 'TX' })).toEqual([]);
    });
  });

  test('changes since: bar lines by (updated_at, id) on every path (no filter, state, city)', async () => {
    await sql.run(async (tx) => {
      const p = await places(tx);
      // later ids changed earlier, and a tie on updated_at broken by id
      await setUpdatedAt(tx, 'bars', T1_PLUS, [p.a1]);
      await setUpdatedAt(tx, 'bars', T1, [p.a2, p.d1]);
      await setUpdatedAt(tx, 'bars', '2026-11-20T10:00:00.0000015Z', [p.c1]);
      const order = async (filter: Record<string, string> = {}) =>
        names(await exported(tx, 'export_bars', { ...filter, p_updated_since: T0 }));
      const byId = [p.a2, p.d1].sort((x, y) => Number(x) - Number(y));
      expect(await order()).toEqual([...byId, p.c1, p.a1].map((id) => `bar:${id}`));
      expect(await order({ p_state: 'TX' })).toEqual([...byId, p.a1].map((id) => `bar:${id}`));
      expect(await order({ p_state: 'TX', p_city: 'Austin' })).toEqual([p.a2, p.a1].map((id) => `bar:${id}`));
    });
  });

  test('a deleted bar is a tombstone line after the bars, from deleted_at on, in its city and state only', async () => {
    await sql.run(async (tx) => {
      const p = await places(tx);
      await tx.query('delete from private.bars where id = any($1::bigint[])', [[p.c1, p.a2]]);
      const [stone] = await tx.query<{ city_id: string; now: boolean }>(
        "select city_id::text, deleted_at = now() as now from private.tombstones where kind = 'bar' and id = $1",
        [p.c1],
      );
      expect(stone).toEqual({ city_id: String(p.denver), now: true });
      await tx.query("update private.tombstones set deleted_at = $1 where kind = 'bar' and id = $2", [T1, p.c1]);
      await tx.query("update private.tombstones set deleted_at = $1 where kind = 'bar' and id = $2", [T0, p.a2]);
      await setUpdatedAt(tx, 'bars', T1, [p.a1]);

      const since = async (at: string, filter: Record<string, string> = {}) =>
        changes(await exported(tx, 'export_bars', { ...filter, p_updated_since: at }));
      const all = await exported(tx, 'export_bars', { p_updated_since: T0 });
      expect(changes(all)).toEqual({
        bars: set([`bar:${p.d1}`, `bar:${p.a1}`]),
        deleted: [`deleted bar:${p.a2}`, `deleted bar:${p.c1}`],
      });
      expect(all![3]).toEqual({ type: 'deleted', kind: 'bar', id: p.c1, deleted_at: T1 });
      expect(await since(T1)).toEqual({ bars: [`bar:${p.a1}`], deleted: [`deleted bar:${p.c1}`] });
      expect(await since(T1_PLUS)).toEqual({ bars: [], deleted: [] });
      expect(await since(T0, { p_state: 'co' })).toEqual({ bars: [], deleted: [`deleted bar:${p.c1}`] });
      expect(await since(T0, { p_state: 'TX', p_city: 'Dallas' })).toEqual({ bars: [`bar:${p.d1}`], deleted: [] });
      expect(await since(T0, { p_state: 'TX', p_city: 'Austin' })).toEqual({
        bars: [`bar:${p.a1}`],
        deleted: [`deleted bar:${p.a2}`],
      });
    });
  });
});

describe('api.export_watermark', () => {
  test('the oldest open transaction of the database (or the clock) minus 1 s, to the microsecond', async () => {
    const other = await sql.run(async (tx) => {
      const [{ db }] = (await tx.query<{ db: string }>('select current_database() as db')) as [{ db: string }];
      return new pg.Client({ connectionString: databaseUrl(adminUrl(), db) });
    });
    await other.connect();
    try {
      await other.query('begin');
      const [older] = (await other.query<{ at: string }>("select (now() - interval '1 second')::text as at")).rows;
      await sql.run(async (tx) => {
        const watermark = await tx.call<string>('bar_partner', 'select api.export_watermark()');
        expect(watermark).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
        const held = await tx.call<boolean>('owner', 'select $1::timestamptz <= $2::timestamptz', [
          watermark,
          older!.at,
        ]);
        expect(held).toBe(true); // held back by the other, older transaction
      });
      await other.query('rollback');
      await sql.run(async (tx) => {
        const watermark = await tx.call<string>('bar_partner', 'select api.export_watermark()');
        // this transaction is now the oldest: no later than its start (now()) minus 1 s, though the clock ran on
        const [r] = await tx.query<{ held: boolean; after_other: boolean }>(
          "select $1::timestamptz <= now() - interval '1 second' as held, $1::timestamptz > $2::timestamptz as after_other",
          [watermark, older!.at],
        );
        expect(r).toEqual({ held: true, after_other: true });
      });
    } finally {
      await other.end();
    }
  });

  test('a change in a transaction open when the watermark is read is in the export from it (it may come twice)', async () => {
    await sql.run(async (tx) => {
      const p = await places(tx);
      await tx.query("update private.bars set name = 'Armadillo II' where id = $1", [p.a1]); // updated_at = now()
      const snapshot = await exported(tx, 'export_bars');
      const watermark = await tx.call<string>('bar_partner', 'select api.export_watermark()');
      const next = await exported(tx, 'export_bars', { p_updated_since: watermark });
      expect(names(snapshot)).toContain(`bar:${p.a1}`);
      expect(names(next)).toEqual([`bar:${p.a1}`]);
    });
  });
});

describe('updated_at triggers', () => {
  const OLD = '2020-01-01T00:00:00Z';
  /** Sets every bar and event to OLD, runs the change, returns what moved to now(). */
  async function moves(tx: Tx, change: string, params: unknown[] = []) {
    await tx.query('update private.bars set updated_at = $1', [OLD]);
    await tx.query('update private.events set updated_at = $1', [OLD]);
    await tx.query(change, params);
    const rows = await tx.query<{ what: string }>(
      `select kind || ':' || id as what from (
         select 'bar' as kind, id from private.bars where updated_at = now()
         union all select 'event', id from private.events where updated_at = now()) moved
       order by kind, id`,
    );
    return rows.map((r) => r.what);
  }

  test('a bar moves with its exported columns, a category rename and its city name or state, not with occupancy', async () => {
    await sql.run(async (tx) => {
      const p = await places(tx);
      const ev = String(
        await tx.fx.event(Number(p.a1), {
          title: 'Show',
          start_at: '2026-12-01T02:00Z',
          end_at: '2026-12-01T04:00Z',
        }),
      );
      const cat = await tx.fx.category('Dive', 'dive');
      await tx.fx.barCategory(Number(p.d1), cat);
      await tx.fx.occupancy(Number(p.a2), 10);

      expect(await moves(tx, "update private.bars set phone = '555' where id = $1", [p.a2])).toEqual([`bar:${p.a2}`]);
      expect(await moves(tx, "update private.bars set created_at = '2019-01-01Z' where id = $1", [p.a2])).toEqual([]);
      expect(await moves(tx, 'update private.occupancy set current_intensity = 99 where bar_id = $1', [p.a2])).toEqual(
        [],
      );
      expect(await moves(tx, "update private.categories set name = 'Dive Bar' where id = $1", [cat])).toEqual([
        `bar:${p.d1}`,
      ]);
      expect(await moves(tx, "update private.categories set name = 'Dive Bar' where id = $1", [cat])).toEqual([]);
      expect(await moves(tx, "update private.cities set name = 'Austin City' where id = $1", [p.austin])).toEqual([
        `bar:${p.a1}`,
        `bar:${p.a2}`,
        `event:${ev}`,
      ]);
      expect(await moves(tx, 'update private.cities set population = 5 where id = $1', [p.austin])).toEqual([]);
      // an updated_at written with the change (a bulk load) is kept
      await tx.query("update private.bars set phone = '556', updated_at = $2 where id = $1", [p.a2, T0]);
      expect(await tx.call('owner', 'select updated_at = $2 from private.bars where id = $1', [p.a2, T0])).toBe(true);
    });
  });

  test('an event moves with its own columns and its bar summary (name, not phone)', async () => {
    await sql.run(async (tx) => {
      const p = await places(tx);
      const ev = String(
        await tx.fx.event(Number(p.a1), { title: 'Show', start_at: '2026-12-01T02:00Z', end_at: '2026-12-01T04:00Z' }),
      );
      expect(await moves(tx, "update private.events set title = 'Encore' where id = $1", [ev])).toEqual([
        `event:${ev}`,
      ]);
      expect(await moves(tx, "update private.bars set name = 'Armadillo II' where id = $1", [p.a1])).toEqual([
        `bar:${p.a1}`,
        `event:${ev}`,
      ]);
      expect(await moves(tx, "update private.bars set phone = '555' where id = $1", [p.a1])).toEqual([`bar:${p.a1}`]);
    });
  });

  test("a deleted bar's events leave tombstones too; a bulk load (defer_bar_documents) moves nothing but still leaves them", async () => {
    await sql.run(async (tx) => {
      const p = await places(tx);
      const ev = String(
        await tx.fx.event(Number(p.a1), { title: 'Show', start_at: '2026-12-01T02:00Z', end_at: '2026-12-01T04:00Z' }),
      );
      await tx.query("set local private.defer_bar_documents = 'on'");
      expect(
        await moves(tx, "insert into private.photos (bar_id, url) values ($1, 'https://x.test/p.jpg')", [p.a2]),
      ).toEqual([]);
      await tx.query('delete from private.bars where id = $1', [p.a1]);
      const stones = await tx.query('select kind, id::text, city_id::text from private.tombstones order by kind');
      expect(stones).toEqual([
        { kind: 'bar', id: p.a1, city_id: String(p.austin) },
        { kind: 'event', id: ev, city_id: String(p.austin) },
      ]);
    });
  });
});

describe('api.export_events', () => {
  // Austin (America/Chicago) is UTC-6 in December: its local 2026-12-01 is 06:00Z .. 06:00Z next day.
  async function events(tx: Tx) {
    const p = await places(tx);
    const ev = async (bar: string, start: string) =>
      String(await tx.fx.event(Number(bar), { title: start, start_at: start, end_at: '2026-12-03T12:00Z' }));
    const e = {
      before: await ev(p.a1, '2026-12-01T05:59:59Z'),
      first: await ev(p.a1, '2026-12-01T06:00:00Z'),
      last: await ev(p.a2, '2026-12-02T05:59:59Z'),
      after: await ev(p.a2, '2026-12-02T06:00:00Z'),
      dallas: await ev(p.d1, '2026-12-01T12:00:00Z'),
      denver: await ev(p.c1, '2026-12-01T12:00:00Z'),
    };
    await tx.query('update private.events set updated_at = $1', [T0]);
    return { ...p, e };
  }

  test("start_date and end_date are the city's local days, the end inclusive; state and city narrow", async () => {
    await sql.run(async (tx) => {
      const { e } = await events(tx);
      const day = { p_start_date: '2026-12-01', p_end_date: '2026-12-01' };
      expect(names(await exported(tx, 'export_events', { p_state: 'TX', p_city: 'Austin', ...day }))).toEqual([
        `event:${e.first}`,
        `event:${e.last}`,
      ]);
      expect(names(await exported(tx, 'export_events', { p_state: 'tx', ...day }))).toEqual([
        `event:${e.first}`,
        `event:${e.last}`,
        `event:${e.dallas}`,
      ]);
      expect(names(await exported(tx, 'export_events', { p_start_date: '2026-12-02' }))).toEqual([`event:${e.after}`]);
      expect(names(await exported(tx, 'export_events', { p_end_date: '2026-11-30' }))).toEqual([`event:${e.before}`]);
      expect(await exported(tx, 'export_events', { p_state: 'TX', p_city: 'Nowhere' })).toBeNull();
      expect(await exported(tx, 'export_events', { p_state: 'ZZ' })).toEqual([]);
    });
  });

  test('end_date before start_date is PT400 with or without a city or state', async () => {
    await sql.run(async (tx) => {
      await events(tx);
      for (const where of ["'TX', 'Austin'", "'TX', null", 'null, null']) {
        const e = await errorOf(
          tx,
          'bar_partner',
          `select api.export_events('bad', ${where}, p_start_date => '2026-12-02', p_end_date => '2026-12-01')`,
        );
        expect(e).toEqual({ code: 'PT400', message: 'end_date must not be before start_date' });
      }
      // the same day is a whole day, not an empty range
      expect(await exported(tx, 'export_events', { p_start_date: '2026-12-01', p_end_date: '2026-12-01' })).not.toEqual(
        [],
      );
    });
  });

  test('changes since: by (updated_at, id) from the edge on, then tombstones (none in a snapshot), narrowed by state', async () => {
    await sql.run(async (tx) => {
      const { e } = await events(tx);
      await setUpdatedAt(tx, 'events', T1, [e.dallas, e.first]);
      await tx.query('delete from private.events where id = any($1::bigint[])', [[e.denver, e.last]]);
      await tx.query("update private.tombstones set deleted_at = $1 where kind = 'event'", [T1]);
      expect(names(await exported(tx, 'export_events', { p_updated_since: T1 }))).toEqual([
        `event:${e.first}`,
        `event:${e.dallas}`,
        `deleted event:${e.last}`,
        `deleted event:${e.denver}`,
      ]);
      expect(names(await exported(tx, 'export_events', { p_updated_since: T1_PLUS }))).toEqual([]);
      expect(names(await exported(tx, 'export_events', { p_state: 'CO', p_updated_since: T1 }))).toEqual([
        `deleted event:${e.denver}`,
      ]);
      expect(
        names(await exported(tx, 'export_events', { p_state: 'TX', p_city: 'Dallas', p_updated_since: T1 })),
      ).toEqual([`event:${e.dallas}`]);
      expect(names(await exported(tx, 'export_events', { p_state: 'CO' }))).toEqual([]);
    });
  });
});

describe('privileges', () => {
  test('EXECUTE on the api functions: bar_partner only (bar_operator has no USAGE on api either)', async () => {
    await sql.run(async (tx) => {
      const rows = await tx.query(
        `select f::text as fn, has_function_privilege('bar_partner', f, 'execute') as partner,
                has_function_privilege('bar_operator', f, 'execute') as operator
           from unnest(array['api.export_watermark()', 'api.export_bars(text,text,text,timestamptz,timestamptz)',
                             'api.export_events(text,text,text,text,text,timestamptz)']::regprocedure[]) f`,
      );
      expect(rows).toEqual([
        { fn: 'api.export_watermark()', partner: true, operator: false },
        { fn: expect.stringMatching(/^api\.export_bars\(/), partner: true, operator: false },
        { fn: expect.stringMatching(/^api\.export_events\(/), partner: true, operator: false },
      ]);
    });
  });

  test.each([
    ['bar_operator', 'select api.export_watermark()'],
    ['bar_operator', "select api.export_bars('c')"],
    ['bar_operator', "select api.export_events('c')"],
    ['bar_partner', 'select * from private.bars'],
    ['bar_partner', 'select * from private.events'],
    ['bar_partner', 'select * from private.tombstones'],
    ['bar_partner', 'update private.bars set updated_at = now()'],
    ['bar_partner', "select private.export_deleted_line('bar', 1, now())"],
    ['bar_partner', 'select private.export_bar_line(1, now(), now())'],
    ['bar_partner', 'select private.export_touch_bars(array[1::bigint])'],
  ] as const)('%s may not: %s', async (role, query) => {
    await sql.run(async (tx) => {
      expect((await errorOf(tx, role, query)).code).toBe('42501');
    });
  });
});
