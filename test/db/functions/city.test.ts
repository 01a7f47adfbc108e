/**
 * 23-bars-by-city.sql, 24-events.sql, 25-posts.sql, 26-feed.sql: the city endpoints as bar_partner,
 * with the clock pinned. Through HTTP: test/api/city.test.ts; "today" around UTC midnight and DST:
 * test/api/time.test.ts.
 */
import { errorOf, familyDatabase, type Tx } from './sql';

const sql = familyDatabase();

interface Page {
  current_page: number;
  total_pages: number;
  total_count: number;
  per_page: number;
}
interface Named {
  id: string;
  name: string;
}
// Chicago: UTC-6 in late November. 2026-11-23 is a Monday.
const MONDAY_0100_CHICAGO = '2026-11-23T07:00:00Z';

async function chicago(tx: Tx) {
  const city = await tx.fx.city({ name: 'Chicago', state: 'IL', time_zone: 'America/Chicago' });
  const bar = async (name: string, intensity: number, open = true) => {
    const id = await tx.fx.bar(city, { name });
    if (open) await tx.fx.alwaysOpen(id);
    await tx.fx.occupancy(id, intensity);
    return String(id);
  };
  return { city, bar };
}

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
    ['bar_partner', 'select * from private.events'],
    ['bar_partner', 'select * from private.posts'],
    ['bar_partner', "select private.city_events_today(1, '2026-11-23')"],
  ] as const)('%s may not: %s', async (role, query) => {
    await sql.run(async (tx) => {
      expect((await errorOf(tx, role, query)).code).toBe('42501');
    });
  });
});
