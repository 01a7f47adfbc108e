/**
 * GET bars (ids, category, radius, nearest-first, bounding box, limit, order)
 * and GET bars/:id (the detail shape).
 */
import type { Express } from 'express';
import request from 'supertest';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures, type Fixtures } from '../support/fixtures';
import { call, get } from '../support/openapi';
import { buildApp } from '../support/partner-app';
import { testNow } from '../support/clock';

// earthdistance's sphere: earth() = 6378168 m; 1 mile = 1609.344 m.
const METERS_PER_DEGREE = (6378168 * Math.PI) / 180;
const northOf = (latitude: number, miles: number) => latitude + (miles * 1609.344) / METERS_PER_DEGREE;

describe('GET bars and bars/:id', () => {
  let db: TestDatabase;
  let f: Fixtures;
  let app: Express;
  const center = { latitude: 30.25, longitude: -97.75 };
  const ids: Record<string, number> = {};
  const names = async (query: string) => {
    const res = await get(app, `${P}/bars${query}`);
    expect(res.status).toBe(200);
    return (res.body.bars as { name: string }[]).map((b) => b.name);
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    f = fixtures(db.owner);
    const austin = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago', ...center });
    const at = (miles: number) => ({ latitude: northOf(center.latitude, miles), longitude: center.longitude });
    ids.inside = await f.bar(austin, { name: 'Inside 0.999', ...at(0.999) });
    ids.outside = await f.bar(austin, { name: 'Outside 1.001', ...at(1.001) });
    ids.center = await f.bar(austin, { name: 'Center', ...at(0) });
    ids.half = await f.bar(austin, { name: 'Half Mile', ...at(0.5) });
    ids.far = await f.bar(austin, { name: 'Far Away', latitude: 31.5, longitude: -96.5 });
    ids.twinA = await f.bar(austin, { name: 'Twin', latitude: 29, longitude: -98 });
    ids.twinB = await f.bar(austin, { name: 'Twin', latitude: 29.1, longitude: -98 });
    const dive = await f.category('Dive Bar', 'dive-bar');
    const sports = await f.category('Sports Bar', 'sports-bar');
    const cocktail = await f.category('Cocktails', 'cocktails');
    await f.barCategory(ids.half!, sports, false, 2);
    await f.barCategory(ids.half!, dive, true, 5);
    await f.barCategory(ids.half!, cocktail, false, 1);
    await f.barCategory(ids.far!, dive, true);
    ({ app } = buildApp(db.partnerPool()));
  });
  afterAll(() => db.drop());

  test('without filters: by name, then id (stable), every bar in the list form', async () => {
    const res = await get(app, `${P}/bars`);
    const bars = res.body.bars as { id: string; name: string }[];
    expect(bars.map((b) => b.name)).toEqual([
      'Center',
      'Far Away',
      'Half Mile',
      'Inside 0.999',
      'Outside 1.001',
      'Twin',
      'Twin',
    ]);
    expect(bars.filter((b) => b.name === 'Twin').map((b) => b.id)).toEqual([String(ids.twinA), String(ids.twinB)]);
  });

  test('limit', async () => {
    expect(await names('?limit=2')).toEqual(['Center', 'Far Away']);
  });

  test('radius: a bar just inside the boundary is in, one just outside is out; nearest first', async () => {
    expect(await names(`?latitude=${center.latitude}&longitude=${center.longitude}&radius=1`)).toEqual([
      'Center',
      'Half Mile',
      'Inside 0.999',
    ]);
  });

  test('latitude and longitude alone: every bar, nearest first', async () => {
    const res = await get(app, `${P}/bars?latitude=${center.latitude}&longitude=${center.longitude}`);
    expect(res.body.bars.map((b: { id: string }) => Number(b.id))).toEqual([
      ids.center,
      ids.half,
      ids.inside,
      ids.outside,
      ids.twinB,
      ids.twinA,
      ids.far,
    ]);
  });

  test('the radius is in miles: 1.002 miles takes the bar at 1.001', async () => {
    expect(await names(`?latitude=${center.latitude}&longitude=${center.longitude}&radius=1.002&limit=250`)).toEqual([
      'Center',
      'Half Mile',
      'Inside 0.999',
      'Outside 1.001',
    ]);
  });

  test('bounding box: corners in either order give the same bars', async () => {
    const box = (c1: [number, number], c2: [number, number]) =>
      `?corner1[latitude]=${c1[0]}&corner1[longitude]=${c1[1]}&corner2[latitude]=${c2[0]}&corner2[longitude]=${c2[1]}`;
    const sw: [number, number] = [30.24, -97.76];
    const ne: [number, number] = [northOf(center.latitude, 0.75), -97.74];
    const expected = ['Center', 'Half Mile'];
    expect(await names(box(sw, ne))).toEqual(expected);
    expect(await names(box(ne, sw))).toEqual(expected);
    // the other diagonal (NW + SE)
    expect(await names(box([ne[0], sw[1]], [sw[0], ne[1]]))).toEqual(expected);
    expect(await names(box([0, 0], [1, 1]))).toEqual([]);
  });

  test('ids: order kept, duplicates once at their first place, unknown ids skipped', async () => {
    const list = [ids.far, 999999, ids.center, 'abc', ids.far, ids.half, '0', ids.center].join(',');
    expect(await names(`?ids=${list}`)).toEqual(['Far Away', 'Center', 'Half Mile']);
    expect(await names('?ids=424242')).toEqual([]);
  });

  test('ids combine with other filters', async () => {
    expect(await names(`?ids=${ids.far},${ids.half},${ids.center}&category=dive-bar`)).toEqual([
      'Far Away',
      'Half Mile',
    ]);
  });

  test('category: bars with that category slug; an unknown slug matches nothing', async () => {
    expect(await names('?category=dive-bar')).toEqual(['Far Away', 'Half Mile']);
    expect(await names('?category=sports-bar')).toEqual(['Half Mile']);
    expect(await names('?category=no-such-thing')).toEqual([]);
  });

  test('the list form: every key present, nulls for empty values, categories primary first then by position', async () => {
    const res = await get(app, `${P}/bars?ids=${ids.half}`);
    const bar = res.body.bars[0];
    expect(bar).toEqual({
      id: String(ids.half),
      name: 'Half Mile',
      address: '1 Main St',
      city: 'Austin',
      state: 'TX',
      zip_code: null,
      latitude: northOf(center.latitude, 0.5),
      longitude: center.longitude,
      phone: null,
      website: null,
      google_rating: null,
      google_ratings_total: 0,
      primary_category: { name: 'Dive Bar', slug: 'dive-bar' },
      categories: [
        { name: 'Dive Bar', slug: 'dive-bar' },
        { name: 'Cocktails', slug: 'cocktails' },
        { name: 'Sports Bar', slug: 'sports-bar' },
      ],
      hours: { monday: [], tuesday: [], wednesday: [], thursday: [], friday: [], saturday: [], sunday: [] },
      profile_picture_url: null,
      photos: [],
      occupancy: { current_intensity: 0, status: 'closed' },
    });
  });

  describe('bars/:id', () => {
    let full: number;
    beforeAll(async () => {
      const city = await db.owner.query<{ id: number }>("select id from private.cities where name = 'Austin'");
      full = await f.bar(city.rows[0]!.id, {
        name: 'Full Detail',
        address: '500 Congress Ave',
        zip_code: '78701',
        phone: '+1 512 555 0100',
        website: 'https://full.example',
        google_rating: 4.5,
        google_ratings_total: 321,
        price_level: 2,
        description: 'Everything filled in',
        profile_picture_url: 'https://img.example/p.jpg',
      });
      await f.alwaysOpen(full);
      await f.occupancy(full, 80, (_d, h) => h * 4);
      await f.photo(full, 'https://img.example/2.jpg', 2);
      await f.photo(full, 'https://img.example/1.jpg', 1);
      const now = testNow().getTime(); // the instant the app answers at
      const iso = (hours: number) => new Date(now + hours * 3600_000).toISOString();
      await f.event(full, { title: 'ended', start_at: iso(-5), end_at: iso(-1) });
      await f.event(full, { title: 'running', start_at: iso(-1), end_at: iso(1), description: 'now on' });
      for (let i = 12; i >= 1; i--)
        await f.event(full, {
          title: `upcoming ${String(i).padStart(2, '0')}`,
          start_at: iso(i * 24),
          end_at: iso(i * 24 + 2),
        });
    });

    test('the detail form: list fields plus description, price_level, hourly occupancy and at most 10 upcoming events', async () => {
      const res = await get(app, `${P}/bars/${full}`);
      expect(res.status).toBe(200);
      const bar = res.body.bar;
      expect(bar).toMatchObject({
        id: String(full),
        name: 'Full Detail',
        address: '500 Congress Ave',
        city: 'Austin',
        state: 'TX',
        zip_code: '78701',
        phone: '+1 512 555 0100',
        website: 'https://full.example',
        google_rating: 4.5,
        google_ratings_total: 321,
        price_level: 2,
        description: 'Everything filled in',
        profile_picture_url: 'https://img.example/p.jpg',
        photos: [{ url: 'https://img.example/1.jpg' }, { url: 'https://img.example/2.jpg' }],
        primary_category: null,
        categories: [],
      });
      expect(bar.occupancy.current_intensity).toBe(80);
      expect(bar.occupancy.status).toBe('very_busy');
      expect(bar.occupancy.hourly_data).toEqual(Array.from({ length: 24 }, (_, h) => ({ hour: h, intensity: h * 4 })));
      expect(bar.events.map((e: { name: string }) => e.name)).toEqual([
        'running',
        ...Array.from({ length: 9 }, (_, i) => `upcoming ${String(i + 1).padStart(2, '0')}`),
      ]);
      expect(bar.events[0]).toEqual({
        id: expect.stringMatching(/^\d+$/),
        name: 'running',
        description: 'now on',
        start_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        end_at: expect.stringMatching(/Z$/),
      });
      expect(Object.keys(bar.hours)).toEqual([
        'monday',
        'tuesday',
        'wednesday',
        'thursday',
        'friday',
        'saturday',
        'sunday',
      ]);
    });

    test('HEAD on a bar: the headers of the GET answer (length and ETag included), no body', async () => {
      const res = await call(app, 'HEAD', `${P}/bars/${full}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      // HEAD is never compressed: its headers are those of the identity GET
      const whole = await call(app, 'GET', `${P}/bars/${full}`, { 'accept-encoding': 'identity' });
      expect(res.headers['content-length']).toBe(String(Buffer.byteLength(whole.text)));
      expect(res.headers['etag']).toBe(whole.headers['etag']);
      expect(res.headers['cache-control']).toBe('private, no-cache');
      const raw = await request(app).head(`${P}/bars/${full}`);
      expect(raw.text ?? '').toBe('');
    });
  });
});
