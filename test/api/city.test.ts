/**
 * The city endpoints: bars_by_city, events, posts, feed. Pagination edges,
 * group_slug, date windows, classification, path matching (case, spaces,
 * apostrophes, non-ASCII), busiest_bars and the feed's two lists.
 */
import type { Express } from 'express';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures, type Fixtures } from '../support/fixtures';
import { get } from '../support/openapi';
import { testNow } from '../support/clock';
import { buildApp } from '../support/partner-app';

const HOUR = 3600_000;
/** An instant relative to the one the app answers at (TEST_CLOCK), as events and posts are placed around it. */
const iso = (offsetMs: number) => new Date(testNow().getTime() + offsetMs).toISOString();

describe('city endpoints', () => {
  let db: TestDatabase;
  let f: Fixtures;
  let app: Express;
  let austin: number;
  const bars: Record<string, number> = {};

  /** Open around the clock: 00:00-12:00 and 12:00-00:00 (the latter closes at midnight). */
  const allDay = (barId: number) =>
    f.hours(
      barId,
      [1, 2, 3, 4, 5, 6, 7].flatMap(
        (d) =>
          [
            [d, '00:00', '12:00'],
            [d, '12:00', '00:00'],
          ] as [number, string, string][],
      ),
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    f = fixtures(db.owner);
    austin = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    await f.city({ name: 'Empty Town', state: 'TX', time_zone: 'America/Chicago' });
    const coeur = await f.city({ name: "Coeur d'Alene", state: 'ID', time_zone: 'America/Los_Angeles' });
    const canon = await f.city({ name: 'Cañon City', state: 'CO', time_zone: 'America/Denver' });
    await f.bar(coeur, { name: 'Lake Bar' });
    await f.bar(canon, { name: 'Royal Gorge Tap' });
    // Austin: six bars; five open with intensities, one closed with the highest intensity.
    const intensities: [string, number, boolean][] = [
      ['Alpha', 10, true],
      ['Bravo', 90, true],
      ['Charlie', 50, true],
      ['Delta', 70, true],
      ['Echo', 30, true],
      ['Foxtrot', 95, false],
      ['Golf', 20, true],
    ];
    for (const [name, intensity, open] of intensities) {
      bars[name] = await f.bar(austin, { name });
      await f.occupancy(bars[name]!, intensity);
      if (open) await allDay(bars[name]!);
    }
    await f.group(austin, 'downtown', [bars.Bravo!, bars.Delta!, bars.Foxtrot!]);
    ({ app } = buildApp(db.partnerPool()));
  });
  afterAll(() => db.drop());

  describe('paths: state and city match case-insensitively, percent-encoded names', () => {
    test.each([
      ['/bars_by_city/TX/Austin', 'Austin', 'TX'],
      ['/bars_by_city/tx/austin', 'Austin', 'TX'],
      ['/bars_by_city/Tx/AUSTIN', 'Austin', 'TX'],
      ["/bars_by_city/ID/Coeur%20d'Alene", "Coeur d'Alene", 'ID'],
      ['/bars_by_city/id/coeur%20d%27alene', "Coeur d'Alene", 'ID'],
      ['/bars_by_city/CO/Ca%C3%B1on%20City', 'Cañon City', 'CO'],
      ['/bars_by_city/co/CA%C3%91ON%20CITY', 'Cañon City', 'CO'],
      ['/feed/co/ca%C3%B1on%20city', 'Cañon City', 'CO'],
    ])('%s', async (path, name, state) => {
      const res = await get(app, P + path);
      expect(res.status).toBe(200);
      expect(res.body.city).toEqual({ name, state });
    });

    test('events and posts accept the same forms', async () => {
      expect((await get(app, `${P}/events/id/COEUR%20D'ALENE`)).status).toBe(200);
      expect((await get(app, `${P}/posts/co/ca%C3%B1on%20city`)).status).toBe(200);
    });

    test('city segments match accent-insensitively (v1.1); another name is still a 404', async () => {
      const res = await get(app, `${P}/bars_by_city/CO/Canon%20City`);
      expect(res.status).toBe(200);
      expect(res.body.city).toEqual({ name: 'Cañon City', state: 'CO' });
      expect((await get(app, `${P}/bars_by_city/CO/Canon%20Town`)).status).toBe(404);
    });

    test('a malformed percent-encoding is a 400, not a 500', async () => {
      const res = await get(app, `${P}/bars_by_city/TX/Aus%E0%A4%A`);
      expect(res.status).toBe(400);
    });
  });

  test.each([
    [1, 20, 0, 0],
    [1, 5, 5, 1],
    [1, 5, 6, 2],
    [3, 5, 10, 2],
    [9, 100, 1, 1],
  ])('private.pagination_json(page %i, per_page %i, total %i): total_pages %i', async (page, perPage, total, pages) => {
    const { rows } = await db.owner.query('select private.pagination_json($1, $2, $3) as p', [page, perPage, total]);
    expect(rows[0].p).toEqual({ current_page: page, total_pages: pages, total_count: total, per_page: perPage });
  });

  describe('bars_by_city', () => {
    const page = async (query: string) => (await get(app, `${P}/bars_by_city/TX/Austin${query}`)).body;

    test('bars by name; busiest_bars: the 5 open bars with the highest intensity', async () => {
      const body = await page('');
      expect(body.bars.map((b: { name: string }) => b.name)).toEqual([
        'Alpha',
        'Bravo',
        'Charlie',
        'Delta',
        'Echo',
        'Foxtrot',
        'Golf',
      ]);
      expect(body.busiest_bars).toEqual([
        { id: String(bars.Bravo), name: 'Bravo', current_intensity: 90 },
        { id: String(bars.Delta), name: 'Delta', current_intensity: 70 },
        { id: String(bars.Charlie), name: 'Charlie', current_intensity: 50 },
        { id: String(bars.Echo), name: 'Echo', current_intensity: 30 },
        { id: String(bars.Golf), name: 'Golf', current_intensity: 20 },
      ]);
      expect(body.pagination).toEqual({ current_page: 1, total_pages: 1, total_count: 7, per_page: 20 });
    });

    test('pagination: pages of 3, the last page, a page past the end', async () => {
      expect((await page('?per_page=3')).pagination).toEqual({
        current_page: 1,
        total_pages: 3,
        total_count: 7,
        per_page: 3,
      });
      const last = await page('?per_page=3&page=3');
      expect(last.bars.map((b: { name: string }) => b.name)).toEqual(['Golf']);
      expect(last.pagination).toEqual({ current_page: 3, total_pages: 3, total_count: 7, per_page: 3 });
      const past = await page('?per_page=3&page=4');
      expect(past.bars).toEqual([]);
      expect(past.pagination).toEqual({ current_page: 4, total_pages: 3, total_count: 7, per_page: 3 });
      // busiest_bars and events_today do not page
      expect(past.busiest_bars).toHaveLength(5);
    });

    test('pagination: an exact multiple of per_page', async () => {
      const body = await page('?per_page=7');
      expect(body.pagination).toEqual({ current_page: 1, total_pages: 1, total_count: 7, per_page: 7 });
      expect((await page('?per_page=7&page=2')).bars).toEqual([]);
    });

    test('an empty city: total_count 0, total_pages 0', async () => {
      const res = await get(app, `${P}/bars_by_city/TX/Empty%20Town`);
      expect(res.body).toEqual({
        city: { name: 'Empty Town', state: 'TX' },
        bars: [],
        events_today: [],
        busiest_bars: [],
        pagination: { current_page: 1, total_pages: 0, total_count: 0, per_page: 20 },
        events_today_total: 0,
      });
    });

    test('events_today_limit: the first N of events_today; events_today_total counts them all', async () => {
      const town = await f.city({ name: 'Limit Town', state: 'TX', time_zone: 'America/Chicago' });
      const bar = await f.bar(town, { name: 'Counter' });
      // three events starting in the first hours of the city's local today, whatever TEST_CLOCK says
      const { rows } = await db.owner.query<{ start: Date }>(
        `select private.local_day_start(($1::timestamptz at time zone 'America/Chicago')::date, 'America/Chicago') as start`,
        [testNow()],
      );
      const at0 = (ms: number) => new Date(rows[0]!.start.getTime() + ms).toISOString();
      for (const h of [1, 2, 3])
        await f.event(bar, { title: `today ${h}`, start_at: at0(h * HOUR), end_at: at0((h + 1) * HOUR) });
      const at = (query: string) => get(app, `${P}/bars_by_city/TX/Limit%20Town${query}`);
      const all = (await at('')).body;
      expect(all.events_today).toHaveLength(3);
      expect(all.events_today_total).toBe(3);
      const two = (await at('?events_today_limit=2')).body;
      expect(two.events_today).toEqual(all.events_today.slice(0, 2));
      expect(two.events_today_total).toBe(3);
      expect((await at('?events_today_limit=1000')).body.events_today).toHaveLength(3);
      for (const bad of ['0', '1001', 'x', '2.5']) {
        const res = await at(`?events_today_limit=${bad}`);
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('events_today_limit must be an integer between 1 and 1000');
      }
    });

    test('group_slug narrows bars, busiest_bars and events_today; an unknown slug matches nothing', async () => {
      const body = await page('?group_slug=downtown');
      expect(body.bars.map((b: { name: string }) => b.name)).toEqual(['Bravo', 'Delta', 'Foxtrot']);
      expect(body.busiest_bars.map((b: { name: string }) => b.name)).toEqual(['Bravo', 'Delta']);
      expect(body.pagination.total_count).toBe(3);
      const none = await page('?group_slug=nowhere');
      expect(none.bars).toEqual([]);
      expect(none.busiest_bars).toEqual([]);
      expect(none.pagination).toEqual({ current_page: 1, total_pages: 0, total_count: 0, per_page: 20 });
    });
  });

  describe('events', () => {
    const titles = (body: { events: { title: string }[] }) => body.events.map((e) => e.title);
    let soonId: number;
    beforeAll(async () => {
      soonId = await f.event(bars.Alpha!, {
        title: 'soon',
        classification: 'trivia',
        start_at: iso(HOUR),
        end_at: iso(2 * HOUR),
        description: 'quiz',
      });
      await f.event(bars.Bravo!, {
        title: 'in a week',
        classification: 'dj',
        start_at: iso(7 * 24 * HOUR),
        end_at: iso(7 * 24 * HOUR + HOUR),
      });
      await f.event(bars.Bravo!, {
        title: 'in 40 days',
        classification: 'dj',
        start_at: iso(40 * 24 * HOUR),
        end_at: iso(40 * 24 * HOUR + HOUR),
      });
      await f.event(bars.Alpha!, {
        title: 'two days ago',
        classification: 'comedy',
        start_at: iso(-48 * HOUR),
        end_at: iso(-47 * HOUR),
      });
      for (let i = 1; i <= 4; i++) {
        await f.event(bars.Echo!, {
          title: `series ${i}`,
          classification: 'karaoke',
          start_at: `2030-01-0${i}T20:00:00Z`,
          end_at: `2030-01-0${i}T22:00:00Z`,
        });
      }
    });

    test('the default window is today .. 30 days after today, by start_at', async () => {
      expect(titles((await get(app, `${P}/events/TX/Austin`)).body)).toEqual(['soon', 'in a week']);
    });

    test('the full event form', async () => {
      const res = await get(app, `${P}/events/TX/Austin?classification=trivia`);
      expect(res.body.events).toEqual([
        {
          id: String(soonId),
          title: 'soon',
          description: 'quiz',
          classification: 'trivia',
          start_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
          end_at: expect.stringMatching(/Z$/),
          created_at: expect.stringMatching(/Z$/),
          bar: {
            id: String(bars.Alpha),
            name: 'Alpha',
            address: '1 Main St',
            city: 'Austin',
            state: 'TX',
            latitude: 30,
            longitude: -97,
            profile_picture_url: null,
          },
        },
      ]);
      expect(res.body.pagination).toEqual({ current_page: 1, total_pages: 1, total_count: 1, per_page: 20 });
    });

    test('explicit dates, classification, group_slug', async () => {
      expect(titles((await get(app, `${P}/events/TX/Austin?start_date=2030-01-02&end_date=2030-01-03`)).body)).toEqual([
        'series 2',
        'series 3',
      ]);
      expect(
        titles(
          (await get(app, `${P}/events/TX/Austin?start_date=2030-01-02T20:00:00Z&end_date=2030-01-03T20:00:00Z`)).body,
        ),
      ).toEqual(['series 2', 'series 3']);
      expect(
        titles(
          (await get(app, `${P}/events/TX/Austin?start_date=2030-01-02T20:00:01Z&end_date=2030-01-03T19:59:59Z`)).body,
        ),
      ).toEqual([]);
      const later = `start_date=${iso(-72 * HOUR).slice(0, 10)}&end_date=${iso(60 * 24 * HOUR).slice(0, 10)}`;
      expect(titles((await get(app, `${P}/events/TX/Austin?${later}&classification=dj`)).body)).toEqual([
        'in a week',
        'in 40 days',
      ]);
      expect(titles((await get(app, `${P}/events/TX/Austin?${later}&group_slug=downtown`)).body)).toEqual([
        'in a week',
        'in 40 days',
      ]);
      expect(titles((await get(app, `${P}/events/TX/Austin?${later}&group_slug=unknown`)).body)).toEqual([]);
    });

    test('pagination of events: exact multiple, last page, past the end', async () => {
      const q = `${P}/events/TX/Austin?start_date=2030-01-01&end_date=2030-01-31&per_page=2`;
      const p1 = (await get(app, q)).body;
      expect(titles(p1)).toEqual(['series 1', 'series 2']);
      expect(p1.pagination).toEqual({ current_page: 1, total_pages: 2, total_count: 4, per_page: 2 });
      expect(titles((await get(app, `${q}&page=2`)).body)).toEqual(['series 3', 'series 4']);
      const p3 = (await get(app, `${q}&page=3`)).body;
      expect(p3).toEqual({ events: [], pagination: { current_page: 3, total_pages: 2, total_count: 4, per_page: 2 } });
    });
  });

  describe('posts and feed', () => {
    let users: number[];
    beforeAll(async () => {
      users = [await f.user('alice'), await f.user('bob')];
      await f.post(bars.Alpha!, users[0]!, 'an hour ago', iso(-HOUR), [
        'https://m.example/2.jpg',
        'https://m.example/1.jpg',
      ]);
      await f.post(bars.Bravo!, users[1]!, 'yesterday', iso(-24 * HOUR));
      await f.post(bars.Delta!, users[0]!, 'ten days ago', iso(-10 * 24 * HOUR));
      await f.post(bars.Alpha!, users[1]!, 'forty days ago', iso(-40 * 24 * HOUR));
    });

    test('posts: default window is the last 30 days, newest first, the post form', async () => {
      const res = await get(app, `${P}/posts/TX/Austin`);
      expect(res.body.posts.map((p: { text: string }) => p.text)).toEqual(['an hour ago', 'yesterday', 'ten days ago']);
      expect(res.body.posts[0]).toEqual({
        id: expect.stringMatching(/^\d+$/),
        text: 'an hour ago',
        created_at: expect.stringMatching(/Z$/),
        bar: {
          id: String(bars.Alpha),
          name: 'Alpha',
          address: '1 Main St',
          city: 'Austin',
          state: 'TX',
          latitude: 30,
          longitude: -97,
          profile_picture_url: null,
        },
      });
      expect(res.body.pagination).toEqual({ current_page: 1, total_pages: 1, total_count: 3, per_page: 20 });
    });

    test('posts: dates filter created_at; group_slug; pages', async () => {
      const wide = `start_date=${iso(-50 * 24 * HOUR).slice(0, 10)}`;
      expect((await get(app, `${P}/posts/TX/Austin?${wide}`)).body.pagination.total_count).toBe(4);
      expect(
        (await get(app, `${P}/posts/TX/Austin?${wide}&group_slug=downtown`)).body.posts.map(
          (p: { text: string }) => p.text,
        ),
      ).toEqual(['yesterday', 'ten days ago']);
      const p2 = (await get(app, `${P}/posts/TX/Austin?${wide}&per_page=3&page=2`)).body;
      expect(p2.posts.map((p: { text: string }) => p.text)).toEqual(['forty days ago']);
      expect(p2.pagination).toEqual({ current_page: 2, total_pages: 2, total_count: 4, per_page: 3 });
    });

    test('feed: posts newest first and paged; events upcoming, always their first page', async () => {
      const res = await get(app, `${P}/feed/TX/Austin?per_page=2`);
      const body = res.body;
      expect(body.city).toEqual({ name: 'Austin', state: 'TX' });
      expect(body.posts.map((p: { content: string }) => p.content)).toEqual(['an hour ago', 'yesterday']);
      expect(body.posts[0]).toEqual({
        id: expect.stringMatching(/^\d+$/),
        content: 'an hour ago',
        created_at: expect.stringMatching(/Z$/),
        user: { id: String(users[0]), username: 'alice' },
        bar: { id: String(bars.Alpha), name: 'Alpha' },
        media: [{ url: 'https://m.example/2.jpg' }, { url: 'https://m.example/1.jpg' }],
      });
      expect(body.events.map((e: { name: string }) => e.name)).toEqual(['soon', 'in a week']);
      expect(body.events[0]).toEqual({
        id: expect.stringMatching(/^\d+$/),
        name: 'soon',
        description: 'quiz',
        start_at: expect.stringMatching(/Z$/),
        end_at: expect.stringMatching(/Z$/),
        bar: { id: String(bars.Alpha), name: 'Alpha' },
      });
      expect(body.posts_pagination).toEqual({ current_page: 1, total_pages: 2, total_count: 4, per_page: 2 });
      expect(body.events_pagination).toEqual({ current_page: 1, total_pages: 4, total_count: 7, per_page: 2 });

      const page2 = (await get(app, `${P}/feed/TX/Austin?per_page=2&page=2`)).body;
      expect(page2.posts.map((p: { content: string }) => p.content)).toEqual(['ten days ago', 'forty days ago']);
      expect(page2.events.map((e: { name: string }) => e.name)).toEqual(['soon', 'in a week']);
      expect(page2.posts_pagination.current_page).toBe(2);
      expect(page2.events_pagination.current_page).toBe(1);
    });

    test('feed of an empty city', async () => {
      const res = await get(app, `${P}/feed/TX/Empty%20Town`);
      expect(res.body).toEqual({
        city: { name: 'Empty Town', state: 'TX' },
        posts: [],
        events: [],
        posts_pagination: { current_page: 1, total_pages: 0, total_count: 0, per_page: 20 },
        events_pagination: { current_page: 1, total_pages: 0, total_count: 0, per_page: 20 },
      });
    });
  });
});
