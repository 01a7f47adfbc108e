/**
 * The README's screenshots of the operator console and the partner usage page, taken in Debian's
 * chromium against a real server on DATABASE_URL's database (migrated; demo data makes it look
 * real): `node scripts/run-built.mjs scripts/console-screenshots [docs]`. It issues a key to a new
 * subscriber, sends it some requests (a few failing), then photographs the views.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { createPartnerGuard } from '../server/credentials/guard';
import { createPool } from '../server/db/pools';
import { createPartnerApp } from '../server/http/app';
import { createLogger } from '../server/log';
import { startOperatorServer } from '../server/operator/server';
import { RequestLog } from '../server/usage/request-log';
import { launchChromium } from './docs-browser';

export async function main(args: string[]): Promise<number> {
  const out = args[0] ?? 'docs';
  const url = process.env.DATABASE_URL;
  if (!url) {
    process.stderr.write('DATABASE_URL is required (a migrated database, ideally with demo data)\n');
    return 2;
  }
  const browser = await launchChromium();
  if (typeof browser === 'string') {
    process.stderr.write(`${browser}\n`);
    return 1;
  }
  const logger = createLogger('silent');
  const owner = new pg.Client({ connectionString: url });
  await owner.connect();
  const token = (
    await owner.query<{ token: string }>("select token from admin.create_operator('screenshots-' || gen_random_uuid())")
  ).rows[0]!.token;
  const sub = (
    await owner.query<{ id: string }>("select id from admin.create_subscriber('Acme Maps', 'standard', null)")
  ).rows[0]!.id;
  const apiKey = (await owner.query<{ api_key: string }>('select api_key from admin.issue_key($1)', [sub])).rows[0]!
    .api_key;
  await owner.query("select admin.set_alert_contacts($1, array['ops@acme.example'])", [sub]).catch(() => undefined);

  const pool = createPool(url, { max: 4, role: 'bar_partner', applicationName: 'screenshots' });
  const guard = await createPartnerGuard({ pool, databaseUrl: url, logger, usageFlushMs: 60_000 });
  const requestLog = new RequestLog({ pool, logger, flushEveryMs: 60_000 });
  const app = createPartnerApp({ config: { env: 'development' }, logger, pool, guard: guard.handlers, requestLog });
  const partner = http.createServer(app).listen(0, '127.0.0.1');
  await new Promise((r) => partner.once('listening', r));
  const origin = `http://127.0.0.1:${(partner.address() as AddressInfo).port}`;
  const paths = [
    'bars?limit=20',
    'search?q=tavern',
    'bars_by_city/NY/New%20York%20City',
    'test_endpoint',
    'bars?limit=0',
    'events/NY/Gotham',
  ];
  for (let i = 0; i < 60; i++)
    await fetch(`${origin}/api/v1/partner/${paths[i % paths.length]}`, {
      headers: { Authorization: `Bearer ${apiKey}` },
    });
  await guard.history.flush();
  await guard.usage.flush();
  await requestLog.flush();

  const ops = await startOperatorServer({
    databaseUrl: url,
    config: { env: 'development', adminHost: '127.0.0.1', adminPort: 0, pgPoolMax: 2 },
    logger,
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${ops.url}/console`);
    await page.getByLabel('Operator token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.locator('canvas').first().waitFor();
    await page.screenshot({ path: path.join(out, 'console-overview.png'), fullPage: false });
    await page.goto(`${ops.url}/console#/subscribers/${sub}`);
    await page.getByRole('heading', { name: /^Subscriber/ }).waitFor();
    await page.getByRole('button', { name: 'Issue a key' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.locator('input.secret').waitFor();
    await page.screenshot({ path: path.join(out, 'console-subscriber.png'), fullPage: false });
    const keyId = (
      await owner.query<{ id: string }>(
        'select id from admin.api_keys where subscriber_id = $1 order by created_at limit 1',
        [sub],
      )
    ).rows[0]!.id;
    await page.goto(`${ops.url}/console#/keys/${keyId}`);
    await page.locator('canvas').first().waitFor();
    await page.screenshot({ path: path.join(out, 'console-key.png'), fullPage: true });

    const partnerPage = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await partnerPage.goto(`${origin}/api/v1/partner/dashboard`);
    await partnerPage.getByLabel('API key').fill(apiKey);
    await partnerPage.getByRole('button', { name: 'Show my usage' }).click();
    await partnerPage.locator('canvas').first().waitFor();
    await partnerPage.screenshot({ path: path.join(out, 'partner-dashboard.png'), fullPage: true });
    process.stdout.write(`screenshots written to ${out}/\n`);
    return 0;
  } finally {
    await browser.close();
    await ops.close();
    await requestLog.close();
    await guard.close();
    await new Promise((r) => partner.close(r));
    await pool.end();
    await owner.end();
  }
}
