/**
 * A page of ours in Debian's chromium (playwright-core): every request off the server's origin is
 * aborted and recorded, and so is every dialog (alert, confirm, prompt) and uncaught page error, so
 * a test can assert that nothing left the server and that nothing a partner controls ran as script.
 */
import type { Browser, Page } from 'playwright-core';

export interface WatchedPage {
  page: Page;
  external: string[];
  dialogs: string[];
  pageErrors: string[];
  /** Every URL the page requested. */
  urls: string[];
  /** Console errors (a CSP violation is one), less the browser's own notes of 4xx answers. */
  consoleErrors: string[];
}

export async function openWatched(browser: Browser, origin: string, path: string): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  const page = await context.newPage();
  const watched: WatchedPage = { page, external: [], dialogs: [], pageErrors: [], urls: [], consoleErrors: [] };
  await page.route('**/*', (route) => {
    const url = route.request().url();
    watched.urls.push(url);
    if (url.startsWith(origin) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    watched.external.push(url);
    return route.abort();
  });
  page.on('dialog', (d) => {
    watched.dialogs.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
  page.on('pageerror', (e) => watched.pageErrors.push(e.message));
  page.on('console', (m) => {
    // the browser notes each 4xx the page's own calls get (a wrong key, say): expected, not a fault
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) watched.consoleErrors.push(m.text());
  });
  await page.goto(`${origin}${path}`, { waitUntil: 'load' });
  return watched;
}
