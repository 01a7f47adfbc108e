/**
 * decisions.md v1.1: unknown query parameters (400 naming the parameter and
 * listing the accepted ones, declared once per endpoint), the filter
 * parameters' 400s, the `+` sent unencoded, ETag / 304 / Cache-Control, and
 * gzip / br by Accept-Encoding.
 */
import type { Express } from 'express';
import request from 'supertest';
import { ENDPOINTS, acceptedNames } from '../../server/contract/endpoints';
import { openApiDocument } from '../../server/openapi/document';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { get } from '../support/openapi';
import { bearer, createPlan, issueKey, startPartner, type PartnerInstance } from '../support/partner';
import { buildApp } from '../support/partner-app';

describe('strict parameters, filters, caching, compression', () => {
  let db: TestDatabase;
  let app: Express;
  let barId: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    const austin = await f.city({
      name: 'Austin',
      state: 'TX',
      time_zone: 'America/Chicago',
      latitude: 30.25,
      longitude: -97.75,
    });
    barId = await f.bar(austin, { name: 'Only Bar', latitude: 30.25, longitude: -97.75 });
    await f.bar(austin, { name: 'Pricey', price_level: 4, google_rating: 4.6 });
    await f.bar(austin, { name: 'Cheap', price_level: 1, google_rating: 3.9 });
    for (let i = 0; i < 30; i++) await f.bar(austin, { name: `Filler Bar ${i}`, latitude: 30.2, longitude: -97.7 });
    ({ app } = buildApp(db.partnerPool()));
  });
  afterAll(() => db.drop());

  describe('unknown query parameters', () => {
    test.each([
      ['/bars?page=2&limit=3', 'page', 'bars'],
      ['/search?q=tavern&limit=2', 'limit', 'search'],
      ['/events/TX/Austin?type=trivia', 'type', 'events/{state}/{city}'],
      ['/bars_by_city/TX/Austin?limit=5', 'limit', 'bars_by_city/{state}/{city}'],
      ['/posts/TX/Austin?classification=dj', 'classification', 'posts/{state}/{city}'],
      ['/feed/TX/Austin?group_slug=x', 'group_slug', 'feed/{state}/{city}'],
    ])('%s is a 400 naming %s and listing what the endpoint accepts', async (url, name, label) => {
      const res = await get(app, `${P}${url}`);
      expect(res.status).toBe(400);
      const endpoint = ENDPOINTS.find((e) => e.path.slice(1) === label)!;
      expect(res.body.error).toBe(
        `unknown parameter "${name}"; ${label} accepts ${acceptedNames(endpoint).join(', ')}`,
      );
    });

    test('the search message reads as the contract spells it', async () => {
      const res = await get(app, `${P}/search?q=tavern&limit=2`);
      expect(res.body.error).toMatch(
        /^unknown parameter "limit"; search accepts q, latitude, longitude, .*page, per_page$/,
      );
    });

    test('an endpoint without query parameters says so', async () => {
      const res = await get(app, `${P}/bars/${barId}?fields=name`);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('unknown parameter "fields"; bars/{id} accepts no query parameters');
      expect((await get(app, `${P}/test_endpoint?x=1`)).body.error).toMatch(/^unknown parameter "x"; test_endpoint/);
    });

    test('bracketed forms are judged by their name (corner1 accepted, other[x] not)', async () => {
      expect((await get(app, `${P}/bars?other[latitude]=1`)).body.error).toMatch(/^unknown parameter "other"/);
      const ok = await get(
        app,
        `${P}/bars?corner1[latitude]=30&corner1[longitude]=-98&corner2[latitude]=31&corner2[longitude]=-97`,
      );
      expect(ok.status).toBe(200);
    });

    test('the accepted parameters are the OpenAPI parameters, endpoint by endpoint', () => {
      const paths = openApiDocument.paths as unknown as Record<
        string,
        { get: { parameters: { name: string; in: string }[] } }
      >;
      for (const e of ENDPOINTS) {
        const documented = paths[e.path]!.get.parameters.filter((p) => p.in === 'query').map((p) => p.name);
        expect(documented).toEqual(acceptedNames(e));
      }
    });
  });

  describe('filter parameters (GET bars, GET bars_by_city)', () => {
    test.each([
      ['open_now=yes', 'open_now must be true or false'],
      ['open_now=TRUE', 'open_now must be true or false'],
      ['open_at=2026-11-22', 'open_at must be an ISO 8601 date-time with an offset'],
      ['open_at=2026-11-22T21:30:00', 'open_at must be an ISO 8601 date-time with an offset'],
      ['open_at=2026-02-30T21:30:00Z', 'open_at must be an ISO 8601 date-time with an offset'],
      ['open_at=2026-11-22T24:00:00Z', 'open_at must be an ISO 8601 date-time with an offset'],
      ['open_now=true&open_at=2026-11-22T21:30:00Z', 'open_at cannot be combined with open_now'],
      ['price_level=0', 'price_level must be a comma-separated list of 1, 2, 3, 4'],
      ['price_level=5', 'price_level must be a comma-separated list of 1, 2, 3, 4'],
      ['price_level=1,,2', 'price_level must be a comma-separated list of 1, 2, 3, 4'],
      ['price_level=', 'price_level must be a comma-separated list of 1, 2, 3, 4'],
      ['min_rating=-0.1', 'min_rating must be a number between 0 and 5'],
      ['min_rating=5.01', 'min_rating must be a number between 0 and 5'],
      ['min_rating=abc', 'min_rating must be a number between 0 and 5'],
      ['status=packed', 'status must be a comma-separated list of closed, quiet, moderate, busy, very_busy'],
      ['status=busy,', 'status must be a comma-separated list of closed, quiet, moderate, busy, very_busy'],
      ['open_now=true&open_now=false', 'open_now must be given once, as a single value'],
    ])('%s is a 400: %s', async (qs, message) => {
      for (const path of ['/bars', '/bars_by_city/TX/Austin']) {
        const res = await get(app, `${P}${path}?${qs}`);
        expect(res.status).toBe(400);
        expect(res.body.error.startsWith(message)).toBe(true);
      }
    });

    test.each([
      'open_now=true',
      'open_now=false',
      'open_at=2026-11-22T21:30:00Z',
      'open_at=2026-11-22T15:30:00.5-06:00',
      'open_at=2026-11-22T15:30:00%2B06:00',
      'price_level=1,2,4',
      'min_rating=0',
      'min_rating=5',
      'status=busy,very_busy',
      'status=closed&price_level=2&min_rating=3.5&open_now=false',
    ])('%s is accepted by both endpoints', async (qs) => {
      expect((await get(app, `${P}/bars?${qs}`)).status).toBe(200);
      expect((await get(app, `${P}/bars_by_city/TX/Austin?${qs}`)).status).toBe(200);
    });

    test('the filters reach the database functions (price_level, min_rating on both endpoints)', async () => {
      const names = async (url: string) => {
        const res = await get(app, `${P}${url}`);
        expect(res.status).toBe(200);
        return (res.body.bars as { name: string }[]).map((b) => b.name).sort();
      };
      expect(await names('/bars?price_level=4,1')).toEqual(['Cheap', 'Pricey']);
      expect(await names('/bars?price_level=4&min_rating=4.6')).toEqual(['Pricey']);
      expect(await names('/bars?min_rating=4.7')).toEqual([]);
      expect(await names('/bars_by_city/TX/Austin?price_level=1')).toEqual(['Cheap']);
      const res = await get(app, `${P}/bars_by_city/TX/Austin?min_rating=3.9`);
      expect(res.body.pagination.total_count).toBe(2); // totals count filtered bars
    });

    test('a + sent unencoded (a space before the offset) is explained', async () => {
      for (const url of [
        '/events/TX/Austin?start_date=2026-11-22T10:00:00+05:00',
        '/posts/TX/Austin?end_date=2026-11-22T10:00+0500',
        '/bars?open_at=2026-11-22T10:00:00+05:00',
      ]) {
        const res = await get(app, `${P}${url}`);
        expect(res.status).toBe(400);
        expect(res.body.error).toMatch(/a \+ in a query string must be sent as %2B/);
      }
      // with an end_date: the default end (30 days after today) would lie before this start under some clocks
      expect(
        (await get(app, `${P}/events/TX/Austin?start_date=2026-11-22T10:00:00%2B05:00&end_date=2026-11-30`)).status,
      ).toBe(200);
    });
  });

  describe('ETag and Cache-Control', () => {
    // test_endpoint's body holds the current second and bars' bodies the current
    // minute, so a revalidation that straddles a tick rightly gets a 200 with a new
    // ETag; only then is it tried again (a 200 with the same ETag is always a failure).
    const revalidate = async (url: string, ifNoneMatch: (etag: string) => string) => {
      for (let attempt = 1; ; attempt++) {
        const first = await get(app, `${P}${url}`);
        const again = await get(app, `${P}${url}`, { 'If-None-Match': ifNoneMatch(first.headers.etag!) });
        if (again.status === 304 || again.headers.etag === first.headers.etag || attempt === 3) return { first, again };
      }
    };

    test('every 200 has a strong ETag and private, no-cache; If-None-Match gets a bodiless 304', async () => {
      for (const url of [`/bars/${barId}`, '/bars', '/bars_by_city/TX/Austin', '/feed/TX/Austin', '/test_endpoint']) {
        const { first, again } = await revalidate(url, (etag) => `"other", ${etag}`);
        expect(first.status).toBe(200);
        expect(first.headers.etag).toMatch(/^"[A-Za-z0-9_-]{27}(-gzip|-deflate)?"$/); // supertest asks for gzip, deflate
        expect(first.headers['cache-control']).toBe('private, no-cache');
        expect(again.status).toBe(304);
        expect(again.text).toBe('');
        expect(again.headers.etag).toBe(first.headers.etag);
        expect(again.headers['x-ratelimit-limit']).toBeDefined();
        const { again: weak } = await revalidate(url, (etag) => `W/${etag}`);
        expect(weak.status).toBe(304);
        const stale = await get(app, `${P}${url}`, { 'If-None-Match': '"stale"' });
        expect(stale.status).toBe(200);
      }
    });

    test('the ETag follows the body', async () => {
      const a = await get(app, `${P}/bars?limit=1`);
      const b = await get(app, `${P}/bars?limit=2`);
      expect(a.headers.etag).not.toBe(b.headers.etag);
    });

    test('openapi.json: public, max-age=3600 and its own ETag', async () => {
      const res = await get(app, `${P}/openapi.json`);
      expect(res.headers['cache-control']).toBe('public, max-age=3600');
      const again = await get(app, `${P}/openapi.json`, { 'If-None-Match': res.headers.etag! });
      expect(again.status).toBe(304);
    });

    describe('with the real guard', () => {
      let partner: PartnerInstance;
      let key: string;
      beforeAll(async () => {
        partner = await startPartner(db);
        const plan = await createPlan(db.owner, 1000, 10000, 100000);
        key = (await issueKey(db.owner, { plan })).apiKey;
      });
      afterAll(() => partner.close());

      test('a 304 counts against no bucket and shows the usual rate-limit headers', async () => {
        const url = `${P}/bars/${barId}`;
        const first = await get(partner.app, url, bearer(key));
        expect(first.status).toBe(200);
        const before = Number(first.headers['x-ratelimit-remaining-day']);
        for (let i = 0; i < 3; i++) {
          const res = await get(partner.app, url, { ...bearer(key), 'If-None-Match': first.headers.etag! });
          expect(res.status).toBe(304);
          expect(Number(res.headers['x-ratelimit-remaining-day'])).toBe(before);
          expect(Number(res.headers['x-ratelimit-limit-day'])).toBe(10000);
        }
        const next = await get(partner.app, url, bearer(key));
        expect(Number(next.headers['x-ratelimit-remaining-day'])).toBe(before - 1);
      });
    });
  });

  describe('compression', () => {
    const raw = (url: string, encoding?: string) => {
      let r = request(app).get(`${P}${url}`);
      if (encoding !== undefined) r = r.set('Accept-Encoding', encoding);
      return r.buffer(true).parse((res, done) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done(null, Buffer.concat(chunks)));
      });
    };

    test.each([
      ['gzip', 'gzip'],
      ['br', 'br'],
      ['gzip;q=0.5, br;q=1', 'br'],
      ['br;q=0.2, gzip;q=0.9', 'gzip'],
      ['br;q=0, gzip', 'gzip'],
      ['gzip;q=0, br;q=0', undefined],
      ['identity', undefined],
      ['', undefined],
    ])('Accept-Encoding %j: %s', async (accept, expected) => {
      const res = await raw('/bars', accept);
      expect(res.status).toBe(200);
      expect(res.headers['content-encoding']).toBe(expected);
      expect(res.headers.vary).toMatch(/Accept-Encoding/i);
    });

    test('each content coding has its own strong ETag, and each revalidates with a 304', async () => {
      const tags = new Map<string, string>();
      for (const accept of ['identity', 'gzip', 'br', 'gzip;q=0.5, br', 'br;q=0.2, gzip', 'deflate', '']) {
        for (let attempt = 1; ; attempt++) {
          const first = await raw('/bars', accept);
          const coding = (first.headers['content-encoding'] as string | undefined) ?? 'identity';
          const etag = first.headers.etag as string;
          // the tag names the coding actually sent
          expect(etag).toMatch(
            coding === 'identity' ? /^"[A-Za-z0-9_-]{27}"$/ : new RegExp(`^"[A-Za-z0-9_-]{27}-${coding}"$`),
          );
          const again = await raw('/bars', accept).set('If-None-Match', etag);
          if (again.status !== 304 && again.headers.etag !== etag && attempt < 3) continue; // a minute ticked
          expect(again.status).toBe(304);
          expect(again.headers.etag).toBe(etag);
          tags.set(coding, etag.replace(/-[a-z]+"$/, '"'));
          // another coding's tag is another representation: a full 200
          if (coding !== 'identity') {
            const other = await raw('/bars', accept).set('If-None-Match', etag.replace(/-[a-z]+"$/, '"'));
            expect(other.status).toBe(200);
          }
          break;
        }
      }
      expect([...tags.keys()].sort()).toEqual(['br', 'deflate', 'gzip', 'identity']);
    });

    test('the decoded body is the same JSON; bodies under 1 KB stay uncompressed', async () => {
      const plain = await get(app, `${P}/bars`);
      expect(plain.text.length).toBeGreaterThan(1024);
      const gz = await request(app).get(`${P}/bars`).set('Accept-Encoding', 'gzip');
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.body).toEqual(plain.body); // supertest decodes gzip
      const small = await raw('/bars?limit=1', 'gzip, br');
      expect((small.body as Buffer).length).toBeLessThan(1024);
      expect(small.headers['content-encoding']).toBeUndefined();
    });
  });
});
