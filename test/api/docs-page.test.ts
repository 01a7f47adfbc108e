/**
 * GET /api/v1/partner/docs served locally (HTTP level). The browser test
 * (test/browser/docs-page.test.ts) checks that it renders.
 */
import request from 'supertest';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { buildApp } from '../support/partner-app';
import type { Pool } from '../../server/db/pools';

describe('the docs page', () => {
  const { app } = buildApp({} as Pool, { guard: [(_req, res) => void res.status(500).end()] });

  test('is public HTML referencing only local resources', async () => {
    const res = await request(app).get(`${P}/docs`).set('Accept', 'text/html');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('public, max-age=3600');
    expect(res.headers.etag).toMatch(/^"[^"]+"$/);
    expect(res.text).toContain(`${P}/openapi.json`);
    const sources = [...res.text.matchAll(/src="([^"]+)"/g)].map((m) => m[1]);
    expect(sources).toEqual([`${P}/docs/scalar.js`]);
    expect(res.text).not.toMatch(/https?:\/\//);
  });

  test('the script comes from the npm package, compressed on request, with 304 when unchanged', async () => {
    const res = await request(app).get(`${P}/docs/scalar.js`).set('Accept-Encoding', 'br');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/javascript/);
    expect(res.headers['content-encoding']).toBe('br');
    expect(res.headers['cache-control']).toBe('public, max-age=3600');
    expect(res.headers.etag).toMatch(/-br"$/); // the tag of the br form (caching.ts encodedEtag)
    const again = await request(app)
      .get(`${P}/docs/scalar.js`)
      .set('Accept-Encoding', 'br')
      .set('If-None-Match', res.headers.etag!);
    expect(again.status).toBe(304);
  });
});
