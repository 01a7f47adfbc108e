/**
 * 21-bars.sql and 22-bar.sql (with the bar documents and live parts of 10- and 11- they read):
 * api.bars and api.bar as bar_partner. Through HTTP: test/api/bars.test.ts; the filters one by
 * one: test/api/bar-filters-sql.test.ts.
 */
import { CHICAGO } from '../../support/fixtures';
import { errorOf, familyDatabase, type Tx } from './sql';

const sql = familyDatabase();

interface Bar {
  id: string;
  name: string;
  occupancy: {
    current_intensity: number | null;
    status: string | null;
    hourly_data?: { hour: number; intensity: number }[];
  };
}
const ids = (r: { bars: Bar[] }) => r.bars.map((b) => b.id);

// Chicago is UTC-6 in late November. 2026-11-22 is a Sunday, 2026-11-23 a Monday.
const MONDAY_0259_CHICAGO = '2026-11-23T08:59:00Z';
const MONDAY_0300_CHICAGO = '2026-11-23T09:00:00Z';
const SUNDAY_2159_CHICAGO = '2026-11-23T03:59:00Z';

async function city(tx: Tx) {
  const chicago = await tx.fx.city(CHICAGO);
  // Sunday 22:00-03:00: the after-midnight slot that wraps the week (Sunday into Monday)
  const owl = await tx.fx.bar(chicago, { name: 'Night Owl', price_level: 2, google_rating: 4.5 });
  await tx.fx.hours(owl, [[7, '22:00', '03:00']]);
  await tx.fx.occupancy(owl, 80, (day, hour) => day * 10 + (hour % 10));
  return { chicago, owl: String(owl) };
}

describe('api.bars', () => {
  test('an after-midnight Sunday slot is open on Monday until it closes (open_now, status, intensity)', async () => {
    await sql.run(async (tx) => {
      const { owl } = await city(tx);
      const at = (now: string) =>
        tx.call<{ bars: Bar[] }>('bar_partner', 'select api.bars(p_open_now => true, p_now => $1)::json', [now]);
      expect(ids(await at(SUNDAY_2159_CHICAGO))).toEqual([]);
      expect(ids(await at(MONDAY_0259_CHICAGO))).toEqual([owl]);
      expect(ids(await at(MONDAY_0300_CHICAGO))).toEqual([]);
      const all = await tx.call<{ bars: Bar[] }>('bar_partner', 'select api.bars(p_now => $1)::json', [
        MONDAY_0259_CHICAGO,
      ]);
      expect(all.bars[0]!.occupancy).toEqual({ current_intensity: 80, status: 'very_busy' });
      const closed = await tx.call<{ bars: Bar[] }>('bar_partner', 'select api.bars(p_now => $1)::json', [
        MONDAY_0300_CHICAGO,
      ]);
      expect(closed.bars[0]!.occupancy).toEqual({ current_intensity: 0, status: 'closed' });
    });
  });

  test('ties: the same name is ordered by id; the same distance too, and the limit cuts after the lowest ids', async () => {
    await sql.run(async (tx) => {
      const { chicago, owl } = await city(tx);
      const twins = [];
      for (let i = 0; i < 6; i++)
        twins.push(String(await tx.fx.bar(chicago, { name: 'Twin', latitude: 41.9, longitude: -87.6 })));
      // (the walk of bars_geo returns six equal distances out of id order: the page must still be by id)
      const byName = await tx.call<{ bars: Bar[] }>('bar_partner', 'select api.bars()::json');
      expect(ids(byName)).toEqual([owl, ...twins]);
      // The walk reads one bar more than the page: a tie at the page's edge (limits 1-5) collects every
      // bar at that distance; at limit 6 the extra bar (owl) is farther, so the walk alone is the page.
      for (const radius of [null, 5]) {
        const nearest = (limit: number) =>
          tx.call<{ bars: Bar[] }>(
            'bar_partner',
            'select api.bars(p_latitude => 41.9, p_longitude => -87.6, p_radius => $2, p_limit => $1)::json',
            [limit, radius],
          );
        for (let limit = 1; limit <= 6; limit++) expect(ids(await nearest(limit))).toEqual(twins.slice(0, limit));
        expect(ids(await nearest(7))).toEqual([...twins, owl]);
        expect(ids(await nearest(100))).toEqual([...twins, owl]);
      }
      // a radius that ends between the twins and the owl (about 3.3 km apart)
      const within = await tx.call<{ bars: Bar[] }>(
        'bar_partner',
        'select api.bars(p_latitude => 41.9, p_longitude => -87.6, p_radius => 1, p_limit => 2)::json',
      );
      expect(ids(within)).toEqual(twins.slice(0, 2));
    });
  });

  test('radius: a bar at the very edge is in exactly when earth_distance says so (both nearest-first walks)', async () => {
    await sql.run(async (tx) => {
      const { chicago } = await city(tx); // the owl, of price level 2, about 3.3 km from the centre
      // 40 bars on a spiral around the centre, 0.3-12 km out
      for (let i = 0; i < 40; i++) {
        const angle = i * 2.4;
        const km = 0.3 + i * 0.3;
        await tx.fx.bar(chicago, {
          name: `Spiral ${i}`,
          price_level: 2,
          latitude: 41.9 + (km / 111) * Math.sin(angle),
          longitude: -87.6 + (km / 83) * Math.cos(angle),
        });
      }
      // Each bar's own distance as the radius (in miles, as partners give it): the bar sits on the edge,
      // where turning great-circle metres into straight-line ones rounds either way.
      const edges = await tx.query<{ miles: number }>(
        `select earth_distance(private.earth_point(41.9, -87.6), b.geo) / 1609.344 as miles
         from private.bars b where b.name like 'Spiral %' order by b.id`,
      );
      expect(edges).toHaveLength(40);
      for (const { miles } of edges) {
        const served = await tx.call<{ bars: Bar[] }>(
          'bar_partner',
          'select api.bars(p_latitude => 41.9, p_longitude => -87.6, p_radius => $1, p_limit => 100)::json',
          [miles],
        );
        const recomputed = await tx.query<{ id: string }>(
          `select b.id::text as id from private.bars b
           where earth_distance(private.earth_point(41.9, -87.6), b.geo) <= $1::float8 * 1609.344
           order by b.geo <-> private.earth_point(41.9, -87.6), b.id`,
          [miles],
        );
        expect(ids(served)).toEqual(recomputed.map((r) => r.id));
        // With a filter every bar passes, the filtered walk: a page of exactly the bars within, which
        // the walk alone proves (one bar fewer would send it to the collect step).
        const filtered = await tx.call<{ bars: Bar[] }>(
          'bar_partner',
          `select api.bars(p_latitude => 41.9, p_longitude => -87.6, p_radius => $1, p_limit => $2,
                           p_price_levels => '{2}')::json`,
          [miles, Math.max(1, recomputed.length)],
        );
        expect(ids(filtered)).toEqual(recomputed.map((r) => r.id));
      }
    });
  });

  test('filters combine with AND: open_at after midnight, price level, rating, status and category', async () => {
    await sql.run(async (tx) => {
      const { chicago, owl } = await city(tx);
      const cheap = await tx.fx.bar(chicago, { name: 'Cheap Owl', price_level: 1, google_rating: 4.8 });
      await tx.fx.hours(cheap, [[7, '22:00', '03:00']]);
      await tx.fx.occupancy(cheap, 30);
      const dive = await tx.fx.category('Dive', 'dive');
      await tx.fx.barCategory(cheap, dive, true);
      await tx.fx.barCategory(Number(owl), dive, true);
      const find = async (args: string) =>
        ids(
          await tx.call<{ bars: Bar[] }>(
            'bar_partner',
            `select api.bars(p_now => '${MONDAY_0259_CHICAGO}', ${args})::json`,
          ),
        );
      expect(await find(`p_open_at => '${MONDAY_0259_CHICAGO}'`)).toEqual([String(cheap), owl]);
      expect(await find(`p_open_at => '${MONDAY_0300_CHICAGO}'`)).toEqual([]);
      expect(await find(`p_open_at => '${MONDAY_0259_CHICAGO}', p_price_levels => '{2,3}'`)).toEqual([owl]);
      expect(await find(`p_category => 'dive', p_min_rating => 4.6`)).toEqual([String(cheap)]);
      expect(await find(`p_category => 'dive', p_statuses => '{moderate}'`)).toEqual([String(cheap)]);
      expect(await find(`p_category => 'dive', p_statuses => '{moderate}', p_price_levels => '{2}'`)).toEqual([]);
      expect(await find(`p_open_now => false`)).toEqual([]);
    });
  });
});

describe('api.bars renders its page as text', () => {
  test('the same bytes json_build_object and json_agg give, names that need escaping included', async () => {
    await sql.run(async (tx) => {
      const { chicago, owl } = await city(tx);
      const odd = 'Joe\'s "Tap" \\ Bar ☕\n';
      const oddId = String(await tx.fx.bar(chicago, { name: odd, latitude: 41.9, longitude: -87.6 }));
      const cases = [
        'p_now => $1',
        'p_latitude => 41.9, p_longitude => -87.6, p_radius => 5, p_limit => 50, p_now => $1',
        `p_ids => array['${oddId}', '${owl}', '999999'], p_now => $1`,
        'p_limit => 1, p_now => $1',
        'p_limit => 0, p_now => $1',
        "p_category => 'no-such-slug', p_now => $1",
        "p_open_now => true, p_price_levels => '{2}', p_now => $1",
      ];
      for (const args of cases) {
        const [r] = await tx.query<{ text: string; rerendered: string }>(
          `select t.text, json_build_object('bars', (
                    select coalesce(json_agg(e), '[]'::json) from json_array_elements(t.text::json -> 'bars') e)
                  )::text as rerendered
           from (select api.bars(${args}) as text) t`,
          [MONDAY_0259_CHICAGO],
        );
        expect(r!.text).toBe(r!.rerendered);
      }
      const page = JSON.parse(
        await tx.call<string>('bar_partner', `select api.bars(p_ids => array['${oddId}'], p_now => $1)`, [
          MONDAY_0259_CHICAGO,
        ]),
      ) as { bars: Bar[] };
      expect(page.bars.map((b) => b.name)).toEqual([odd]);
    });
  });
});

describe('private.within_radius', () => {
  test('decides as earth_distance does, on the edge and a trillionth either side of it, at zero and below', async () => {
    await sql.run(async (tx) => {
      const [r] = await tx.query<{ n: string; differ: string; inside: string }>(
        `with c as (select private.earth_point(41.9, -87.6) as p),
         points as (  -- a 97 x 21 grid of about 12 x 7 km around the centre (the centre itself included)
           select private.earth_point(41.9 + (i % 97 - 48) * 0.0013, -87.6 + (i / 97 - 10) * 0.0017) as g
           from generate_series(0, 97 * 21 - 1) i),
         cases as (
           select c.p, points.g, earth_distance(c.p, points.g) * f as r
           from c, points, unnest(array[1, 1 + 1e-12, 1 - 1e-12, 0, -1]::float8[]) f)
         select count(*) as n,
                count(*) filter (where private.within_radius(p, g, r, gc_to_sec(r))
                                       is distinct from (earth_distance(p, g) <= r)) as differ,
                count(*) filter (where earth_distance(p, g) <= r) as inside
         from cases`,
      );
      expect(Number(r!.n)).toBe(97 * 21 * 5);
      expect(Number(r!.inside)).toBeGreaterThan(97 * 21); // on the edge (f = 1) and the centre at 0
      expect(Number(r!.inside)).toBeLessThan(97 * 21 * 3);
      expect(Number(r!.differ)).toBe(0);
    });
  });
});

describe('api.bar', () => {
  test('hourly_data is the local day of p_now: Monday after a Sunday night', async () => {
    await sql.run(async (tx) => {
      const { owl } = await city(tx);
      const r = await tx.call<{ bar: Bar }>('bar_partner', 'select api.bar($1, $2)::json', [owl, MONDAY_0259_CHICAGO]);
      expect(r.bar.occupancy.status).toBe('very_busy');
      expect(r.bar.occupancy.hourly_data!.map((h) => h.intensity)).toEqual(
        Array.from({ length: 24 }, (_, h) => 10 + (h % 10)),
      );
    });
  });

  test.each(['999999', '0', 'abc', '1.0', ''])('unknown or malformed id %j: null (404)', async (id) => {
    await sql.run(async (tx) => {
      await city(tx);
      expect(await tx.call('bar_partner', 'select api.bar($1)', [id])).toBeNull();
    });
  });

  test('its text is the bytes json_build_object gives, names that need escaping and events included', async () => {
    await sql.run(async (tx) => {
      const { chicago, owl } = await city(tx);
      const odd = 'Joe\'s "Tap" \\ Bar ☕\n';
      const oddId = String(await tx.fx.bar(chicago, { name: odd, latitude: 41.9, longitude: -87.6 }));
      await tx.fx.event(Number(oddId), {
        title: 'Quiz "night" \\ ☕',
        start_at: '2026-11-24T02:00:00Z',
        end_at: '2026-11-24T04:00:00Z',
      });
      for (const id of [owl, oddId]) {
        const [r] = await tx.query<{ text: string; rerendered: string }>(
          `select t.text, json_build_object('bar', t.text::json -> 'bar')::text as rerendered
           from (select api.bar($1, $2) as text) t`,
          [id, MONDAY_0259_CHICAGO],
        );
        expect(r!.text).toBe(r!.rerendered);
      }
      const bar = JSON.parse(
        await tx.call<string>('bar_partner', 'select api.bar($1, $2)', [oddId, MONDAY_0259_CHICAGO]),
      ) as { bar: Bar & { events: { name: string }[] } };
      expect(bar.bar.name).toBe(odd);
      expect(bar.bar.events.map((e) => e.name)).toEqual(['Quiz "night" \\ ☕']);
    });
  });
});

describe('privileges', () => {
  test.each([
    ['bar_operator', 'select api.bars()'],
    ['bar_operator', "select api.bar('1')"],
    ['bar_partner', 'select * from private.bars'],
    ['bar_partner', 'select * from private.bar_live'],
    ['bar_partner', 'select * from private.bar_documents'],
    ['bar_partner', "select private.bar_id_or_null('1')"],
  ] as const)('%s may not: %s', async (role, query) => {
    await sql.run(async (tx) => {
      expect((await errorOf(tx, role, query)).code).toBe('42501');
    });
  });
});
