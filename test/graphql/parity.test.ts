/**
 * One source of truth: for a sample of real requests of every REST endpoint,
 * the GraphQL field gives the same items in the same order (and a bar's
 * fields the same values), on seeded demo data.
 */
import request from 'supertest';
import { seedDemoData } from '../../db/seed';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { bearer, createPlan, issueKey } from '../support/partner';
import { gql, startGraphqlPartner, type GraphqlPartner } from './support';
import { testNow } from '../support/clock';
import { cursorOf } from '../../server/graphql/connection';

type J = Record<string, unknown>;
const ids = (items: unknown) => (items as { id: string }[]).map((i) => i.id);

describe('GraphQL and REST give the same items in the same order', () => {
  let db: TestDatabase;
  let partner: GraphqlPartner;
  let key: string;
  let city: { name: string; state: string; latitude: number; longitude: number };

  const rest = async (path: string): Promise<J> => {
    const res = await request(partner.app).get(`/api/v1/partner/${path}`).set(bearer(key));
    expect(res.status).toBe(200);
    return res.body as J;
  };
  const query = async (q: string, variables?: J): Promise<J> => {
    const res = await gql(partner.app, key, q, variables);
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    return res.body.data as J;
  };
  /** A connection's node ids at a path of the data. */
  const nodeIds = (data: J, ...path: string[]) => {
    let v: unknown = data;
    for (const p of path) v = (v as J)[p];
    return ids((v as { nodes: unknown }).nodes);
  };
  /** The cursor of the item at `position` (0-based) of a connection field, read from the server. */
  const cursorAt = async (field: string, position: number): Promise<string> => {
    const data = await query(`{ x: ${field.replace('FIRST', String(position + 1))} }`);
    let v: unknown = data.x;
    while (!(v as J).pageInfo) v = Object.values(v as J)[0];
    return (v as { pageInfo: { endCursor: string } }).pageInfo.endCursor;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    await seedDemoData(db.url, { bars: 300, seed: 11, now: testNow() });
    partner = await startGraphqlPartner(db);
    key = (await issueKey(db.owner, { plan: await createPlan(db.owner, null) })).apiKey;
    const cities = (await rest('cities?per_page=1')).cities as (typeof city)[];
    city = cities[0]!;
    // Non-empty by construction, whatever TEST_CLOCK says: a bar of the city (and so of GET bars' first
    // 30 open ones) open around the clock, for open_now and busiest_bars.
    const { rows } = await db.owner.query<{ id: string }>(
      `select b.id from private.bars b join private.cities c on c.id = b.city_id
       where c.name = $1 and c.state = $2 order by b.id limit 1`,
      [city.name, city.state],
    );
    const fx = fixtures(db.owner);
    await fx.alwaysOpen(Number(rows[0]!.id));
    // and three events starting in the first minutes of its local today, for a window of events today
    const { rows: day } = await db.owner.query<{ start: Date }>(
      `select private.local_day_start(($1::timestamptz at time zone c.time_zone)::date, c.time_zone) as start
       from private.cities c where c.name = $2 and c.state = $3`,
      [testNow(), city.name, city.state],
    );
    for (const minute of [1, 2, 3]) {
      const at = (m: number) => new Date(day[0]!.start.getTime() + m * 60_000).toISOString();
      await fx.event(Number(rows[0]!.id), { title: `early ${minute}`, start_at: at(minute), end_at: at(minute + 60) });
    }
  }, 120_000);
  afterAll(async () => {
    await partner?.close();
    await db?.drop();
  });

  test('bars: plain, by ids, category, radius, box and every filter (and the next window)', async () => {
    const { lat, lng } = { lat: city.latitude, lng: city.longitude };
    const category = ((await rest('categories')).categories as { slug: string }[])[0]!.slug;
    const sample = ids((await rest('bars?limit=7')).bars).reverse();
    const cases: [string, string][] = [
      ['limit=20', 'first: 20'],
      [`ids=${sample.join(',')}`, `first: 20, ids: ${JSON.stringify(sample)}`],
      [`category=${category}&limit=30`, `first: 30, category: "${category}"`],
      [
        `latitude=${lat}&longitude=${lng}&radius=30&limit=25`,
        `first: 25, near: {latitude: ${lat}, longitude: ${lng}, radiusMiles: 30}`,
      ],
      [`latitude=${lat}&longitude=${lng}&limit=15`, `first: 15, near: {latitude: ${lat}, longitude: ${lng}}`],
      [
        `corner1[latitude]=${lat - 1}&corner1[longitude]=${lng - 1}&corner2[latitude]=${lat + 1}&corner2[longitude]=${lng + 1}&limit=40`,
        `first: 40, box: {corner1: {latitude: ${lat - 1}, longitude: ${lng - 1}}, corner2: {latitude: ${lat + 1}, longitude: ${lng + 1}}}`,
      ],
      ['open_now=true&limit=30', 'first: 30, filters: {openNow: true}'],
      ['open_now=false&limit=30', 'first: 30, filters: {openNow: false}'],
      ['open_at=2026-11-28T23:30:00-05:00&limit=30', 'first: 30, filters: {openAt: "2026-11-28T23:30:00-05:00"}'],
      ['min_rating=4.2&price_level=2,3&limit=30', 'first: 30, filters: {minRating: 4.2, priceLevels: [2, 3]}'],
      ['status=closed,quiet&limit=30', 'first: 30, filters: {statuses: [closed, quiet]}'],
      [
        `latitude=${lat}&longitude=${lng}&radius=50&min_rating=3.5&limit=20`,
        `first: 20, near: {latitude: ${lat}, longitude: ${lng}, radiusMiles: 50}, filters: {minRating: 3.5}`,
      ],
    ];
    for (const [qs, args] of cases) {
      const r = ids((await rest(`bars?${qs}`)).bars);
      const g = nodeIds(await query(`{ bars(${args}) { nodes { id } } }`), 'bars');
      expect({ qs, ids: g }).toEqual({ qs, ids: r });
      expect({ qs, n: r.length > 0 }).toEqual({ qs, n: true }); // a comparison of something
    }
    // the next window: REST's items 10..29 after the cursor of item 9
    const after = await cursorAt('bars(first: FIRST) { pageInfo { endCursor } }', 9);
    const next = nodeIds(await query(`{ bars(first: 20, after: "${after}") { nodes { id } } }`), 'bars');
    expect(next).toEqual(ids((await rest('bars?limit=30')).bars).slice(10, 30));
  });

  /** Every field of GET bars/:id's object, as a GraphQL selection and mapped back to REST's names. */
  const BAR_FIELDS = `id name address city { name state } state zipCode latitude longitude phone website
    googleRating googleRatingsTotal primaryCategory { name slug } categories(first: 100) { nodes { name slug } }
    hours { monday { open close } tuesday { open close } wednesday { open close } thursday { open close }
            friday { open close } saturday { open close } sunday { open close } }
    profilePictureUrl photos(first: 100) { nodes { url } }
    occupancy { currentIntensity status hourly { hour intensity } } description priceLevel
    events(first: 100) { nodes { id name description startAt endAt } }`;
  const asRestBar = (g: J): J => {
    const occupancy = g.occupancy as J;
    return {
      id: g.id,
      name: g.name,
      address: g.address,
      city: (g.city as J).name,
      state: g.state,
      zip_code: g.zipCode,
      latitude: g.latitude,
      longitude: g.longitude,
      phone: g.phone,
      website: g.website,
      google_rating: g.googleRating,
      google_ratings_total: g.googleRatingsTotal,
      primary_category: g.primaryCategory,
      categories: (g.categories as J).nodes,
      hours: g.hours,
      profile_picture_url: g.profilePictureUrl,
      photos: (g.photos as J).nodes,
      occupancy: {
        current_intensity: occupancy.currentIntensity,
        status: occupancy.status,
        hourly_data: occupancy.hourly,
      },
      description: g.description,
      price_level: g.priceLevel,
      events: ((g.events as J).nodes as J[]).map((e) => ({
        id: e.id,
        name: e.name,
        description: e.description,
        start_at: e.startAt,
        end_at: e.endAt,
      })),
    };
  };

  test("bar: every field of GET bars/:id's object", async () => {
    const some = ids((await rest('bars?limit=100')).bars).filter((_, i) => i % 20 === 0);
    for (const id of some) {
      const r = (await rest(`bars/${id}`)).bar as J;
      const g = (await query(`{ bar(id: "${id}") { ${BAR_FIELDS} } }`)).bar as J;
      expect(asRestBar(g)).toEqual(r);
    }
  });

  test("a bar reached through a short form (busiest bars: id and name) has every field of GET bars/:id's object", async () => {
    const c = `city(state: "${city.state}", name: ${JSON.stringify(city.name)})`;
    const busiest = ((await query(`{ ${c} { busiestBars(first: 3) { nodes { bar { ${BAR_FIELDS} } } } } }`)).city as J)
      .busiestBars as J;
    const bars = (busiest.nodes as J[]).map((n) => n.bar as J);
    expect(bars.length).toBeGreaterThan(0); // a bar of the city is open around the clock (beforeAll)
    for (const g of bars) expect(asRestBar(g)).toEqual((await rest(`bars/${String(g.id)}`)).bar);
  });

  test("a city: bars_by_city's pages, group, filters, busiest bars, events today; groups", async () => {
    const path = `${encodeURIComponent(city.state)}/${encodeURIComponent(city.name)}`;
    const c = `city(state: "${city.state}", name: ${JSON.stringify(city.name)})`;
    const page1 = await rest(`bars_by_city/${path}?per_page=10`);
    const page2 = await rest(`bars_by_city/${path}?per_page=10&page=2`);
    const first = await query(
      `{ ${c} { bars(first: 10) { totalCount pageInfo { endCursor } nodes { id } } busiestBars(first: 100) { nodes { currentIntensity bar { id } } }
         eventsToday(first: 100) { nodes { id } } groups(first: 100) { nodes { slug name barCount } } } }`,
    );
    const gc = first.city as J;
    expect(nodeIds(gc, 'bars')).toEqual(ids(page1.bars));
    expect((gc.bars as J).totalCount).toBe((page1.pagination as J).total_count);
    const end = ((gc.bars as J).pageInfo as J).endCursor as string;
    expect(
      nodeIds(await query(`{ ${c} { bars(first: 10, after: "${end}") { nodes { id } } } }`), 'city', 'bars'),
    ).toEqual(ids(page2.bars));
    expect(
      ((gc.busiestBars as J).nodes as J[]).map((b) => ({ id: (b.bar as J).id, current_intensity: b.currentIntensity })),
    ).toEqual((page1.busiest_bars as J[]).map((b) => ({ id: b.id, current_intensity: b.current_intensity })));
    expect(nodeIds(gc, 'eventsToday')).toEqual(ids(page1.events_today));
    // a window of events today (api.graphql_city_highlights) against REST's list and total
    const todayTotal = page1.events_today_total as number;
    expect(todayTotal).toBe((page1.events_today as J[]).length);
    expect(todayTotal).toBeGreaterThan(2); // the window below is a real one
    const window = await query(
      `{ ${c} { eventsToday(first: 2, after: "${cursorOf(0)}") { totalCount nodes { id } } } }`,
    );
    expect(nodeIds(window, 'city', 'eventsToday')).toEqual(ids((page1.events_today as J[]).slice(1, 3)));
    expect(((window.city as J).eventsToday as J).totalCount).toBe(todayTotal);
    expect([ids(page2.bars).length, (page1.busiest_bars as J[]).length].every((n) => n > 0)).toBe(true);
    // an event reached through a short form (events today) has GET events' full-form fields
    const full = new Map(((await rest(`events/${path}?per_page=100`)).events as J[]).map((e) => [e.id, e]));
    const today = await query(`{ ${c} { eventsToday(first: 100) { nodes { id title classification createdAt } } } }`);
    const shortForms = ((today.city as J).eventsToday as { nodes: J[] }).nodes.filter((n) => full.has(n.id));
    expect(shortForms.length).toBeGreaterThan(0);
    for (const n of shortForms) {
      const f = full.get(n.id)!;
      expect(n).toEqual({ id: f.id, title: f.title, classification: f.classification, createdAt: f.created_at });
    }
    const groups = (await rest(`groups/${path}`)).groups as J[];
    expect((gc.groups as J).nodes).toEqual(groups.map((g) => ({ slug: g.slug, name: g.name, barCount: g.bar_count })));

    const slug = String(groups[0]!.slug);
    expect(
      nodeIds(await query(`{ ${c} { bars(first: 20, groupSlug: "${slug}") { nodes { id } } } }`), 'city', 'bars'),
    ).toEqual(ids((await rest(`bars_by_city/${path}?group_slug=${slug}`)).bars));
    expect(
      nodeIds(
        await query(`{ ${c} { bars(first: 20, filters: { openNow: false, minRating: 3 }) { nodes { id } } } }`),
        'city',
        'bars',
      ),
    ).toEqual(ids((await rest(`bars_by_city/${path}?open_now=false&min_rating=3`)).bars));
  });

  test('events, posts and the feed: pages, an unaligned window, classification and dates', async () => {
    const path = `${encodeURIComponent(city.state)}/${encodeURIComponent(city.name)}`;
    const args = `state: "${city.state}", city: ${JSON.stringify(city.name)}`;
    const restEvents = await rest(`events/${path}?per_page=10&page=1`);
    const restEvents2 = await rest(`events/${path}?per_page=10&page=2`);
    const all = [...ids(restEvents.events), ...ids(restEvents2.events)];
    const e = await query(`{ events(${args}, first: 10) { totalCount nodes { id } } }`);
    expect(nodeIds(e, 'events')).toEqual(all.slice(0, 10));
    expect((e.events as J).totalCount).toBe((restEvents.pagination as J).total_count);
    // items 4..13: two REST pages of 10 read for one window
    const after = await cursorAt(`events(${args}, first: FIRST) { pageInfo { endCursor } }`, 3);
    expect(
      nodeIds(await query(`{ events(${args}, first: 10, after: "${after}") { nodes { id } } }`), 'events'),
    ).toEqual(all.slice(4, 14));
    expect(
      nodeIds(
        await query(`{ events(${args}, first: 20, classification: trivia, endDate: "2027-03-01") { nodes { id } } }`),
        'events',
      ),
    ).toEqual(ids((await rest(`events/${path}?classification=trivia&end_date=2027-03-01&per_page=20`)).events));

    expect(all.slice(4, 14)).toHaveLength(10);
    const posts = await rest(`posts/${path}?per_page=7&page=3`);
    expect(ids(posts.posts)).toHaveLength(7);
    const pAfter = await cursorAt(`posts(${args}, first: FIRST) { pageInfo { endCursor } }`, 13);
    expect(nodeIds(await query(`{ posts(${args}, first: 7, after: "${pAfter}") { nodes { id } } }`), 'posts')).toEqual(
      ids(posts.posts),
    );

    const feed = await rest(`feed/${path}?per_page=5&page=2`);
    const f1 = await query(
      `{ feed(${args}) { posts(first: 5) { pageInfo { endCursor } } events(first: 5) { pageInfo { endCursor } } } }`,
    );
    const fp = (((f1.feed as J).posts as J).pageInfo as J).endCursor as string;
    const fe = (((f1.feed as J).events as J).pageInfo as J).endCursor as string;
    const f2 = await query(
      `{ feed(${args}) { city { name state } posts(first: 5, after: "${fp}") { totalCount nodes { id content user { id username } media { url } bar { id name } } }
         events(first: 5, after: "${fe}") { nodes { id } } } }`,
    );
    const gf = f2.feed as J;
    expect(gf.city).toEqual(feed.city);
    expect([(feed.posts as J[]).length, (feed.events as J[]).length]).toEqual([5, 5]);
    expect(
      ((gf.posts as J).nodes as J[]).map((p) => ({ ...p, bar: { id: (p.bar as J).id, name: (p.bar as J).name } })),
    ).toEqual(
      (feed.posts as J[]).map((p) => ({ id: p.id, content: p.content, user: p.user, media: p.media, bar: p.bar })),
    );
    expect((gf.posts as J).totalCount).toBe((feed.posts_pagination as J).total_count);
    expect(nodeIds(gf, 'events')).toEqual(ids(feed.events));
  });

  test('search: terms, near, type, a deep page, and the 1,000 cap', async () => {
    const word = String(((await rest('bars?limit=1')).bars as J[])[0]!.name)
      .split(' ')
      .pop()!;
    const cases: [string, string][] = [
      [`q=${encodeURIComponent(word)}&per_page=20`, `q: ${JSON.stringify(word)}, first: 20`],
      ['q=ba&per_page=20&page=2', 'q: "ba", first: 20, after: AFTER19'],
      [
        `q=bar&latitude=${city.latitude}&longitude=${city.longitude}&per_page=15`,
        `q: "bar", first: 15, near: {latitude: ${city.latitude}, longitude: ${city.longitude}}`,
      ],
      [
        `q=${encodeURIComponent(city.name.slice(0, 3))}&type=city&per_page=10`,
        `q: ${JSON.stringify(city.name.slice(0, 3))}, type: city, first: 10`,
      ],
    ];
    for (const [qs, rawArgs] of cases) {
      let args = rawArgs;
      if (args.includes('AFTER19'))
        args = args.replace(
          'AFTER19',
          `"${await cursorAt('search(q: "ba", first: FIRST) { pageInfo { endCursor } }', 19)}"`,
        );
      const r = (await rest(`search?${qs}`)).results as J[];
      const g = await query(`{ search(${args}) { nodes { type id name distance } } }`);
      expect({ qs, n: r.length > 0 }).toEqual({ qs, n: true });
      expect({ qs, items: (g.search as J).nodes }).toEqual({
        qs,
        items: r.map((x) => ({ type: x.type, id: x.id, name: x.name, distance: x.distance ?? null })),
      });
    }
    const beyond = await query(
      `{ search(q: "a", first: 5, after: "${Buffer.from('cursor:v1:999').toString('base64url')}") { nodes { id } pageInfo { hasNextPage } } }`,
    );
    expect(beyond.search).toEqual({ nodes: [], pageInfo: { hasNextPage: false } });
  });

  test('categories and cities', async () => {
    const cats = (await rest('categories')).categories as J[];
    const g = await query('{ categories(first: 100) { totalCount nodes { name slug barCount } } }');
    expect((g.categories as J).nodes).toEqual(cats.map((c) => ({ name: c.name, slug: c.slug, barCount: c.bar_count })));
    const counts = new Map<string, number>();
    for (const c of (await rest('cities?per_page=100')).cities as { state: string }[])
      counts.set(c.state, (counts.get(c.state) ?? 0) + 1);
    const state = [...counts].sort((a, b) => b[1] - a[1])[0]![0]; // the state with the most cities
    const cities = await rest(`cities?state=${state}&per_page=2&page=2`);
    const after = await cursorAt(`cities(state: "${state}", first: FIRST) { pageInfo { endCursor } }`, 1);
    const gc = await query(
      `{ cities(state: "${state}", first: 2, after: "${after}") { totalCount nodes { name state } } }`,
    );
    expect((gc.cities as J).nodes).toEqual((cities.cities as J[]).map((c) => ({ name: c.name, state: c.state })));
    expect((cities.cities as J[]).length).toBeGreaterThan(0);
    expect((gc.cities as J).totalCount).toBe((cities.pagination as J).total_count);
  });
});
