/**
 * GET export/bars and GET export/events (decisions.md "Bulk export and
 * incremental sync"; docs/EXPORT.md) against a seeded database, through a real
 * listening server (streams, disconnects and concurrency need real sockets).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { Redis } from 'ioredis';
import { seedDemoData } from '../../db/seed';
import type { Pool } from '../../server/db/pools';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createPartnerApp } from '../../server/http/app';
import { openApiDocument } from '../../server/openapi/document';
import { silentLogger } from '../support/partner';
import { RedisExportSlots } from '../../server/http/routes/export';
import { TEST_PARTNER, buildApp, testGuard } from '../support/partner-app';
import { describeWithRedis, redisUrl } from '../support/redis';
import { testClock } from '../support/clock';
import { waitFor } from '../support/wait';

const PREFIX = '/api/v1/partner';
const BARS = 1500;

let db: TestDatabase;
let partnerPool: Pool;
let server: http.Server;
let port: number;

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  text: string;
}

/** A whole response. */
function get(path: string, headers: Record<string, string> = {}, to = port): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: to, path: `${PREFIX}${path}`, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = (res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, raw, text });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** A response whose body is left unread after the first chunk (the server's writes back up). */
function startPaused(
  path: string,
  to = port,
): Promise<{ res: http.IncomingMessage; req: http.ClientRequest; first: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: to, path: `${PREFIX}${path}`, agent: false }, (res) => {
      res.once('data', (c: Buffer) => {
        res.pause();
        resolve({ res, req, first: c.toString('utf8') });
      });
      res.on('error', () => undefined);
    });
    req.on('error', (e) => (req.destroyed ? undefined : reject(e)));
  });
}

/** Reads the rest of a paused response. */
function finishReading(p: { res: http.IncomingMessage; first: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = p.first;
    p.res.setEncoding('utf8');
    p.res.on('data', (c: string) => (body += c));
    p.res.on('end', () => resolve(body));
    p.res.on('error', reject);
    p.res.resume();
  });
}

type Line = Record<string, unknown> & { type: string };
const parse = (text: string): Line[] =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);
const endOf = (lines: Line[]) => {
  const end = lines[lines.length - 1]!;
  expect(end.type).toBe('end');
  return end as Line & { count: number; next_updated_since: string };
};
const barsOf = (lines: Line[]) =>
  lines.filter((l) => l.type === 'bar').map((l) => l.bar as Record<string, unknown> & { id: string });

/** Every line of an export matches the OpenAPI document's line schema of its path. */
function expectDocumented(path: '/export/bars' | '/export/events', lines: Line[]): void {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(openApiDocument as object, 'openapi.json');
  const pointer = `/paths/${path.replace(/\//g, '~1')}/get/responses/200/content/application~1x-ndjson/schema`;
  const validate = ajv.compile({ $ref: `openapi.json#${pointer}` });
  for (const line of lines) {
    if (!validate(line)) throw new Error(`${JSON.stringify(line).slice(0, 200)}: ${ajv.errorsText(validate.errors)}`);
  }
}

async function sql<T = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> {
  return (await db.owner.query(text, values)).rows as T[];
}

async function exportActivity(): Promise<{ state: string; query: string }[]> {
  return sql(
    `select state, query from pg_stat_activity
     where datname = current_database() and pid <> pg_backend_pid()
       and (query ilike 'fetch%' or query ilike '%export_bars%') and state <> 'idle'`,
  );
}

const SEED_ANCHOR = new Date('2026-11-20T12:00:00Z');

beforeAll(async () => {
  db = await createTestDatabase();
  // Export watermarks are the database's real commit times, so the seed's updated_at must lie before
  // them: its anchor is a fixed instant in the past (not TEST_CLOCK, which may be ahead of the real time).
  await seedDemoData(db.url, { bars: BARS, seed: 3, now: SEED_ANCHOR });
  await new Promise((r) => setTimeout(r, 1100)); // the seed's updated_at lies before any watermark below
  partnerPool = db.partnerPool();
  const { app } = buildApp(partnerPool);
  server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
}, 120_000);

afterAll(async () => {
  if (server) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
  await db?.drop();
});

describe('export/bars', () => {
  test('a city equals bars_by_city (all pages) and GET bars/:id byte for byte, plus updated_at', async () => {
    const [city] = await sql<{ name: string; state: string; n: number }>(
      `select c.name, c.state, count(*)::int as n from private.bars b join private.cities c on c.id = b.city_id
       group by c.id order by count(*) desc, c.id limit 1`,
    );
    expect(city!.n).toBeGreaterThan(100); // more than one page of bars_by_city
    const exported = await get(`/export/bars?state=${city!.state}&city=${encodeURIComponent(city!.name)}`);
    expect(exported.status).toBe(200);
    expect(exported.headers['content-type']).toMatch(/^application\/x-ndjson/);
    const lines = parse(exported.text);
    const bars = barsOf(lines);
    expect(endOf(lines).count).toBe(bars.length);

    const listed: Record<string, unknown>[] = [];
    for (let page = 1; ; page++) {
      const r = await get(
        `/bars_by_city/${city!.state}/${encodeURIComponent(city!.name)}?per_page=100&page=${page}`,
        {},
      );
      const body = JSON.parse(r.text) as { bars: Record<string, unknown>[] };
      listed.push(...body.bars);
      if (body.bars.length < 100) break;
    }
    expect(bars.length).toBe(city!.n);
    expect(bars.map((b) => b.id).sort()).toEqual(listed.map((b) => b.id as string).sort());
    const byId = new Map(bars.map((b) => [b.id, b]));
    for (const l of listed) {
      const e = byId.get(l.id as string)!;
      for (const [key, value] of Object.entries(l)) {
        if (key === 'occupancy') {
          const o = value as Record<string, unknown>;
          const eo = e.occupancy as Record<string, unknown>;
          expect([eo.current_intensity, eo.status]).toEqual([o.current_intensity, o.status]);
        } else expect([key, JSON.stringify(e[key])]).toEqual([key, JSON.stringify(value)]);
      }
      expect(typeof e.updated_at).toBe('string');
    }
    // The detail form without events, byte for byte (the raw text of the lines).
    const rawLines = exported.text.split('\n').filter((l) => l.startsWith('{"type":"bar"'));
    for (const raw of rawLines.slice(0, 25)) {
      const id = (JSON.parse(raw) as { bar: { id: string } }).bar.id;
      const detail = (await get(`/bars/${id}`)).text;
      const exportedBody = raw.slice('{"type":"bar","bar":'.length).replace(/, "updated_at" : "[^"]+"\}\}$/, '');
      const detailBody = detail.slice('{"bar" : '.length).replace(/, "events" : \[.*\]\}\}$/, '');
      expect(exportedBody).toBe(detailBody);
      expect(exportedBody.length).toBeGreaterThan(500);
    }
  });

  test('all bars: the seed count, in id order, ended by count and watermark', async () => {
    const r = await get('/export/bars');
    const lines = parse(r.text);
    const bars = barsOf(lines);
    const [{ n }] = (await sql<{ n: number }>('select count(*)::int as n from private.bars')) as [{ n: number }];
    expect(bars.length).toBe(n);
    expect(n).toBe(BARS);
    expect(endOf(lines).count).toBe(n);
    expect(new Set(bars.map((b) => b.id)).size).toBe(n);
    expect(endOf(lines).next_updated_since).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    expectDocumented('/export/bars', lines);
  });

  test('updated_since: exactly the bars whose hours, categories, photos or name changed, and the deleted one', async () => {
    const watermark = endOf(parse((await get('/export/bars?state=TX')).text)).next_updated_since;
    const ids = (await sql<{ id: string }>('select id::text from private.bars order by id limit 7 offset 100')).map(
      (r) => r.id,
    );
    const [hours, category, photo, rename, removed, occupancy, untouched] = ids as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    await sql(`update private.opening_hours set closes = '23:17' where bar_id = $1`, [hours]);
    await sql(
      `insert into private.bar_categories (bar_id, category_id, position)
       select $1, k.id, 9 from private.categories k
       where not exists (select from private.bar_categories bc where bc.bar_id = $1 and bc.category_id = k.id)
       order by k.id limit 1`,
      [category],
    );
    await sql(`insert into private.photos (bar_id, url, position) values ($1, 'https://example.com/new.jpg', 9)`, [
      photo,
    ]);
    await sql(`update private.bars set name = name || ' (renamed)' where id = $1`, [rename]);
    await sql('delete from private.bars where id = $1', [removed]);
    await sql('update private.occupancy set current_intensity = (current_intensity + 7) % 100 where bar_id = $1', [
      occupancy,
    ]);
    await sql('update private.bars set name = name where id = $1', [untouched]); // no exported field changed

    const r = await get(`/export/bars?updated_since=${encodeURIComponent(watermark)}`);
    expect(r.status).toBe(200);
    const lines = parse(r.text);
    expect(barsOf(lines).map((b) => b.id)).toEqual([hours, category, photo, rename]); // (updated_at, id) order
    expect(lines.filter((l) => l.type === 'deleted')).toEqual([
      { type: 'deleted', kind: 'bar', id: removed, deleted_at: expect.stringMatching(/Z$/) },
    ]);
    expect(endOf(lines).count).toBe(5);
    expectDocumented('/export/bars', lines);
    const renamed = barsOf(lines).find((b) => b.id === rename)!;
    expect(renamed.name).toMatch(/\(renamed\)$/);
    expect(Date.parse(renamed.updated_at as string)).toBeGreaterThanOrEqual(Date.parse(watermark));
  });

  test('a change committed while an export runs is in the next export from its watermark', async () => {
    const [a, b] = (await sql<{ id: string }>('select id::text from private.bars order by id limit 2 offset 300')).map(
      (r) => r.id,
    ) as [string, string];
    // A writer that began before the export and commits while it streams (its updated_at is its start).
    const writer = await db.owner.connect();
    await writer.query('begin');
    await writer.query(`update private.bars set name = name || ' *' where id = $1`, [a]);
    const running = await startPaused('/export/bars');
    await writer.query('commit');
    writer.release();
    await sql(`update private.bars set phone = '(512) 555-0199' where id = $1`, [b]); // begins and commits during it
    const first = parse(await finishReading(running));
    const firstA = barsOf(first).find((x) => x.id === a)!;
    expect(firstA.name).not.toMatch(/ \*$/); // not visible to the export's snapshot
    const next = parse((await get(`/export/bars?updated_since=${endOf(first).next_updated_since}`)).text);
    const nextIds = barsOf(next).map((x) => x.id);
    expect(nextIds).toEqual(expect.arrayContaining([a, b]));
    expect(barsOf(next).find((x) => x.id === a)!.name).toMatch(/ \*$/);
  });

  test('a client that disconnects mid-stream ends the query and returns the connection', async () => {
    // One line per FETCH: the export of 1,500 bars takes 1,500 round trips, so it is mid-stream when the client goes.
    const pool = db.partnerPool();
    const slow = http.createServer(
      createPartnerApp({
        config: { env: 'test' },
        logger: silentLogger,
        pool,
        guard: [testGuard],
        clock: testClock,
        export: { batch: 1 },
      }),
    );
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    try {
      const p = await startPaused('/export/bars', (slow.address() as AddressInfo).port);
      expect(p.res.statusCode).toBe(200);
      expect(await waitFor(async () => (await exportActivity()).length > 0, 5000)).toBe(true); // cursor open, fetching
      p.req.destroy();
      expect(await waitFor(async () => (await exportActivity()).length === 0, 5000)).toBe(true);
      expect(await waitFor(async () => pool.totalCount > 0 && pool.totalCount === pool.idleCount, 5000)).toBe(true);
      expect(p.first).not.toMatch(/"type":"end"/);
    } finally {
      slow.closeAllConnections();
      await new Promise((r) => slow.close(r));
    }
  });

  test('a third concurrent export of one key is a 429 (period "concurrent"); a finished one frees its slot', async () => {
    // Two exports wait on a lock (holding their slots) while the third asks.
    const locker = await db.owner.connect();
    await locker.query('begin');
    await locker.query('lock table private.occupancy in access exclusive mode');
    const one = get('/export/bars?state=TX');
    const two = get('/export/bars?state=TX');
    const waiting = async () =>
      (
        await sql(
          `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'
           and query ilike '%export_bars%'`,
        )
      ).length === 2;
    expect(await waitFor(waiting, 5000)).toBe(true);
    const three = await get('/export/bars?state=TX');
    await locker.query('commit');
    locker.release();
    expect(three.status).toBe(429);
    expect(JSON.parse(three.text)).toMatchObject({ error: 'Rate limit exceeded', limit: 2, period: 'concurrent' });
    expect(three.headers['retry-after']).toBeDefined();
    for (const r of await Promise.all([one, two])) {
      expect(r.status).toBe(200);
      expect(parse(r.text).pop()!.type).toBe('end');
    }
    expect((await get('/export/bars?state=TX&city=Austin')).status).toBe(200); // slots released
  });

  test('Accept must admit application/x-ndjson (406); JSON endpoints still refuse it', async () => {
    for (const accept of ['*/*', 'application/*', 'application/x-ndjson', 'application/x-ndjson;q=0.5, text/html'])
      expect([accept, (await get('/export/bars?state=TX&city=Austin', { Accept: accept })).status]).toEqual([
        accept,
        200,
      ]);
    for (const accept of ['application/json', 'text/plain', 'application/x-ndjson;q=0'])
      expect([accept, (await get('/export/bars?state=TX&city=Austin', { Accept: accept })).status]).toEqual([
        accept,
        406,
      ]);
    expect((await get('/bars/1', { Accept: 'application/x-ndjson' })).status).toBe(406);
  });

  test('gzip when Accept-Encoding asks', async () => {
    const plain = await get('/export/bars?state=TX');
    const zipped = await get('/export/bars?state=TX', { 'Accept-Encoding': 'gzip' });
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(zipped.raw.length).toBeLessThan(plain.raw.length / 4);
    expect(barsOf(parse(zipped.text)).map((b) => b.id)).toEqual(barsOf(parse(plain.text)).map((b) => b.id));
  });

  test('bad parameters are 400, an unknown city 404', async () => {
    for (const q of [
      'foo=1',
      'city=Austin',
      'state=Texas',
      'updated_since=yesterday',
      'updated_since=2026-11-22',
      'state=TX&state=CA',
    ]) {
      const r = await get(`/export/bars?${q}`);
      expect([q, r.status]).toEqual([q, 400]);
      expect(JSON.parse(r.text)).toHaveProperty('error');
    }
    expect((await get('/export/events?start_date=2026-02-30')).status).toBe(400);
    expect((await get('/export/events?state=TX&city=Austin&start_date=2026-12-02&end_date=2026-12-01')).status).toBe(
      400,
    );
    expect((await get('/export/bars?state=TX&city=Nowhere')).status).toBe(404);
  });
});

describe('export/events', () => {
  test('a city: every event of the city in the full form plus updated_at; updated_since reports changes and deletions', async () => {
    const [city] = await sql<{ name: string; state: string; n: number }>(
      `select c.name, c.state, count(*)::int as n from private.events e join private.cities c on c.id = e.city_id
       group by c.id order by count(*) desc, c.id limit 1`,
    );
    // Changes of the tests above lie more than the watermark's 1 s margin back (inside it they would come again).
    await new Promise((r) => setTimeout(r, 1100));
    const path = `/export/events?state=${city!.state}&city=${encodeURIComponent(city!.name)}`;
    const lines = parse((await get(path)).text);
    const events = lines.filter((l) => l.type === 'event').map((l) => l.event as Record<string, unknown>);
    expect(events.length).toBe(city!.n);
    expect(Object.keys(events[0]!)).toEqual([
      'id',
      'title',
      'description',
      'classification',
      'start_at',
      'end_at',
      'created_at',
      'bar',
      'updated_at',
    ]);
    const watermark = endOf(lines).next_updated_since;
    const [changed, removed] = events.map((e) => e.id as string);
    await sql(`update private.events set title = title || ' (moved)' where id = $1`, [changed]);
    await sql('delete from private.events where id = $1', [removed]);
    const next = parse((await get(`${path}&updated_since=${watermark}`)).text);
    expect(next.filter((l) => l.type === 'event').map((l) => (l.event as { id: string }).id)).toEqual([changed]);
    expect(next.filter((l) => l.type === 'deleted')).toEqual([
      { type: 'deleted', kind: 'event', id: removed, deleted_at: expect.any(String) },
    ]);
    expectDocumented('/export/events', [...lines, ...next]);
  });
});

describe('export/events filters', () => {
  test('state and dates without a city (functions run inlined while bar_partner FETCHes)', async () => {
    const [{ n }] = (await sql<{ n: number }>(
      `select count(*)::int as n from private.events e join private.cities c on c.id = e.city_id
       where c.state = 'TX' and e.start_at >= (date '2000-01-01')::timestamp at time zone c.time_zone`,
    )) as [{ n: number }];
    const r = await get('/export/events?state=tx&start_date=2000-01-01');
    expect(r.status).toBe(200);
    const lines = parse(r.text);
    expect(endOf(lines).count).toBe(n);
    expect(n).toBeGreaterThan(0);
    const none = parse((await get('/export/events?start_date=2000-01-01&end_date=2000-01-02')).text);
    expect(endOf(none).count).toBe(0);
  });
});

describeWithRedis('export slots in Redis', () => {
  test('two instances sharing Redis allow 2 concurrent exports per key between them', async () => {
    const prefix = `test:export:${Date.now()}:`;
    const clients = [new Redis(redisUrl!), new Redis(redisUrl!)];
    const servers = clients.map((redis) =>
      http.createServer(
        createPartnerApp({
          config: { env: 'test' },
          logger: silentLogger,
          pool: partnerPool,
          guard: [testGuard],
          clock: testClock,
          export: { slots: new RedisExportSlots(redis, { prefix }) },
        }),
      ),
    );
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
    const [a, b] = servers.map((s) => (s.address() as AddressInfo).port) as [number, number];
    const locker = await db.owner.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table private.occupancy in access exclusive mode');
      const one = get('/export/bars?state=TX', {}, a);
      const two = get('/export/bars?state=TX', {}, b);
      expect(
        await waitFor(
          async () =>
            (
              await sql(
                `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'
                 and query ilike '%export_bars%'`,
              )
            ).length === 2,
          5000,
        ),
      ).toBe(true);
      const third = await get('/export/bars?state=TX', {}, a); // this instance runs one: the key runs two
      expect(third.status).toBe(429);
      expect(JSON.parse(third.text)).toMatchObject({ period: 'concurrent', limit: 2 });
      await locker.query('commit');
      expect((await Promise.all([one, two])).map((r) => r.status)).toEqual([200, 200]);
      expect(await clients[0]!.zcard(`${prefix}${TEST_PARTNER.keyId}`)).toBe(0); // released
      expect((await get('/export/bars?state=TX&city=Austin', {}, b)).status).toBe(200);
    } finally {
      locker.release();
      for (const s of servers) {
        s.closeAllConnections();
        await new Promise((r) => s.close(r));
      }
      for (const c of clients) c.disconnect();
    }
  });
});
