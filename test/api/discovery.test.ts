/**
 * Discovery (decisions.md v1.1): GET categories, GET cities (state, accent-
 * insensitive q prefix, paging, most bars first), GET groups/:state/:city.
 */
import type { Express } from 'express';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures, type Fixtures } from '../support/fixtures';
import { get } from '../support/openapi';
import { buildApp } from '../support/partner-app';

describe('discovery: categories, cities, groups', () => {
  let db: TestDatabase;
  let f: Fixtures;
  let app: Express;
  const bars: number[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    f = fixtures(db.owner);
    const austin = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    const canon = await f.city({ name: 'Cañon City', state: 'CO', time_zone: 'America/Denver' });
    const denver = await f.city({ name: 'Denver', state: 'CO', time_zone: 'America/Denver' });
    await f.city({ name: 'Canton', state: 'OH', time_zone: 'America/New_York' }); // no bars
    for (let i = 0; i < 3; i++) bars.push(await f.bar(austin, { name: `Austin ${i}` }));
    for (let i = 0; i < 2; i++) bars.push(await f.bar(denver, { name: `Denver ${i}` }));
    bars.push(await f.bar(canon, { name: 'Canon 0' }));
    const pub = await f.category('Pub', 'pub');
    const dive = await f.category('Dive Bar', 'dive-bar');
    await f.category('Wine Bar', 'wine-bar'); // no bars
    await f.barCategory(bars[0]!, pub, true);
    await f.barCategory(bars[1]!, pub, true);
    await f.barCategory(bars[1]!, dive);
    await f.barCategory(bars[3]!, dive, true);
    await f.group(austin, 'downtown', [bars[0]!, bars[1]!]);
    await f.group(austin, 'east-side', [bars[2]!]);
    await f.group(austin, 'empty', []);
    ({ app } = buildApp(db.partnerPool()));
  });
  afterAll(() => db.drop());

  describe('GET categories', () => {
    test('every category by name with its bar count', async () => {
      const res = await get(app, `${P}/categories`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        categories: [
          { name: 'Dive Bar', slug: 'dive-bar', bar_count: 2 },
          { name: 'Pub', slug: 'pub', bar_count: 2 },
          { name: 'Wine Bar', slug: 'wine-bar', bar_count: 0 },
        ],
      });
    });

    test('counts follow inserts, deletes and updates of bar_categories', async () => {
      const wine = (await db.owner.query<{ id: string }>("select id from private.categories where slug = 'wine-bar'"))
        .rows[0]!.id;
      await db.owner.query('insert into private.bar_categories (bar_id, category_id) values ($1, $2), ($3, $2)', [
        bars[4],
        wine,
        bars[5],
      ]);
      await db.owner.query('delete from private.bar_categories where bar_id = $1 and category_id <> $2', [
        bars[1],
        wine,
      ]);
      const count = async (slug: string) =>
        ((await get(app, `${P}/categories`)).body.categories as { slug: string; bar_count: number }[]).find(
          (c) => c.slug === slug,
        )!.bar_count;
      expect(await count('wine-bar')).toBe(2);
      expect(await count('pub')).toBe(1);
      expect(await count('dive-bar')).toBe(1);
      await db.owner.query(
        "update private.bar_categories set category_id = $1 where bar_id = $2 and category_id = (select id from private.categories where slug = 'pub')",
        [wine, bars[0]],
      );
      expect(await count('wine-bar')).toBe(3);
      expect(await count('pub')).toBe(0);
    });
  });

  describe('GET cities', () => {
    const cities = async (qs = '') => {
      const res = await get(app, `${P}/cities${qs}`);
      expect(res.status).toBe(200);
      return res.body as {
        cities: { name: string; state: string; bar_count: number; time_zone: string }[];
        pagination: Record<string, number>;
      };
    };

    test('most bars first, then name; every field', async () => {
      const body = await cities();
      expect(body.cities.map((c) => [c.name, c.bar_count])).toEqual([
        ['Austin', 3],
        ['Denver', 2],
        ['Cañon City', 1],
        ['Canton', 0],
      ]);
      expect(body.cities[0]).toEqual({
        name: 'Austin',
        state: 'TX',
        time_zone: 'America/Chicago',
        latitude: 30,
        longitude: -97,
        bar_count: 3,
      });
      expect(body.pagination).toEqual({ current_page: 1, total_pages: 1, total_count: 4, per_page: 20 });
    });

    test('state (case-insensitive) and an accent-insensitive name prefix', async () => {
      expect((await cities('?state=co')).cities.map((c) => c.name)).toEqual(['Denver', 'Cañon City']);
      expect((await cities('?q=canon')).cities.map((c) => c.name)).toEqual(['Cañon City']);
      expect((await cities('?q=CAN')).cities.map((c) => c.name)).toEqual(['Cañon City', 'Canton']);
      expect((await cities('?q=can&state=OH')).cities.map((c) => c.name)).toEqual(['Canton']);
      expect((await cities('?q=ustin')).cities).toEqual([]); // a prefix, not a substring
      expect((await cities('?q=%25')).cities).toEqual([]); // LIKE wildcards are literal
      expect((await cities('?state=ZZ')).pagination.total_count).toBe(0);
    });

    test('pages', async () => {
      const body = await cities('?per_page=3&page=2');
      expect(body.cities.map((c) => c.name)).toEqual(['Canton']);
      expect(body.pagination).toEqual({ current_page: 2, total_pages: 2, total_count: 4, per_page: 3 });
    });

    test.each([
      ['state=Texas', 'state must be a two-letter state abbreviation'],
      ['q=%20', 'q must not be blank'],
      ['per_page=101', 'per_page must be an integer between 1 and 100'],
      ['name=Austin', 'unknown parameter "name"; cities accepts state, q, page, per_page'],
    ])('%s is a 400: %s', async (qs, message) => {
      const res = await get(app, `${P}/cities?${qs}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe(message);
    });
  });

  describe('GET groups/:state/:city', () => {
    test('the groups of a city by name with bar counts', async () => {
      const res = await get(app, `${P}/groups/tx/austin`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        city: { name: 'Austin', state: 'TX' },
        groups: [
          { name: 'downtown', slug: 'downtown', bar_count: 2 },
          { name: 'east-side', slug: 'east-side', bar_count: 1 },
          { name: 'empty', slug: 'empty', bar_count: 0 },
        ],
      });
    });

    test('a city without groups: an empty list; an unknown city: 404', async () => {
      expect((await get(app, `${P}/groups/CO/Denver`)).body.groups).toEqual([]);
      const missing = await get(app, `${P}/groups/NY/New%20York`);
      expect(missing.status).toBe(404);
      expect(missing.body.error).toBe('City not found');
    });

    test('an unknown group_slug stays a 200 with an empty list', async () => {
      const res = await get(app, `${P}/bars_by_city/TX/Austin?group_slug=nope`);
      expect(res.status).toBe(200);
      expect(res.body.bars).toEqual([]);
    });
  });
});
