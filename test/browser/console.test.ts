/**
 * The operator console (/console on the operator listener) in a real browser, as an operator uses
 * it: sign in with a token, find a subscriber, issue a key and copy it, revoke it; plans. Its only
 * backend is the operator GraphQL endpoint; no request leaves the server; values partners control
 * (names, webhook URLs) are shown as text and never run. Skipped, with the reason, without a browser.
 */
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { launchChromium } from '../../scripts/docs-browser';
import { startOperatorHarness, type OperatorHarness } from '../operator/support';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { bearer, createPlan, startPartner, type PartnerInstance } from '../support/partner';
import { openWatched, type WatchedPage } from './support';

const HOOK = `https://hook.example/"><img src=x onerror="alert('hook')"><a href="javascript:alert(1)">x</a>`;
const HOSTILE = `Acme <script>window.__pwned = 1</script>"><img src=x onerror="alert('xss')">`;

describe('the operator console in a browser', () => {
  let browser: Browser | string;
  let db: TestDatabase;
  let ops: OperatorHarness;
  let partner: PartnerInstance;
  let subscriberId: string;
  let w: WatchedPage;

  beforeAll(async () => {
    browser = await launchChromium();
    if (typeof browser === 'string') console.warn(`SKIPPED browser test of the console: ${browser}`);
    db = await createTestDatabase();
    ops = await startOperatorHarness(db);
    partner = await startPartner(db);
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
    await page.getByRole('button', { name: 'Sign in' }).click();
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

    // the key works: requests made with it from here
    expect((await request(partner.app).get('/api/v1/partner/test_endpoint').set(bearer(apiKey))).status).toBe(200);
    expect((await request(partner.app).get('/api/v1/partner/bars?limit=0').set(bearer(apiKey))).status).toBe(400);

    const prefix = apiKey.slice(0, 12);
    const row = page.getByRole('row').filter({ hasText: prefix.slice(0, 8) });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Confirm' }).click();
    await row.getByText(/^revoked /).waitFor();
    const after = await waitForStatus(
      () => request(partner.app).get('/api/v1/partner/test_endpoint').set(bearer(apiKey)),
      401,
    );
    expect(after).toBe(401);

    expect(w.dialogs).toEqual([]);
    expect(w.pageErrors).toEqual([]);
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
