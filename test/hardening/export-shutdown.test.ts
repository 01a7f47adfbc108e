/**
 * Issue 22: an export running when the shutdown cannot wait any longer (the
 * `stop` signal main.ts aborts before the drain's deadline) ends its stream
 * cleanly without the end line, so the consumer knows to resume from its last
 * watermark, and the server logs it; the connection is not destroyed mid-line.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { createPartnerApp } from '../../server/http/app';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { testGuard } from '../support/partner-app';

describe('exports on shutdown', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    await f.bar(city, { name: 'Bar 0' });
    await db.owner.query(
      `insert into private.bars (city_id, name, address, latitude, longitude)
       select b.city_id, 'Bar ' || g, b.address, b.latitude, b.longitude from private.bars b, generate_series(1, 1999) g`,
    );
  });
  afterAll(() => db.drop());

  test('a slow export is ended cleanly without its end line, and logged', async () => {
    const logged: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const stop = new AbortController();
    const pool = db.partnerPool();
    const server = http.createServer(
      createPartnerApp({
        config: { env: 'test' },
        logger,
        pool,
        guard: [testGuard],
        export: { batch: 1, stop: stop.signal },
      }),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const result = await new Promise<{ lines: string[]; aborted: boolean; error?: string }>((resolve) => {
        http.get({ host: '127.0.0.1', port, path: '/api/v1/partner/export/bars' }, (res) => {
          let text = '';
          let n = 0;
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            text += c;
            // the shutdown's deadline comes as soon as the first lines have arrived (one line per FETCH)
            if (++n === 1) stop.abort();
          });
          res.on('end', () => resolve({ lines: text.trim().split('\n'), aborted: res.destroyed && !res.complete }));
          res.on('error', (e) => resolve({ lines: text.trim().split('\n'), aborted: true, error: e.message }));
        });
      });
      expect(result.error).toBeUndefined();
      expect(result.aborted).toBe(false);
      const parsed = result.lines.map((l) => JSON.parse(l) as { type: string });
      expect(parsed.length).toBeGreaterThan(0);
      expect(parsed.length).toBeLessThan(2000); // not all 2,000 bars
      expect(parsed.some((l) => l.type === 'end')).toBe(false);
      expect(logged.map((l) => l.msg)).toContain(
        'export ended by the shutdown without its end line (the client resumes)',
      );
      // the pooled connection came back (the transaction was rolled back)
      expect(pool.totalCount - pool.idleCount).toBe(0);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
