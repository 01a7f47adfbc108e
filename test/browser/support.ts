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
}

export async function openWatched(browser: Browser, origin: string, path: string): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  const page = await context.newPage();
  const watched: WatchedPage = { page, external: [], dialogs: [], pageErrors: [], urls: [] };
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
  await page.goto(`${origin}${path}`, { waitUntil: 'load' });
  return watched;
}
