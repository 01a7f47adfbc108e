/**
 * Search, v1.1 additions (decisions.md "Additions in v1.1 → Search"): the
 * relevance tiers exact > name prefix > word > trigram, accent-, case- and
 * apostrophe-insensitive matching, `type=bar|city`, at most the 1,000 best
 * matches (`total_count` capped at 1,000 with `total_count_capped`, a page
 * starting past the 1,000th match is a 400), and accent-insensitive city paths.
 */
import type { Express } from 'express';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { get } from '../support/openapi';
import { buildApp } from '../support/partner-app';

interface Body {
  results: { type: string; id: string; name: string; distance: number | null }[];
  pagination: { current_page: number; total_pages: number; total_count: number; per_page: number };
  total_count_capped: boolean;
}

const CAP_MESSAGE = 'search results end at the 1,000th match; narrow q (or use GET bars filters)';

describe('GET search (v1.1)', () => {
  let db: TestDatabase;
  let app: Express;
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    ids.canonCity = await f.city({
      name: 'Cañon City',
      state: 'CO',
      time_zone: 'America/Denver',
      latitude: 38.44,
      longitude: -105.24,
      population: 16000,
    });
    ids.far = await f.city({
      name: 'Farville',
      state: 'ME',
      time_zone: 'America/New_York',
      latitude: 45,
      longitude: -69,
    });
    const c = ids.canonCity;
    // q=canon: one bar per tier; popularity runs against the tiers, so only the tier can explain the order.
    ids.exact = await f.bar(c, { name: 'Canon', google_ratings_total: 1 });
    ids.prefix = await f.bar(c, { name: 'Cañon Brewing', google_ratings_total: 5 });
    ids.word = await f.bar(c, { name: 'Old Cañon Saloon', google_ratings_total: 500 });
    ids.fuzzy = await f.bar(c, { name: 'Canyon Club', google_ratings_total: 100000 });
    ids.osaka = await f.bar(c, { name: 'Café Ōsaka', google_ratings_total: 3 });
    ids.oreilly = await f.bar(c, { name: 'O’Reilly’s Pub', google_ratings_total: 3 });
    ids.senor = await f.bar(c, { name: "Señor Frog's", google_ratings_total: 3 });
    // 1,205 "Capped Bar N" (popularity N, further north with N) and 1,001 "Edge Bar N" in Farville. The
    // Capped bars in a shuffled order: cube's GiST (bars_geo) degenerates on collinear points inserted in order.
    await db.owner.query(
      `insert into private.bars (city_id, name, address, latitude, longitude, google_ratings_total)
       select $1::bigint, 'Capped Bar ' || g, '1 Main St', 45 + g / 10000.0, -69, g
       from (select g from generate_series(1, 1205) g order by g * 7919 % 1213) s
       union all
       select $1::bigint, 'Edge Bar ' || g, '1 Main St', 45, -69, g from generate_series(1, 1001) g`,
      [ids.far],
    );
    ({ app } = buildApp(db.partnerPool()));
  });
  afterAll(() => db.drop());

  const search = async (query: string): Promise<Body> => {
    const res = await get(app, `${P}/search?${query}`);
    expect(res.status).toBe(200);
    return res.body as Body;
  };
  const names = async (query: string) => (await search(query)).results.map((r) => `${r.type}:${r.name}`);
  const status = async (query: string) => {
    const res = await get(app, `${P}/search?${query}`);
    return { status: res.status, error: (res.body as { error?: string }).error };
  };

  test('tiers: exact name, then name prefix, then a later word, then trigram similarity, whatever the popularity', async () => {
    expect(await names('q=canon')).toEqual([
      'bar:Canon',
      'city:Cañon City, CO', // prefix tier: the city (16,000 people) before the bar (5 ratings)
      'bar:Cañon Brewing',
      'bar:Old Cañon Saloon',
      'bar:Canyon Club',
    ]);
  });

  test('trigram tier: typos find bars and cities; type=city searches city names only', async () => {
    // 2,206 bar names share trigrams with these; the city's key is scored on its own
    expect(await names('q=farvile&type=city')).toEqual(['city:Farville, ME']);
    expect(await names('q=farvile%2C%20me&type=city')).toEqual(['city:Farville, ME']);
    expect((await names('q=canyon%20clb&type=bar'))[0]).toBe('bar:Canyon Club');
    // a whole name with a letter dropped: the name (word similarity >= 0.6) before weaker ones
    const typo = await search('q=capped%20br%201205&per_page=5');
    expect(typo.results[0]!.name).toBe('Capped Bar 1205');
    expect(typo.total_count_capped).toBe(false);
  });

  test('trigram tier through the words of the names: frequent words, rare words, carriers', async () => {
    // "capped" and "bar" are in 1,205 and 2,206 names, "1205" in one: a typo of both frequent words
    // reaches the name through its rare word
    expect((await names('q=caped%20bar%201205&type=bar'))[0]).toBe('bar:Capped Bar 1205');
    // a word holding 60% of q's trigrams alone ("capped" for "cappedd"): 100 of its names, and the
    // names nearest q; all 1,205 qualify, the count is the budget's (docs/API-NOTES.md › Search)
    const carrier = await search('q=cappedd&per_page=100');
    expect(carrier.results.every((r) => r.name.startsWith('Capped Bar '))).toBe(true);
    expect(carrier.pagination.total_count).toBeGreaterThanOrEqual(100);
    expect(carrier.pagination.total_count).toBeLessThanOrEqual(200);
    expect(carrier.total_count_capped).toBe(false);
    // nothing similar: nothing found
    expect((await search('q=zzqqxxjj')).pagination.total_count).toBe(0);
  });

  test('accents, case and apostrophes do not matter, in q or in the names', async () => {
    expect(await names('q=CAÑON')).toEqual(await names('q=canon'));
    expect((await names('q=cafe%20osaka'))[0]).toBe('bar:Café Ōsaka');
    expect((await names('q=ōsaka'))[0]).toBe('bar:Café Ōsaka');
    expect((await names('q=CAFÉ'))[0]).toBe('bar:Café Ōsaka');
    for (const q of ['oreillys', "o'reilly's", 'O%E2%80%99Reilly', "O'REILLY%E2%80%99S%20PUB"]) {
      expect((await names(`q=${encodeURIComponent(decodeURIComponent(q))}`))[0]).toBe('bar:O’Reilly’s Pub');
    }
    expect((await names('q=senor%20frogs'))[0]).toBe("bar:Señor Frog's");
    expect((await names('q=canon%20city,%20co'))[0]).toBe('city:Cañon City, CO');
  });

  test('type=bar and type=city restrict the results; other values are a 400', async () => {
    expect(await names('q=canon&type=city')).toEqual(['city:Cañon City, CO']);
    expect(await names('q=canon&type=bar')).toEqual([
      'bar:Canon',
      'bar:Cañon Brewing',
      'bar:Old Cañon Saloon',
      'bar:Canyon Club',
    ]);
    for (const bad of ['pub', 'BAR', '', 'bar,city']) {
      const res = await status(`q=canon&type=${encodeURIComponent(bad)}`);
      expect(res.status).toBe(400);
      expect(res.error).toMatch(/type/);
    }
  });

  test('at most the 1,000 best matches: total_count 1,000 and total_count_capped beyond, most popular first', async () => {
    const first = await search('q=capped');
    expect(first.pagination).toEqual({ current_page: 1, total_pages: 50, total_count: 1000, per_page: 20 });
    expect(first.total_count_capped).toBe(true);
    expect(first.results[0]!.name).toBe('Capped Bar 1205');
    const last = await search('q=capped&page=50');
    expect(last.results).toHaveLength(20);
    expect(last.results[19]!.name).toBe('Capped Bar 206'); // the 1,000th most popular
    const deep = await search('q=capped%20bar&page=10&per_page=100');
    expect(deep.results.map((r) => r.name)).toEqual(Array.from({ length: 100 }, (_, i) => `Capped Bar ${305 - i}`));
    // with a position: nearest first (the bars are further north as N grows)
    const near = await search('q=capped&latitude=45&longitude=-69&page=50');
    expect(near.results[19]!.name).toBe('Capped Bar 1000');
    expect(near.total_count_capped).toBe(true);
    // under the cap: the 317 name-prefix matches (1, 10-19, 100-199, 1000-1205) come first, then trigram ones
    const few = await search('q=capped%20bar%201&per_page=100&page=4');
    expect(few.total_count_capped).toBe(false);
    expect(few.pagination.total_count).toBeGreaterThan(317);
    expect(few.pagination.total_count).toBeLessThan(1000);
    expect(few.results.slice(0, 17).every((r) => r.name.startsWith('Capped Bar 1'))).toBe(true);
    expect(few.results[17]!.name.startsWith('Capped Bar 1')).toBe(false);
  });

  test('total_count_capped on both sides of 1,000: 1,001 matches, then exactly 1,000', async () => {
    const over = await search('q=edge&type=bar');
    expect(over.pagination.total_count).toBe(1000);
    expect(over.total_count_capped).toBe(true);
    await db.owner.query("delete from private.bars where name = 'Edge Bar 1'");
    const at = await search('q=edge&type=bar');
    expect(at.pagination.total_count).toBe(1000);
    expect(at.total_count_capped).toBe(false);
    expect(at.pagination.total_pages).toBe(50);
  });

  test('pages agree with each other and with total_count, shallow or deep, with or without a position', async () => {
    // total_count is counted apart from the page, and each page reads the tiers only as far as it reaches
    const all = async (query: string, perPage: number) => {
      const first = await search(`${query}&per_page=${perPage}`);
      const ids = first.results.map((r) => `${r.type}:${r.id}`);
      for (let page = 2; page <= first.pagination.total_pages; page++) {
        ids.push(
          ...(await search(`${query}&per_page=${perPage}&page=${page}`)).results.map((r) => `${r.type}:${r.id}`),
        );
      }
      return { ids, total: first.pagination.total_count };
    };
    for (const query of [
      'q=capped%20bar%201',
      'q=capped%20bar%201&latitude=45.05&longitude=-69',
      'q=ca',
      'q=c&type=city',
    ]) {
      const big = await all(query, 100);
      const small = await all(query, 20);
      expect({ query, n: big.ids.length }).toEqual({ query, n: big.total });
      expect(new Set(big.ids).size).toBe(big.ids.length);
      expect({ query, ids: small.ids }).toEqual({ query, ids: big.ids });
    }
    // beyond the cap: the last page of 20 is the end of the last page of 100, nearest first or most popular first
    for (const query of ['q=bar', 'q=bar&latitude=45.1&longitude=-69', 'q=b']) {
      const deep = await search(`${query}&page=10&per_page=100`);
      const last = await search(`${query}&page=50&per_page=20`);
      expect(deep.pagination.total_count).toBe(1000);
      expect({ query, ids: last.results.map((r) => r.id) }).toEqual({
        query,
        ids: deep.results.slice(80).map((r) => r.id),
      });
    }
  });

  test('a page that starts past the 1,000th match is a 400 with the decided message', async () => {
    expect((await search('q=capped&page=50&per_page=20')).results).toHaveLength(20); // results 981-1000
    for (const q of ['q=capped&page=51', 'q=capped&page=11&per_page=100', 'q=nothing-like-it&page=101&per_page=10']) {
      expect(await status(q)).toEqual({ status: 400, error: CAP_MESSAGE });
    }
    // and in SQL, whoever calls it
    await expect(db.owner.query("select api.search('capped', p_page => 11, p_per_page => 100)")).rejects.toMatchObject({
      code: 'PT400',
      message: CAP_MESSAGE,
    });
  });

  test('city path segments match accent-insensitively on every city endpoint', async () => {
    for (const path of ['bars_by_city', 'events', 'posts', 'feed']) {
      for (const city of ['CO/canon%20city', 'co/CAÑON%20CITY', 'CO/Ca%C3%B1on%20City']) {
        const res = await get(app, `${P}/${path}/${city}`);
        expect({ path, city, status: res.status }).toEqual({ path, city, status: 200 });
      }
      expect((await get(app, `${P}/${path}/CO/canyon%20city`)).status).toBe(404);
    }
    const body = (await get(app, `${P}/bars_by_city/CO/canon%20city`)).body as { city: { name: string } };
    expect(body.city.name).toBe('Cañon City');
  });
});
