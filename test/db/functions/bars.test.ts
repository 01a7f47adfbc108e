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

describe('api.bars renders a page with a bar whose document is deferred', () => {
  test('the other bars in order, as valid JSON (the braces not lost with the missing first or last bar)', async () => {
    await sql.run(async (tx) => {
      const { chicago, owl } = await city(tx);
      const before = String(await tx.fx.bar(chicago, { name: 'Before', latitude: 41.9, longitude: -87.6 }));
      await tx.query("set local private.defer_bar_documents = 'on'");
      const missing = String(await tx.fx.bar(chicago, { name: 'Deferred', latitude: 41.9, longitude: -87.6 }));
      const pageIds = async (ids: string[]) => {
        const text = await tx.call<string>('bar_partner', `select api.bars(p_ids => $1, p_now => $2)`, [
          ids,
          MONDAY_0259_CHICAGO,
        ]);
        return (JSON.parse(text) as { bars: Bar[] }).bars.map((b) => b.id);
      };
      expect(await pageIds([missing, before, owl])).toEqual([before, owl]);
      expect(await pageIds([before, owl, missing])).toEqual([before, owl]);
      expect(await pageIds([missing])).toEqual([]);
      expect(await pageIds([before, owl])).toEqual([before, owl]);
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

describe('GET bars within a radius: the walk of the plane (private.bars_page_nearest, radius_latlon_box)', () => {
  test('the page equals its definition (within the radius, by distance, id) anywhere: clusters, ties, poles, the antimeridian', async () => {
    await sql.run(async (tx) => {
      const chicago = await tx.fx.city(CHICAGO);
      // 3,000 bars: a dense cluster (a point every ~10 m), copies of one point (ties), a sparse spread, and
      // bars near the north pole and on both sides of the antimeridian (where the plane's box cannot hold a circle)
      await tx.query('select setseed(0.34)'); // the same bars and requests on every run
      await tx.query(
        `insert into private.bars (city_id, name, address, latitude, longitude)
         select $1, 'Bar ' || g, g || ' Main St', p.lat, p.lon
         from generate_series(1, 3000) g
         cross join lateral (select case
           when g <= 1200 then 41.9 + (random() - 0.5) * 0.02
           when g <= 1230 then 41.91
           when g <= 2400 then 25 + random() * 25
           when g <= 2700 then 88.2 + random() * 1.7
           else (random() - 0.5) * 4 end as lat,
                case
           when g <= 1200 then -87.6 + (random() - 0.5) * 0.03
           when g <= 1230 then -87.61
           when g <= 2400 then -120 + random() * 45
           when g <= 2700 then -180 + random() * 360
           when g <= 2850 then 179.2 + random() * 0.8
           else -180 + random() * 0.8 end as lon where g > 0) p`,
        [chicago],
      );
      const [r] = await tx.query<{ n: string; differ: string; planar: string; bounded: string; fallback: string }>(
        `with q as (
           select c.lat, c.lon, c.miles, c.k,
                  private.radius_latlon_box(c.lat, c.lon, private.earth_chord(c.miles * 1609.344) * (1 + 1e-9)) is not null as planar
           from (select case when i % 4 = 0 then 41.9 + (random() - 0.5) * 0.03
                             when i % 4 = 1 then 41.91
                             when i % 4 = 2 then 87 + random() * 2.5
                             else (random() - 0.5) * 3 end as lat,
                        case when i % 4 = 0 then -87.6 + (random() - 0.5) * 0.04
                             when i % 4 = 1 then -87.61
                             when i % 4 = 2 then -180 + random() * 360
                             else (case when i % 8 = 3 then 179.5 else -179.5 end) + (random() - 0.5) end as lon,
                        (array[0.005, 0.05, 0.3, 1, 5, 25, 60, 300])[1 + (i / 4) % 8] as miles,
                        (array[1, 2, 20, 29, 30, 31, 50, 100])[1 + (i / 32) % 8] as k
                 from generate_series(0, 511) i) c),
         cmp as (
           select q.*,
                  (select coalesce(array_agg(x->>'id'), '{}') from json_array_elements(
                     api.bars(p_latitude => q.lat, p_longitude => q.lon, p_radius => q.miles, p_limit => q.k)::json -> 'bars') x) as served,
                  array(select b.id::text from private.bars b
                        where earth_distance(private.earth_point(q.lat, q.lon), b.geo) <= q.miles * 1609.344
                        order by b.geo <-> private.earth_point(q.lat, q.lon), b.id limit q.k) as defined,
                  (select count(*) from private.bars b
                   where earth_distance(private.earth_point(q.lat, q.lon), b.geo) <= q.miles * 1609.344) as within
           from q)
         select count(*) as n, count(*) filter (where served is distinct from defined) as differ,
                count(*) filter (where planar) as planar,
                count(*) filter (where planar and within > k) as bounded,
                count(*) filter (where not planar) as fallback
         from cmp`,
      );
      expect(Number(r!.n)).toBe(512);
      expect(Number(r!.differ)).toBe(0);
      // both ways were taken, and the plane's walk often bounded a page smaller than the radius holds
      expect(Number(r!.planar)).toBeGreaterThan(200);
      expect(Number(r!.bounded)).toBeGreaterThan(100);
      expect(Number(r!.fallback)).toBeGreaterThan(50);
    });
  });

  test('radius_latlon_box holds every point of the circle, its widest longitude included; null beyond 70 degrees of latitude or across the antimeridian', async () => {
    await sql.run(async (tx) => {
      // points exactly on the circle (a destination at angular distance d on bearing b), the circle's
      // chord computed back from the point as the walk does (cube's <->)
      await tx.query('select setseed(0.78)');
      const [r] = await tx.query<{ n: string; boxed: string; outside: string }>(
        `with c as (
           select (random() - 0.5) * 178 as lat, (random() - 0.5) * 360 as lon,
                  radians(case when i % 3 = 0 then random() * 0.0001 when i % 3 = 1 then random() * 0.1 else random() * 20 end) as d,
                  radians(case when i % 5 = 0 then 90 when i % 5 = 1 then 270 else random() * 360 end) as b
           from generate_series(1, 20000) i),
         p as (
           select c.*, degrees(asin(sin(radians(c.lat)) * cos(c.d) + cos(radians(c.lat)) * sin(c.d) * cos(c.b))) as lat2
           from c),
         e as (
           select p.*, p.lon + degrees(atan2(sin(p.b) * sin(p.d) * cos(radians(p.lat)),
                                             cos(p.d) - sin(radians(p.lat)) * sin(radians(p.lat2)))) as lon2
           from p),
         t as (
           select e.*, private.radius_latlon_box(e.lat, e.lon,
                         private.earth_point(e.lat2, e.lon2) <-> private.earth_point(e.lat, e.lon)) as box
           from e)
         select count(*) as n, count(box) as boxed,
                count(*) filter (where box is not null and not (point(lon2, lat2) <@ box)) as outside
         from t`,
      );
      expect(Number(r!.n)).toBe(20000);
      expect(Number(r!.boxed)).toBeGreaterThan(12000);
      expect(Number(r!.outside)).toBe(0);
      const box = async (lat: number, lon: number, meters: number) =>
        (
          await tx.query<{ box: string | null }>(
            'select private.radius_latlon_box($1, $2, private.earth_chord($3))::text as box',
            [lat, lon, meters],
          )
        )[0]!.box;
      expect(await box(88.5, 0, 60000)).toBeNull(); // near the pole
      expect(await box(69.9, 20, 20000)).toBeNull(); // the circle reaches beyond 70 degrees
      expect(await box(69.7, 20, 20000)).not.toBeNull();
      expect(await box(41.9, 179.9, 20000)).toBeNull(); // across the antimeridian
      expect(await box(41.9, -179.9, 20000)).toBeNull();
      expect(await box(41.9, -87.6, 8046.72)).not.toBeNull();
      expect(await box(41.9, -87.6, 0)).not.toBeNull(); // a radius of 0: the centre's own point
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
