/**
 * While the database is unreachable requests get 503 with Retry-After, and the
 * service recovers by itself when it returns. The partner pool connects
 * through a small TCP proxy this test cuts and restores (the machine's
 * PostgreSQL is never touched).
 */
import net from 'node:net';
import type { Express } from 'express';
import { createPool, type Pool } from '../../server/db/pools';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { get } from '../support/openapi';
import { buildApp } from '../support/partner-app';

/** A TCP forwarder to host:port that can be cut (listener closed, live connections destroyed) and restored on the same port. */
class CuttableProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;
  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}

describe('database unavailable', () => {
  let db: TestDatabase;
  let proxy: CuttableProxy;
  let pool: Pool;
  let app: Express;

  beforeAll(async () => {
    db = await createTestDatabase();
    const url = new URL(db.url);
    proxy = new CuttableProxy({ host: url.hostname, port: Number(url.port || 5432) });
    await proxy.start();
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    pool = createPool(url.toString(), { max: 2, role: 'bar_partner', applicationName: 'tests-availability' });
    ({ app } = buildApp(pool));
  });
  afterAll(async () => {
    await proxy.cut();
    await pool.end().catch(() => undefined);
    await db.drop();
  });

  test('503 with Retry-After while cut, 200 again once the database is back, without a restart', async () => {
    expect((await get(app, `${P}/test_endpoint`)).status).toBe(200);

    await proxy.cut();
    for (let i = 0; i < 3; i++) {
      // the broken idle connection, then refused connects
      const res = await get(app, `${P}/bars`, { 'X-Request-Id': `down-${i}` });
      expect(res.status).toBe(503);
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(res.body).toEqual({ error: 'Service temporarily unavailable, please retry', request_id: `down-${i}` });
    }

    await proxy.start();
    const back = await get(app, `${P}/bars`);
    expect(back.status).toBe(200);
    expect(back.body).toEqual({ bars: [] });
  });
});
