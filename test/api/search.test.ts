/**
 * Search: bars and cities ranked together by relevance (exact, prefix, word,
 * trigram), ties by distance (with a position) or popularity; distances in
 * miles rounded to 2 decimals; GeoJSON locations; pagination; accent-, case-
 * and apostrophe-insensitive matching; `type`; the 1,000-match cap.
 */
import type { Express } from 'express';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { get } from '../support/openapi';
import { buildApp } from '../support/partner-app';

const METERS_PER_DEGREE = (6378168 * Math.PI) / 180;
const northOf = (latitude: number, miles: number) => latitude + (miles * 1609.344) / METERS_PER_DEGREE;

interface Result {
  type: string;
  id: string;
  name: string;
  distance: number | null;
  location: { type: string; coordinates: number[] };
}

describe('GET search', () => {
  let db: TestDatabase;
  let app: Express;
  const ids: Record<string, number> = {};
  const here = { latitude: 40, longitude: -100 };

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    // Cities far from `here`; the bars are near it.
    ids.austinCity = await f.city({
      name: 'Austin',
      state: 'TX',
      time_zone: 'America/Chicago',
      latitude: 30.27,
      longitude: -97.74,
      population: 950000,
    });
    ids.tapton = await f.city({
      name: 'Tapton',
      state: 'KS',
      time_zone: 'America/Chicago',
      latitude: 38,
      longitude: -98,
      population: 500,
    });
    const near = (miles: number) => ({ latitude: northOf(here.latitude, miles), longitude: here.longitude });
    ids.tapPopular = await f.bar(ids.tapton, { name: 'Tap', google_ratings_total: 900, ...near(5) });
    ids.tapNear = await f.bar(ids.tapton, { name: 'TAP', google_ratings_total: 10, ...near(0.5) });
    ids.tapestry = await f.bar(ids.tapton, { name: 'Tapestry Lounge', google_ratings_total: 5, ...near(1.2345) });
    ids.tapRoom = await f.bar(ids.tapton, { name: 'The Tap Room', google_ratings_total: 5000, ...near(2) });
    ids.zebra = await f.bar(ids.tapton, { name: 'Zebra Lounge', google_ratings_total: 7000, ...near(0.1) });
    ids.austinBar = await f.bar(ids.tapton, {
      name: 'Austin',
      google_ratings_total: 100,
      profile_picture_url: 'https://img.example/a.jpg',
      price_level: 3,
      ...near(3),
    });
    ids.austinAle = await f.bar(ids.tapton, { name: 'Austin Ale House', google_ratings_total: 50000, ...near(4) });
    ids.fifty = await f.bar(ids.tapton, { name: '50% Off', ...near(6) });
    ids.fiveHundred = await f.bar(ids.tapton, { name: '500 Club', ...near(7) });
    ({ app } = buildApp(db.partnerPool()));
  });
  afterAll(() => db.drop());

  const search = async (
    query: string,
  ): Promise<{ results: Result[]; pagination: Record<string, number>; total_count_capped: boolean }> => {
    const res = await get(app, `${P}/search?${query}`);
    expect(res.status).toBe(200);
    return res.body;
  };
  const names = async (query: string) => (await search(query)).results.map((r) => `${r.type}:${r.name}`);

  test('exact, then prefix, then word match; equal exact matches by popularity without a position', async () => {
    expect(await names('q=tap')).toEqual([
      'bar:Tap',
      'bar:TAP',
      'city:Tapton, KS',
      'bar:Tapestry Lounge',
      'bar:The Tap Room',
    ]);
  });

  test('with a position, equal relevance is nearer first, and distances are miles rounded to 2 decimals', async () => {
    const { results } = await search(`q=tap&latitude=${here.latitude}&longitude=${here.longitude}`);
    expect(results.map((r) => `${r.type}:${r.name}`)).toEqual([
      'bar:TAP',
      'bar:Tap',
      'bar:Tapestry Lounge',
      'city:Tapton, KS',
      'bar:The Tap Room',
    ]);
    expect(results.map((r) => r.distance)).toEqual([0.5, 5, 1.23, expect.any(Number), 2]);
  });

  test('bars and cities ranked together: the same exact name, popularity or distance decides', async () => {
    expect(await names('q=austin')).toEqual(['city:Austin, TX', 'bar:Austin', 'bar:Austin Ale House']);
    expect(await names(`q=austin&latitude=${here.latitude}&longitude=${here.longitude}`)).toEqual([
      'bar:Austin',
      'city:Austin, TX',
      'bar:Austin Ale House',
    ]);
  });

  test('a city matches as "<City>, <ST>" too, case-insensitively', async () => {
    expect((await names('q=AUSTIN,%20tx'))[0]).toBe('city:Austin, TX');
  });

  test('fuzzy: a misspelling finds by trigram similarity', async () => {
    expect(await names('q=austn')).toEqual(expect.arrayContaining(['city:Austin, TX', 'bar:Austin']));
    expect(await names('q=qqqqxx')).toEqual([]);
  });

  test('LIKE wildcards in q are literal', async () => {
    const found = await names('q=50%25');
    expect(found[0]).toBe('bar:50% Off');
    expect(await names('q=5_0')).not.toContain('bar:50% Off');
  });

  test('the result shapes: GeoJSON Point, null for what a city has not, distance null without a position', async () => {
    const { results } = await search('q=austin');
    expect(results[0]).toEqual({
      type: 'city',
      id: String(ids.austinCity),
      name: 'Austin, TX',
      address: null,
      state: 'TX',
      location: { type: 'Point', coordinates: [-97.74, 30.27] },
      price_level: null,
      distance: null,
      image_url: null,
    });
    expect(results[1]).toEqual({
      type: 'bar',
      id: String(ids.austinBar),
      name: 'Austin',
      address: '1 Main St',
      state: 'KS',
      location: { type: 'Point', coordinates: [here.longitude, northOf(here.latitude, 3)] },
      price_level: 3,
      distance: null,
      image_url: 'https://img.example/a.jpg',
    });
  });

  test('pagination: per_page, the last page, past the end, nothing found', async () => {
    const p2 = await search('q=tap&per_page=2&page=2');
    expect(p2.results.map((r) => r.name)).toEqual(['Tapton, KS', 'Tapestry Lounge']);
    expect(p2.pagination).toEqual({ current_page: 2, total_pages: 3, total_count: 5, per_page: 2 });
    expect(p2.total_count_capped).toBe(false);
    const p3 = await search('q=tap&per_page=2&page=3');
    expect(p3.results.map((r) => r.name)).toEqual(['The Tap Room']);
    const p4 = await search('q=tap&per_page=2&page=4');
    expect(p4).toEqual({
      results: [],
      pagination: { current_page: 4, total_pages: 3, total_count: 5, per_page: 2 },
      total_count_capped: false,
    });
    expect(await search('q=nothing-like-it')).toEqual({
      results: [],
      pagination: { current_page: 1, total_pages: 0, total_count: 0, per_page: 20 },
      total_count_capped: false,
    });
  });

  test('the ranking is in SQL: api.search called directly', async () => {
    const { rows } = await db.owner.query<{ body: { results: Result[] } }>(
      "select api.search('tap', p_per_page => 2) as body",
    );
    expect(rows[0]!.body.results.map((r) => r.name)).toEqual(['Tap', 'TAP']);
  });
});
