/**
 * Issue 22: a frozen PostgreSQL (connections open, nothing answers) behind a
 * TCP proxy this test freezes. With the breaker (server/db/pg-breaker.ts) the
 * requests waiting on it get 503 + Retry-After about 2 s after the freeze,
 * and later ones at once, instead of waiting for the 11 s client deadline;
 * the first answer after the thaw closes it. A frozen read replica is skipped
 * the same way and the primary serves.
 */
import { createPool, type Pool } from '../../server/db/pools';
import { guardPool, type PgBreaker } from '../../server/db/pg-breaker';
import { createReadPool } from '../../server/db/read-pool';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { FreezableProxy } from '../support/freezable-proxy';
import { get } from '../support/openapi';
import { buildApp } from '../support/partner-app';
import pino from 'pino';

const DEADLINE = { statementTimeoutMs: 10_000, queryTimeoutMs: 11_000 }; // the production defaults
const silent = pino({ level: 'silent' });

describe('a frozen database answered fast (circuit breaker)', () => {
  let db: TestDatabase;
  let proxy: FreezableProxy;
  let proxiedUrl: string;
  const pools: Pool[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    const url = new URL(db.url);
    proxy = new FreezableProxy({ host: url.hostname, port: Number(url.port || 5432) });
    await proxy.start();
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    proxiedUrl = url.toString();
  });
  afterEach(() => proxy.thaw());
  afterAll(async () => {
    for (const p of pools) await p.end().catch(() => undefined);
    await proxy.stop();
    await db.drop();
  });

  const pool = (url: string) => {
    const p = createPool(url, { max: 2, role: 'bar_partner', applicationName: 'tests-breaker', ...DEADLINE });
    pools.push(p);
    return p;
  };

  test('frozen primary: waiting requests 503 within ~2 s, new ones at once; back on the first answer', async () => {
    const primary = pool(proxiedUrl);
    const breaker: PgBreaker = guardPool(primary, { probeUrl: proxiedUrl, name: 'primary', logger: silent });
    const { app } = buildApp(primary);
    expect((await get(app, `${P}/test_endpoint`)).status).toBe(200);

    proxy.freeze();
    const frozenAt = Date.now();
    // More requests than pool connections: those waiting for a connection are answered too.
    const waiting = await Promise.all(
      Array.from({ length: 5 }, async (_, i) => {
        const res = await get(app, `${P}/bars`, { 'X-Request-Id': `frozen-${i}` });
        return { res, after: Date.now() - frozenAt };
      }),
    );
    for (const [i, { res, after }] of waiting.entries()) {
      expect(res.status).toBe(503);
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(res.body).toEqual({ error: 'Service temporarily unavailable, please retry', request_id: `frozen-${i}` });
      expect(after).toBeLessThan(DEADLINE.queryTimeoutMs / 2); // the breaker answered, not the deadline
    }
    expect(breaker.isOpen).toBe(true);
    // Still frozen: a new request is answered without waiting for the database at all.
    const during = await get(app, `${P}/bars`);
    expect(during.status).toBe(503);
    expect(breaker.isOpen).toBe(true);

    proxy.thaw();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await get(app, `${P}/bars`)).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    expect(breaker.isOpen).toBe(false);
  }, 30_000);

  test('a single long query on a live server does not open it (the probe answers)', async () => {
    const direct = pool(db.url);
    const breaker = guardPool(direct, { probeUrl: db.url, name: 'primary', logger: silent, silenceMs: 300 });
    const { rows } = await direct.query<{ ok: boolean }>('select true as ok from pg_sleep(1)');
    expect(rows[0]!.ok).toBe(true);
    expect(breaker.isOpen).toBe(false);
  });

  test('frozen read replica: skipped, the primary serves (200, not 503)', async () => {
    const primary = pool(db.url);
    const reads = createReadPool(
      primary,
      [proxiedUrl],
      { max: 2, role: 'bar_partner', applicationName: 'tests-breaker', ...DEADLINE },
      silent,
    );
    pools.push(reads as Pool);
    const { app } = buildApp(reads as Pool);
    expect((await get(app, `${P}/bars`)).status).toBe(200);
    proxy.freeze();
    const frozenAt = Date.now();
    const results = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const res = await get(app, `${P}/bars`);
        return { status: res.status, after: Date.now() - frozenAt };
      }),
    );
    for (const r of results) {
      expect(r.status).toBe(200);
      expect(r.after).toBeLessThan(DEADLINE.queryTimeoutMs / 2);
    }
    expect((await get(app, `${P}/bars`)).status).toBe(200); // later ones go straight to the primary
  }, 30_000);
});
