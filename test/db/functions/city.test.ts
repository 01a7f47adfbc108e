/**
 * 23-bars-by-city.sql, 24-events.sql, 25-posts.sql, 26-feed.sql: the city endpoints as bar_partner,
 * with the clock pinned. Through HTTP: test/api/city.test.ts; "today" around UTC midnight and DST:
 * test/api/time.test.ts.
 */
import { chicago, MONDAY_0100_CHICAGO, type Named, type Page } from './chicago';
import { errorOf, familyDatabase, type Tx } from './sql';

const sql = familyDatabase();

describe('api.bars_by_city', () => {
  test('busiest_bars: open bars only, intensity first, ties by name then id, at most 5', async () => {
    await sql.run(async (tx) => {
      const { bar } = await chicago(tx);
      const closed = await bar('Closed Loud', 99, false);
      const b2 = await bar('Bravo', 70);
      const b1 = await bar('Alpha', 70);
      const b1b = await bar('Alpha', 70);
      const top = await bar('Top', 90);
      await bar('Low', 10);
      await bar('Lower', 5);
      const r = await tx.call<{ busiest_bars: (Named & { current_intensity: number })[] }>(
        'bar_partner',
        "select api.bars_by_city('IL', 'Chicago', p_now => $1)",
        [MONDAY_0100_CHICAGO],
      );
      expect(r.busiest_bars.map((b) => b.id)).toEqual([top, b1, b1b, b2, expect.any(String)]);
      expect(r.busiest_bars.map((b) => b.id)).not.toContain(closed);
      expect(r.busiest_bars.map((b) => b.current_intensity)).toEqual([90, 70, 70, 70, 10]);
    });
  });

  test('the page and busiest_bars by day: one generic plan each, their index walks, whatever the statistics', async () => {
    await sql.run(async (tx) => {
      const { bar } = await chicago(tx);
      for (let i = 0; i < 8; i++) await bar(`Open ${i}`, 10 * i);
      // statistics of a small city: a generic plan costed for it may sort the city instead of walking
      await tx.query('analyze private.bar_live');
      const call = "select api.bars_by_city('IL', 'Chicago', p_now => $1)";
      await tx.as('bar_partner', call, [MONDAY_0100_CHICAGO]);
      const plans = await tx.plans('bar_partner', call, [MONDAY_0100_CHICAGO]);
      const walks = plans.filter((p) => p.includes('limit 2000'));
      expect(walks).toHaveLength(1); // five of the top 2,000 open: not the night's walks
      expect(walks[0]).toContain('Index Only Scan using bar_live_city_busiest');
      expect(walks[0]).toMatch(/city_id = \$1/); // generic: planned once per connection
      expect(walks[0]).not.toMatch(/\bSort\b/);
      expect(plans.filter((p) => /count\(\*\)/.test(p) && p.includes('bar_live'))).toEqual([]);
      const pages = plans.filter((p) => p.includes('order by b.name, b.id'));
      expect(pages).toHaveLength(1);
      expect(pages[0]).toContain('Index Only Scan using bars_city_name');
      expect(pages[0]).toMatch(/city_id = \$1/);
      expect(pages[0]).not.toMatch(/\bSort\b/);
    });
  });

  test('pagination edges: by name then id, an exact multiple, a page past the end', async () => {
    await sql.run(async (tx) => {
      const { bar } = await chicago(tx);
      const twins = [await bar('Twin', 1), await bar('Twin', 1), await bar('Twin', 1), await bar('Twin', 1)];
      const page = (n: number, per: number) =>
        tx.call<{ bars: Named[]; pagination: Page }>(
          'bar_partner',
          "select api.bars_by_city('il', 'CHICAGO', p_page => $1, p_per_page => $2, p_now => $3)",
          [n, per, MONDAY_0100_CHICAGO],
        );
      expect((await page(1, 2)).bars.map((b) => b.id)).toEqual(twins.slice(0, 2));
      const last = await page(2, 2);
      expect(last.bars.map((b) => b.id)).toEqual(twins.slice(2));
      expect(last.pagination).toEqual({ current_page: 2, total_pages: 2, total_count: 4, per_page: 2 });
      const past = await page(3, 2);
      expect(past.bars).toEqual([]);
      expect(past.pagination).toEqual({ current_page: 3, total_pages: 2, total_count: 4, per_page: 2 });
      expect((await page(2, 3)).bars.map((b) => b.id)).toEqual(twins.slice(3));
    });
  });

  test('events_today is the local day of p_now: at 01:00 Monday, the Sunday and Tuesday events are out', async () => {
    await sql.run(async (tx) => {
      const { bar } = await chicago(tx);
      const id = Number(await bar('Stage', 50));
      // Sunday 23:00 local (ended), Monday 20:00 local (today), Tuesday 00:30 local (tomorrow)
      await tx.fx.event(id, { title: 'sunday', start_at: '2026-11-23T05:00:00Z', end_at: '2026-11-23T06:00:00Z' });
      await tx.fx.event(id, { title: 'monday', start_at: '2026-11-24T02:00:00Z', end_at: '2026-11-24T04:00:00Z' });
      await tx.fx.event(id, { title: 'tuesday', start_at: '2026-11-24T06:30:00Z', end_at: '2026-11-24T08:00:00Z' });
      const r = await tx.call<{ events_today: Named[] }>(
        'bar_partner',
        "select api.bars_by_city('IL', 'Chicago', p_now => $1)",
        [MONDAY_0100_CHICAGO],
      );
      expect(r.events_today.map((e) => e.name)).toEqual(['monday']);
    });
  });

  describe('events_today_limit and events_today_total (v1.3)', () => {
    // five events today (Monday, local) at different bars, in start order e1..e5, and one tomorrow
    async function fiveToday(tx: Tx) {
      const c = await chicago(tx);
      const ids: number[] = [];
      for (const [i, name] of ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo'].entries()) {
        const id = Number(await c.bar(name, 10 + i));
        ids.push(id);
        const start = `2026-11-24T0${i}:00:00Z`; // Monday 18:00..22:00 local
        await tx.fx.event(id, { title: `e${i + 1}`, start_at: start, end_at: '2026-11-24T05:30:00Z' });
      }
      await tx.fx.event(ids[0]!, {
        title: 'tomorrow',
        start_at: '2026-11-24T07:00:00Z',
        end_at: '2026-11-24T08:00:00Z',
      });
      return { ...c, ids };
    }
    interface Side {
      events_today: Named[];
      events_today_total: number;
      busiest_bars: Named[];
      city: { name: string };
    }
    const names = (r: Side) => r.events_today.map((e) => e.name);
    const byCity = (tx: Tx, limit: number | null, group: string | null = null) =>
      tx.call<Side>(
        'bar_partner',
        "select api.bars_by_city('IL', 'Chicago', p_group_slug => $1, p_events_today_limit => $2, p_now => $3)",
        [group, limit, MONDAY_0100_CHICAGO],
      );

    test('the first N of the day in start order; the total counts them all; null or a large limit gives all', async () => {
      await sql.run(async (tx) => {
        await fiveToday(tx);
        const all = await byCity(tx, null);
        expect(names(all)).toEqual(['e1', 'e2', 'e3', 'e4', 'e5']);
        expect(all.events_today_total).toBe(5);
        const two = await byCity(tx, 2);
        expect(names(two)).toEqual(['e1', 'e2']);
        expect(two.events_today_total).toBe(5);
        expect(names(await byCity(tx, 5))).toEqual(names(all));
        expect(names(await byCity(tx, 1000))).toEqual(names(all));
        // the stored fragment serves the next call: still sliced, still counted
        const again = await byCity(tx, 3);
        expect([names(again), again.events_today_total]).toEqual([['e1', 'e2', 'e3'], 5]);
      });
    });

    test('a group: its members events, sliced and counted the same way', async () => {
      await sql.run(async (tx) => {
        const { city, ids } = await fiveToday(tx);
        await tx.fx.group(city, 'west', [ids[1]!, ids[3]!, ids[4]!]);
        const g = await byCity(tx, 2, 'west');
        expect(names(g)).toEqual(['e2', 'e4']);
        expect(g.events_today_total).toBe(3);
        expect((await byCity(tx, null, 'west')).events_today_total).toBe(3);
      });
    });

    test('a city without events today: [] and 0', async () => {
      await sql.run(async (tx) => {
        await chicago(tx);
        const r = await byCity(tx, 10);
        expect([r.events_today, r.events_today_total]).toEqual([[], 0]);
      });
    });

    test('api.graphql_city_highlights is the page side data of bars_by_city, without a page of bars', async () => {
      await sql.run(async (tx) => {
        await fiveToday(tx);
        for (const limit of [null, 2]) {
          const page = await byCity(tx, limit);
          const side = await tx.call<Side & { bars?: unknown }>(
            'bar_partner_graphql',
            "select api.graphql_city_highlights('il', 'chicago', p_now => $1, p_events_today_limit => $2)",
            [MONDAY_0100_CHICAGO, limit],
          );
          expect(side.bars).toBeUndefined();
          expect(side).toEqual({
            city: page.city,
            events_today: page.events_today,
            events_today_total: page.events_today_total,
            busiest_bars: page.busiest_bars,
          });
        }
        expect(
          await tx.call('bar_partner_graphql', "select api.graphql_city_highlights('IL', 'Springfield')"),
        ).toBeNull();
      });
    });
  });

  test('an unknown city is null (404), whatever the filters', async () => {
    await sql.run(async (tx) => {
      await chicago(tx);
      expect(
        await tx.call('bar_partner', "select api.bars_by_city('IL', 'Springfield', p_open_now => true)"),
      ).toBeNull();
      expect(await tx.call('bar_partner', "select api.events('WI', 'Chicago')")).toBeNull();
    });
  });
});

describe('private.event_count and city_event_hours (the totals of GET events and the feed)', () => {
  const recomputed = `
    select count(*)::int as n from (
      (select city_id, hour, n from private.city_event_hours where n <> 0
       except select city_id, date_trunc('hour', start_at, 'UTC'), count(*)::int from private.events group by 1, 2)
      union all
      (select city_id, date_trunc('hour', start_at, 'UTC'), count(*)::int from private.events group by 1, 2
       except select city_id, hour, n from private.city_event_hours where n <> 0)) x`;

  test('equals count(*) for windows on and off hour boundaries, within one hour and open-ended', async () => {
    await sql.run(async (tx) => {
      const { city, bar } = await chicago(tx);
      const id = Number(await bar('Stage', 50));
      const starts = [
        '2026-11-23T10:00:00Z',
        '2026-11-23T10:59:59Z',
        '2026-11-23T11:30:00Z',
        '2026-11-23T13:00:00Z',
        '2026-11-23T13:00:00.000001Z',
        '2026-11-24T02:15:00Z',
        '2026-12-20T00:00:00Z',
      ];
      for (const [i, start] of starts.entries()) {
        await tx.fx.event(id, { title: `e${i}`, start_at: start, end_at: '2026-12-31T00:00:00Z' });
      }
      const windows: [string, string][] = [
        ['2026-11-23T10:00:00Z', '2026-11-23T13:00:00Z'],
        ['2026-11-23T10:30:00Z', '2026-11-23T13:00:00.000001Z'],
        ['2026-11-23T10:59:59Z', '2026-11-23T11:00:00Z'],
        ['2026-11-23T11:10:00Z', '2026-11-23T11:50:00Z'],
        ['2026-11-23T09:00:00Z', '2026-12-20T00:00:00Z'],
        ['2026-11-23T12:00:00Z', 'infinity'],
        ['-infinity', '2026-11-24T02:15:00.000001Z'],
        ['2026-11-23T10:00:00.5Z', '2026-11-23T10:00:00.5Z'],
      ];
      for (const [lo, hi] of windows) {
        const [row] = await tx.query(
          `select private.event_count($1, $2, $3)::int as fast,
                  (select count(*)::int from private.events where city_id = $1 and start_at >= $2 and start_at < $3) as slow`,
          [city, lo, hi],
        );
        expect([lo, hi, row!.fast]).toEqual([lo, hi, row!.slow]);
      }
      expect((await tx.query(recomputed))[0]!.n).toBe(0);
    });
  });

  test('the hours stay exact through updates (a start moved to another hour) and deletes', async () => {
    await sql.run(async (tx) => {
      const { bar } = await chicago(tx);
      const id = Number(await bar('Stage', 50));
      for (let i = 0; i < 6; i++) {
        await tx.fx.event(id, { title: `e${i}`, start_at: `2026-11-23T1${i}:20:00Z`, end_at: '2026-12-31T00:00:00Z' });
      }
      await tx.query(`update private.events set start_at = start_at + interval '3 hours' where title in ('e0', 'e1')`);
      expect((await tx.query(recomputed))[0]!.n).toBe(0);
      await tx.query(`delete from private.events where title in ('e2', 'e5')`);
      expect((await tx.query(recomputed))[0]!.n).toBe(0);
      await tx.query(`update private.events set title = 'renamed' where title = 'e3'`); // same hour: unchanged
      expect((await tx.query(recomputed))[0]!.n).toBe(0);
    });
  });
});

describe('api.events', () => {
  async function events(tx: Tx) {
    const { bar } = await chicago(tx);
    const id = Number(await bar('Stage', 50));
    const at = (title: string, start: string, classification = 'live_music') =>
      tx.fx.event(id, { title, start_at: start, end_at: '2026-12-31T00:00:00Z', classification });
    await at('b', '2026-11-24T02:00:00Z'); // Monday 20:00 local
    await at('a', '2026-11-24T02:00:00Z', 'dj'); // same start: by id
    await at('late', '2026-11-24T05:59:59Z', 'dj'); // Monday 23:59:59 local
    await at('tuesday', '2026-11-24T06:00:00Z'); // Tuesday 00:00 local
    const call = (args: string) =>
      tx.call<{ events: { title: string }[]; pagination: Page }>(
        'bar_partner',
        `select api.events('IL', 'Chicago', p_now => '${MONDAY_0100_CHICAGO}', ${args})`,
      );
    return call;
  }

  test('a date-only end_date includes its whole local day and nothing after; same start by id', async () => {
    await sql.run(async (tx) => {
      const call = await events(tx);
      const r = await call("p_start_date => '2026-11-23', p_end_date => '2026-11-23'");
      expect(r.events.map((e) => e.title)).toEqual(['b', 'a', 'late']);
      const dj = await call("p_end_date => '2026-11-24', p_classification => 'dj'");
      expect(dj.events.map((e) => e.title)).toEqual(['a', 'late']);
      const local = await call("p_start_date => '2026-11-24T00:00:00', p_end_date => '2026-11-24'");
      expect(local.events.map((e) => e.title)).toEqual(['tuesday']);
    });
  });

  test('pages: per_page 1 at the last page and past it', async () => {
    await sql.run(async (tx) => {
      const call = await events(tx);
      const last = await call('p_page => 4, p_per_page => 1');
      expect(last.events.map((e) => e.title)).toEqual(['tuesday']);
      expect(last.pagination).toEqual({ current_page: 4, total_pages: 4, total_count: 4, per_page: 1 });
      expect((await call('p_page => 5, p_per_page => 1')).events).toEqual([]);
    });
  });

  test('an end before the start is PT400 (judged in the city time zone), with the decided messages', async () => {
    await sql.run(async (tx) => {
      await chicago(tx);
      const explicit = await errorOf(
        tx,
        'bar_partner',
        "select api.events('IL', 'Chicago', p_start_date => '2026-11-24', p_end_date => '2026-11-23')",
      );
      expect(explicit).toEqual({ code: 'PT400', message: 'end_date must not be before start_date' });
      const defaulted = await errorOf(
        tx,
        'bar_partner',
        "select api.events('IL', 'Chicago', p_start_date => '2027-06-01', p_now => $1)",
        [MONDAY_0100_CHICAGO],
      );
      expect(defaulted.code).toBe('PT400');
      expect(defaulted.message).toContain('defaults to 30 days after today');
      // the same instant as start and end date-time: inclusive, so not an error
      await tx.as(
        'bar_partner',
        "select api.events('IL', 'Chicago', p_start_date => '2026-11-24T00:00:00Z', p_end_date => '2026-11-24T00:00:00Z')",
      );
    });
  });
});

describe('api.posts and api.feed', () => {
  test('newest first, equal times by id descending; feed pages posts and keeps upcoming events', async () => {
    await sql.run(async (tx) => {
      const { bar } = await chicago(tx);
      const id = Number(await bar('Stage', 50));
      const user = await tx.fx.user();
      const p1 = String(await tx.fx.post(id, user, 'one', '2026-11-22T10:00:00Z'));
      const p2 = String(await tx.fx.post(id, user, 'two', '2026-11-22T10:00:00Z'));
      const p3 = String(await tx.fx.post(id, user, 'three', '2026-11-22T11:00:00Z'));
      const posts = await tx.call<{ posts: Named[]; pagination: Page }>(
        'bar_partner',
        "select api.posts('IL', 'Chicago', p_per_page => 2, p_page => 2, p_now => $1)",
        [MONDAY_0100_CHICAGO],
      );
      expect(posts.posts.map((p) => p.id)).toEqual([p1]);
      expect(posts.pagination).toEqual({ current_page: 2, total_pages: 2, total_count: 3, per_page: 2 });
      const first = await tx.call<{ posts: Named[] }>(
        'bar_partner',
        "select api.posts('IL', 'Chicago', p_per_page => 2, p_now => $1)",
        [MONDAY_0100_CHICAGO],
      );
      expect(first.posts.map((p) => p.id)).toEqual([p3, p2]);
      // a date-only end_date is the end of that local day: 2026-11-22 ends at 06:00Z on the 23rd
      const window = await tx.call<{ posts: Named[] }>(
        'bar_partner',
        "select api.posts('IL', 'Chicago', p_start_date => '2026-11-22T10:30:00Z', p_end_date => '2026-11-22', p_now => $1)",
        [MONDAY_0100_CHICAGO],
      );
      expect(window.posts.map((p) => p.id)).toEqual([p3]);
      await tx.fx.event(id, { title: 'ended', start_at: '2026-11-22T00:00:00Z', end_at: '2026-11-23T06:59:00Z' });
      await tx.fx.event(id, { title: 'running', start_at: '2026-11-22T00:00:00Z', end_at: '2026-11-23T07:01:00Z' });
      const feed = await tx.call<{ posts: Named[]; events: Named[]; pagination: Page }>(
        'bar_partner',
        "select api.feed('IL', 'Chicago', p_page => 2, p_per_page => 2, p_now => $1)",
        [MONDAY_0100_CHICAGO],
      );
      expect(feed.posts.map((p) => p.id)).toEqual([p1]);
      expect(feed.events.map((e) => e.name)).toEqual(['running']);
    });
  });
});

describe('privileges', () => {
  test.each([
    ['bar_operator', "select api.bars_by_city('IL', 'Chicago')"],
    ['bar_operator', "select api.events('IL', 'Chicago')"],
    ['bar_operator', "select api.posts('IL', 'Chicago')"],
    ['bar_operator', "select api.feed('IL', 'Chicago')"],
    ['bar_operator', "select api.graphql_city_highlights('IL', 'Chicago')"],
    ['bar_partner', "select api.graphql_city_highlights('IL', 'Chicago')"], // GraphQL's own read
    ['bar_partner', 'select * from private.events'],
    ['bar_partner', 'select * from private.posts'],
    ['bar_partner', "select private.city_events_today(1, '2026-11-23')"],
  ] as const)('%s may not: %s', async (role, query) => {
    await sql.run(async (tx) => {
      expect((await errorOf(tx, role, query)).code).toBe('42501');
    });
  });
});
