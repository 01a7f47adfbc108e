/**
 * The docs page in a real browser: Debian's chromium driven by playwright-core.
 * Used by the browser test (test/browser/docs-page.test.ts) and by the README
 * screenshot: `node scripts/run-built.mjs scripts/docs-browser docs/api-reference.png`.
 */
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import pino from 'pino';
import type { Pool } from '../server/db/pools';
import { createPartnerApp } from '../server/http/app';
import { sendError } from '../server/contract/errors';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A browser, or the reason none can run here. */
export async function launchChromium(): Promise<Browser | string> {
  if (!existsSync(CHROMIUM_PATH)) return `no browser at ${CHROMIUM_PATH} (apt-get install -y chromium)`;
  try {
    return await chromium.launch({
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 30_000,
    });
  } catch (e) {
    return `chromium does not start here: ${(e as Error).message.split('\n')[0]}`;
  }
}

/** The partner app on a free local port: the public docs page and openapi.json (no database needed). */
export async function serveDocs(): Promise<{ origin: string; close: () => Promise<void> }> {
  const app = createPartnerApp({
    config: { env: 'test' },
    logger: pino({ level: 'silent' }),
    pool: {} as Pool,
    guard: [(_req, res) => sendError(res, 401, 'Missing API key')],
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Opens the docs page; every request off the local origin is aborted and reported (no CDN at run time). */
export async function openDocs(browser: Browser, origin: string): Promise<{ page: Page; external: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const external: string[] = [];
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(origin) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    external.push(url);
    return route.abort();
  });
  await page.goto(`${origin}/api/v1/partner/docs`, { waitUntil: 'load' });
  await page.getByText('Partner Bar Data API').first().waitFor({ timeout: 30_000 });
  return { page, external };
}

export async function main(args: string[]): Promise<number> {
  const out = args[0] ?? 'docs/api-reference.png';
  const browser = await launchChromium();
  if (typeof browser === 'string') {
    process.stderr.write(`${browser}\n`);
    return 1;
  }
  const server = await serveDocs();
  try {
    const { page } = await openDocs(browser, server.origin);
    await page.waitForTimeout(1500);
    await page.screenshot({ path: out });
    process.stdout.write(`wrote ${out}\n`);
    return 0;
  } finally {
    await browser.close();
    await server.close();
  }
}
