/**
 * A frozen PostgreSQL (connections stay open, nothing answers): the pool's
 * client-side deadline (PG_QUERY_DEADLINE_MS) answers 503 + Retry-After
 * instead of leaving the request hanging, and service resumes when it thaws.
 * The database sits behind a TCP proxy this test freezes (stops forwarding);
 * the machine's PostgreSQL is never touched.
 */
import type { Express } from 'express';
import { createPool, type Pool } from '../../server/db/pools';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { get } from '../support/openapi';
import { buildApp } from '../support/partner-app';
import { FreezableProxy } from '../support/freezable-proxy';

describe('database frozen (no answers, connections open)', () => {
  let db: TestDatabase;
  let proxy: FreezableProxy;
  let pool: Pool;
  let app: Express;

  beforeAll(async () => {
    db = await createTestDatabase();
    const url = new URL(db.url);
    proxy = new FreezableProxy({ host: url.hostname, port: Number(url.port || 5432) });
    await proxy.start();
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    pool = createPool(url.toString(), {
      max: 2,
      role: 'bar_partner',
      applicationName: 'tests-freeze',
      statementTimeoutMs: 500,
      queryTimeoutMs: 800, // slightly above the statement timeout
    });
    ({ app } = buildApp(pool));
  });
  afterAll(async () => {
    await pool.end().catch(() => undefined); // first: the proxy's close waits for its connections
    await proxy.stop();
    await db.drop();
  });

  test('in-flight and new requests get 503 + Retry-After within the deadline; 200 again after it thaws', async () => {
    expect((await get(app, `${P}/test_endpoint`)).status).toBe(200);
    proxy.freeze();
    const started = Date.now();
    // More requests than pool connections: those waiting for a connection are bounded too.
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) => get(app, `${P}/bars`, { 'X-Request-Id': `frozen-${i}` })),
    );
    const elapsed = Date.now() - started;
    for (const [i, res] of results.entries()) {
      expect(res.status).toBe(503);
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(res.body).toEqual({ error: 'Service temporarily unavailable, please retry', request_id: `frozen-${i}` });
    }
    expect(elapsed).toBeLessThan(3000); // never the minutes a frozen server would otherwise hold them

    proxy.thaw();
    let status = 0;
    for (let i = 0; i < 20 && status !== 200; i++) {
      status = (await get(app, `${P}/bars`)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
  });
});
