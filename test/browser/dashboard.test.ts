/**
 * The partner's usage page (/api/v1/partner/dashboard) in a real browser: type a key, see the
 * buckets now, the hourly chart and the request log, filter it, sign out. The page calls only
 * the three usage endpoints with the typed key (sent as Bearer, kept in sessionStorage, never in
 * a URL); nothing leaves the server; hostile paths in the log are shown as text.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { launchChromium } from '../../scripts/docs-browser';
import { createPartnerApp } from '../../server/http/app';
import { RequestLog } from '../../server/usage/request-log';
import { testClock } from '../support/clock';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { bearer, createPlan, issueKey, silentLogger, startPartner, type PartnerInstance } from '../support/partner';
import { openWatched } from './support';

const RAW_HOSTILE = `"><img/src=x/onerror=alert('path')><script>alert('path')</script>`; // no space: sent as is

describe('the partner usage page in a browser', () => {
  let browser: Browser | string;
  let db: TestDatabase;
  let partner: PartnerInstance;
  let log: RequestLog;
  let server: http.Server;
  let origin: string;
  const seen: string[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
    if (typeof browser === 'string') console.warn(`SKIPPED browser test of the usage page: ${browser}`);
    db = await createTestDatabase();
    partner = await startPartner(db);
    log = new RequestLog({ pool: partner.pool, logger: silentLogger, flushEveryMs: 60_000 });
    const app = createPartnerApp({
      config: { env: 'test' },
      logger: silentLogger,
      pool: partner.pool,
      guard: partner.guard.handlers,
      clock: testClock,
      requestLog: log,
    });
    server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ? 'bearer' : '-'}`);
      app(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 120_000);
  afterAll(async () => {
    if (typeof browser !== 'string') await browser?.close();
    await new Promise<void>((r) => server?.close(() => r()));
    await log?.close();
    await partner?.close();
    await db?.drop();
  });

  test('a key shows its buckets, hourly chart and failed requests; nothing else is reachable', async () => {
    if (typeof browser === 'string') return; // reason printed above
    const key = await issueKey(db.owner, { plan: await createPlan(db.owner, 50, 500, 5000) });
    const other = await issueKey(db.owner);
    for (let i = 0; i < 4; i++)
      expect((await request(server).get('/api/v1/partner/test_endpoint').set(bearer(key.apiKey))).status).toBe(200);
    expect((await request(server).get('/api/v1/partner/bars?limit=0').set(bearer(key.apiKey))).status).toBe(400);
    expect(await rawGet(origin, `/api/v1/partner/bars?x=${RAW_HOSTILE}`, key.apiKey)).toBe(400);
    // another subscriber's failure: never on this page
    expect((await request(server).get('/api/v1/partner/bars?radius=1').set(bearer(other.apiKey))).status).toBe(400);
    await partner.guard.history.flush();
    await partner.guard.usage.flush();
    await log.flush();

    seen.length = 0;
    const w = await openWatched(browser, origin, '/api/v1/partner/dashboard');
    const { page } = w;
    await page.getByLabel('API key').fill('pbk_not_a_real_key');
    await page.getByRole('button', { name: 'Show my usage' }).click();
    await page.getByRole('alert').waitFor();
    await page.getByLabel('API key').fill(key.apiKey);
    await page.getByRole('button', { name: 'Show my usage' }).click();
    await page.getByRole('heading', { name: /Your buckets now/ }).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('partner-api-key')")).toBe(key.apiKey);
    expect(await page.locator('.card').first().innerText()).toMatch(/^[\d,]+ \/ 50\s/);

    const chart = page.getByRole('figure', { name: /Your requests per hour/ });
    await chart.getByText('The numbers as a table').click();
    const cells = await chart.locator('details table').getByRole('row').nth(1).getByRole('cell').allInnerTexts();
    expect(cells).toEqual(['4', '0', '2', '0', '0']); // 2xx 3xx 4xx 5xx 429

    const rows = page.getByRole('row').filter({ hasText: '/api/v1/partner/bars' });
    await rows.first().waitFor();
    expect(await rows.count()).toBe(2); // its own two 400s, not the other subscriber's
    expect(await page.getByText(RAW_HOSTILE).count()).toBe(1);
    await page.getByLabel(/^Status/).fill('5xx');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No failed request in the last 30 days.').waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate("sessionStorage.getItem('partner-api-key')")).toBeNull();

    // the page called nothing but its own files and the three usage endpoints, the key never in a URL
    const calls = seen.filter((s) => !s.includes('/dashboard'));
    expect(calls.length).toBeGreaterThan(0);
    for (const c of calls) expect(c).toMatch(/^GET \/api\/v1\/partner\/usage(\/history|\/requests)?(\?\S*)? bearer$/);
    expect(seen.join('\n')).not.toContain(key.apiKey);
    expect(w.dialogs).toEqual([]);
    expect(w.pageErrors).toEqual([]);
    expect(w.consoleErrors).toEqual([]); // a CSP violation (inline script, handler) would be one
    expect(w.external).toEqual([]);
  }, 120_000);

  test('the page and its files: strict CSP, nosniff, no referrer; unknown files and other methods refused', async () => {
    const res = await request(server).get('/api/v1/partner/dashboard');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toMatch(/default-src 'none'; script-src 'self'/);
    expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    const js = await request(server).get('/api/v1/partner/dashboard/vendor/uplot.js');
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    const again = await request(server)
      .get('/api/v1/partner/dashboard/app.js')
      .set('If-None-Match', String((await request(server).get('/api/v1/partner/dashboard/app.js')).headers.etag));
    expect(again.status).toBe(304);
    expect((await request(server).get('/api/v1/partner/dashboard/../../../package.json')).status).not.toBe(200);
    expect((await request(server).get('/api/v1/partner/dashboard/nope.js')).status).toBe(401); // not a file: the API, which wants a key
    expect((await request(server).post('/api/v1/partner/dashboard')).status).toBe(405);
  });
});

/** GET with the path exactly as given (Node sends < > " ' unencoded). */
function rawGet(origin: string, path: string, apiKey: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const { hostname, port } = new URL(origin);
    const req = http.request({ host: hostname, port, path, headers: bearer(apiKey) }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}
