/**
 * GET /api/v1/partner/graphql/explorer in a real browser (Debian's chromium via
 * playwright-core, as the docs page's test): ruru (GraphiQL) loads from the
 * server alone, a partner types the key into the headers pane, runs the
 * default query and sees the data. Skipped, with the reason, where no browser
 * can run.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Browser } from 'playwright-core';
import { seedDemoData } from '../../db/seed';
import { launchChromium } from '../../scripts/docs-browser';
import { EXPLORER_PATH } from '../../server/graphql/endpoint';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { issueKey } from '../support/partner';
import { startGraphqlPartner, type GraphqlPartner } from './support';
import { testNow } from '../support/clock';

describe('the GraphQL explorer in a browser', () => {
  let browser: Browser | string;
  let db: TestDatabase;
  let partner: GraphqlPartner;
  let server: Server;
  let origin: string;
  let key: string;

  beforeAll(async () => {
    browser = await launchChromium();
    if (typeof browser === 'string') console.warn(`SKIPPED browser test of the GraphQL explorer: ${browser}`);
    db = await createTestDatabase();
    await seedDemoData(db.url, { bars: 40, seed: 2, now: testNow() });
    partner = await startGraphqlPartner(db);
    key = (await issueKey(db.owner)).apiKey;
    server = partner.app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 90_000);
  afterAll(async () => {
    if (browser && typeof browser !== 'string') await browser.close();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await partner?.close();
    await db?.drop();
  });

  test('loads from the server alone; with the key in the headers pane a query answers data', async () => {
    if (typeof browser === 'string') return; // reason printed above
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const external: string[] = [];
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
      external.push(url);
      return route.abort();
    });
    const answers: number[] = [];
    page.on('response', (r) => {
      if (r.url() === `${origin}/api/v1/partner/graphql` && r.request().method() === 'POST') answers.push(r.status());
    });
    await page.goto(`${origin}${EXPLORER_PATH}`, { waitUntil: 'load' });
    await page.locator('.graphiql-container').waitFor({ timeout: 30_000 });

    // the headers pane: replace the placeholder with the key
    await page.getByText('Headers', { exact: true }).click();
    const headers = page.locator('.graphiql-editor-tool .monaco-editor').last();
    await headers.waitFor({ timeout: 10_000 });
    await headers.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(JSON.stringify({ Authorization: `Bearer ${key}` }));

    await page.locator('.graphiql-execute-button').click();
    const result = page.locator('.graphiql-response');
    await result.getByText('"totalCount"').waitFor({ timeout: 30_000 });
    const text = (await result.innerText()).replace(/[^\x21-\x7e]+/g, ' '); // the editor's spacing characters
    expect(text).toMatch(/"name": "New York City"/);
    expect(text).toMatch(/"totalCount": \d+/);
    expect(answers.at(-1)).toBe(200);
    expect(external).toEqual([]);
  }, 120_000);
});
