/**
 * GET /api/v1/partner/docs in a real browser (Debian's chromium via
 * playwright-core): the reference renders from the served OpenAPI document,
 * lists every endpoint, shows an example request, and loads nothing from
 * outside the server. Skipped, with the reason, where no browser can run.
 */
import type { Browser } from 'playwright-core';
import { launchChromium, openDocs, serveDocs } from '../../scripts/docs-browser';
import { openApiDocument } from '../../server/openapi/document';

type Operation = { summary: string; operationId: string };
const operations = Object.entries(openApiDocument.paths as unknown as Record<string, { get: Operation }>).map(
  ([path, item]) => ({ path, ...item.get }),
);

describe('the docs page in a browser', () => {
  let browser: Browser | string;
  let server: Awaited<ReturnType<typeof serveDocs>>;

  beforeAll(async () => {
    browser = await launchChromium();
    if (typeof browser === 'string') console.warn(`SKIPPED browser test of the docs page: ${browser}`);
    server = await serveDocs();
  }, 60_000);
  afterAll(async () => {
    if (typeof browser !== 'string') await browser.close();
    await server.close();
  });

  test('lists every endpoint of the document and renders an example request, with no external request', async () => {
    if (typeof browser === 'string') return; // reason printed above
    const { page, external } = await openDocs(browser, server.origin);
    const text = await page.locator('body').innerText();
    const missing = operations.filter((o) => !text.includes(o.summary)).map((o) => `${o.path} (${o.summary})`);
    expect(missing).toEqual([]);

    // an example request: the curl sample of the first operation's request
    const sample = page.locator('pre, code').filter({ hasText: /curl/ }).first();
    await sample.waitFor({ timeout: 30_000 });
    expect(await sample.innerText()).toMatch(/curl[\s\S]*\/api\/v1\/partner\//);
    expect(external).toEqual([]);
  }, 90_000);
});
