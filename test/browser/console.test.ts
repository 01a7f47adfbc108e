/**
 * The operator console (/console on the operator listener) in a real browser, as an operator uses
 * it: sign in with a token, find a subscriber, issue a key and copy it, revoke it; plans. Its only
 * backend is the operator GraphQL endpoint; no request leaves the server; values partners control
 * (names, webhook URLs) are shown as text and never run. Skipped, with the reason, without a browser.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { launchChromium } from '../../scripts/docs-browser';
import pino from 'pino';
import { Writable } from 'node:stream';
import { startOperatorServer, type OperatorServer } from '../../server/operator/server';
import { createOperatorToken } from '../operator/support';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createPartnerApp } from '../../server/http/app';
import { RequestLog } from '../../server/usage/request-log';
import { testClock } from '../support/clock';
import { bearer, createPlan, silentLogger, startPartner, type PartnerInstance } from '../support/partner';
import { openWatched, type WatchedPage } from './support';

const HOOK = `https://hook.example/"><img src=x onerror="alert('hook')"><a href="javascript:alert(1)">x</a>`;
const RAW_HOSTILE = `"><img/src=x/onerror=alert('path')><script>alert('path')</script>`; // no space: a client sends it as is
const HOSTILE = `Acme <script>window.__pwned = 1</script>"><img src=x onerror="alert('xss')">`;

describe('the operator console in a browser', () => {
  let browser: Browser | string;
  let db: TestDatabase;
  let ops: { server: OperatorServer; token: string; close(): Promise<void> };
  const logLines: string[] = []; // everything the operator listener logged
  let partner: PartnerInstance;
  let log: RequestLog;
  let app: ReturnType<typeof createPartnerApp>;
  let subscriberId: string;
  let w: WatchedPage;

  beforeAll(async () => {
    browser = await launchChromium();
    if (typeof browser === 'string') console.warn(`SKIPPED browser test of the console: ${browser}`);
    db = await createTestDatabase();
    const server = await startOperatorServer({
      databaseUrl: db.url,
      config: { env: 'test', adminHost: '127.0.0.1', adminPort: 0, pgPoolMax: 4 },
      logger: pino(
        { level: 'debug' },
        new Writable({
          write(chunk: Buffer, _enc, done) {
            logLines.push(chunk.toString());
            done();
          },
        }),
      ),
    });
    ops = { server, token: await createOperatorToken(db), close: () => server.close() };
    partner = await startPartner(db);
    log = new RequestLog({ pool: partner.pool, logger: silentLogger, flushEveryMs: 60_000 });
    app = createPartnerApp({
      config: { env: 'test' },
      logger: silentLogger,
      pool: partner.pool,
      guard: partner.guard.handlers,
      clock: testClock,
      requestLog: log,
    });
    const plan = await createPlan(db.owner, 100, 1000);
    const { rows } = await db.owner.query<{ id: string }>('select id from admin.create_subscriber($1, $2, null)', [
      HOSTILE,
      plan,
    ]);
    subscriberId = rows[0]!.id;
    await db.owner.query(
      "insert into admin.webhook_endpoints (subscriber_id, url, secret_encrypted) values ($1, $2, 'v1:x')",
      [subscriberId, HOOK],
    );
  }, 120_000);
  afterAll(async () => {
    if (typeof browser !== 'string') await browser?.close();
    await log?.close();
    await partner?.close();
    await ops?.close();
    await db?.drop();
  });

  test('sign in, find the subscriber, issue a key and copy it, use it, revoke it', async () => {
    if (typeof browser === 'string') return; // reason printed above
    w = await openWatched(browser, ops.server.url, '/console');
    const { page } = w;
    // a wrong token: the server's error is shown, nothing is stored
    await page.getByLabel('Operator token').fill('pbo_wrong');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').innerText()).toMatch(/token/i);
    await page.getByLabel('Operator token').fill(ops.token);
    await page.keyboard.press('Enter'); // by keyboard: the form submits
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('operator-token')")).toBe(ops.token);
    expect(await page.evaluate('document.cookie')).toBe('');

    await page.getByRole('link', { name: 'Subscribers' }).click();
    await page.getByLabel('Search by name or id').fill('acme');
    await page.getByRole('link', { name: HOSTILE }).click();
    await page.getByRole('heading', { name: `Subscriber: ${HOSTILE}` }).waitFor();
    expect(await page.getByText(HOOK).count()).toBe(1); // the URL as text, not a link
    expect(await page.locator('a[href^="javascript:"], a[href*="hook.example"]').count()).toBe(0);

    await page.getByRole('button', { name: 'Issue a key' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    const secret = page.locator('input.secret');
    await secret.waitFor();
    const apiKey = await secret.inputValue();
    expect(apiKey).toMatch(/^pbk_/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(apiKey);

    // the key works: requests made with it from here, three answered 200 and two 400s
    for (let i = 0; i < 3; i++)
      expect((await request(app).get('/api/v1/partner/test_endpoint').set(bearer(apiKey))).status).toBe(200);
    const bad = await request(app)
      .get(`/api/v1/partner/bars?limit=0&q=${encodeURIComponent(HOSTILE)}`)
      .set(bearer(apiKey));
    expect(bad.status).toBe(400);
    expect((await request(app).get('/api/v1/partner/bars?radius=3').set(bearer(apiKey))).status).toBe(400);
    const requestId = String(bad.headers['x-request-id']);
    // a path sent raw (no percent-encoding), as a hostile client can: it is logged and shown as text
    const raw = await rawGet(app, `/api/v1/partner/bars?x=${RAW_HOSTILE}`, apiKey);
    expect(raw).toBe(400);
    await partner.guard.history.flush();
    await partner.guard.usage.flush();
    await log.flush();

    // the key's page: its hourly chart (the numbers as a table) and its request log
    const prefix = apiKey.slice(0, 12);
    await page.getByRole('link', { name: new RegExp(`^${prefix.slice(0, 8)}`) }).click();
    await page.getByRole('heading', { name: /^Key / }).waitFor();
    const chart = page.getByRole('figure', { name: /Requests per hour by endpoint/ });
    await chart.getByText('The numbers as a table').click();
    const table = chart.locator('details table');
    expect(await table.getByRole('columnheader').allInnerTexts()).toEqual(['hour (UTC)', 'bars', 'test_endpoint']);
    const cells = await table.getByRole('row').nth(1).getByRole('cell').allInnerTexts();
    expect(cells).toEqual(['3', '3']); // bars: three 400s; test_endpoint: three 200s
    expect(await page.locator('canvas').count()).toBeGreaterThan(0); // uPlot drew it
    const logRows = page.getByRole('row').filter({ hasText: '/api/v1/partner/bars' });
    await logRows.first().waitFor();
    expect(await logRows.count()).toBe(3);
    expect(await page.getByText(RAW_HOSTILE).count()).toBe(1);
    expect(await page.getByText(requestId).count()).toBe(1);
    // filters: endpoint test_endpoint (no failed request there)
    await page.getByRole('textbox', { name: 'Endpoint' }).fill('test_endpoint');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No entry.').waitFor();

    // look the 400 up by its X-Request-Id, as a partner would report it
    await page.getByRole('link', { name: 'Request lookup' }).click();
    await page.getByLabel('X-Request-Id').fill(requestId);
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.getByRole('cell', { name: requestId }).waitFor();
    expect(await page.getByRole('row').filter({ hasText: requestId }).innerText()).toMatch(/400/);
    await page.getByRole('link', { name: HOSTILE }).click();
    await page.getByRole('heading', { name: `Subscriber: ${HOSTILE}` }).waitFor();

    const row = page.getByRole('row').filter({ hasText: prefix.slice(0, 8) });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Confirm' }).click();
    await row.getByText(/^revoked /).waitFor();
    const after = await waitForStatus(() => request(app).get('/api/v1/partner/test_endpoint').set(bearer(apiKey)), 403);
    expect(after).toBe(403); // a revoked key

    // the operator token: never in a URL the page asked for, a log line or the request log
    expect(w.urls.length).toBeGreaterThan(5);
    expect(w.urls.filter((u) => u.includes(ops.token) || u.includes('pbo_'))).toEqual([]);
    expect(logLines.length).toBeGreaterThan(5);
    expect(logLines.filter((l) => l.includes(ops.token))).toEqual([]);
    const stored = await db.owner.query(
      "select count(*)::int as n from admin.request_log where (path || coalesce(error, '')) like '%pbo\\_%'",
    );
    expect(stored.rows[0].n).toBe(0);
    // at phone width the views still work: the navigation and the overview's chart and totals
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('figure', { name: /Requests per hour by status class/ }).waitFor();
    expect(await page.getByRole('navigation').getByRole('link').count()).toBe(4);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(420);
    await page.setViewportSize({ width: 1280, height: 800 });

    expect(w.dialogs).toEqual([]);
    expect(w.pageErrors).toEqual([]);
    expect(w.consoleErrors).toEqual([]); // a CSP violation (inline script, handler) would be one
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(w.external).toEqual([]);
  }, 120_000);

  test('an action the server refuses shows its error; plans are listed and created', async () => {
    if (typeof browser === 'string') return;
    const { page } = w;
    await page.getByRole('link', { name: 'Plans' }).click();
    await page.getByRole('heading', { name: 'Plans' }).waitFor();
    await page.getByLabel('Name').fill('console-plan');
    await page.getByLabel('A minute').fill('42');
    await page.getByRole('button', { name: 'Create plan' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('cell', { name: 'console-plan' }).waitFor();
    // the same name again: the server's refusal is shown
    await page.getByLabel('Name').fill('console-plan');
    await page.getByRole('button', { name: 'Create plan' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').innerText()).toMatch(/console-plan|exists|duplicate/i);
    expect(w.external).toEqual([]);
  }, 60_000);

  test('the console is served with a strict CSP, nosniff and no referrer, and only on the operator listener', async () => {
    const res = await fetch(`${ops.server.url}/console`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    expect(res.headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/);
    expect(res.headers.get('content-security-policy')).not.toMatch(/unsafe-inline/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect((await fetch(`${ops.server.url}/console/../graphql`)).status).not.toBe(200);
    expect((await fetch(`${ops.server.url}/console/nope.js`)).status).toBe(404);
    expect((await fetch(`${ops.server.url}/console`, { method: 'POST' })).status).toBe(405);
    expect((await request(partner.app).get('/console')).status).toBe(404);
  });
});

async function waitForStatus(call: () => PromiseLike<{ status: number }>, want: number): Promise<number> {
  let status = 0;
  for (let i = 0; i < 50; i++) {
    status = (await call()).status;
    if (status === want) return status;
    await new Promise((r) => setTimeout(r, 100));
  }
  return status;
}

/** GET with the path exactly as given (Node sends < > " ' unencoded), on a listener of its own. */
async function rawGet(app: http.RequestListener, path: string, apiKey: string): Promise<number> {
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<number>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path, headers: bearer(apiKey) }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
}
