/**
 * The request log (decisions.md v1.3 "Request log"): 4xx/5xx answers kept in
 * PostgreSQL in batches (REQUEST_LOG=errors|all|off), GET usage/requests with
 * its filters and cursor pages, partner isolation, 401s without a subscriber,
 * key redaction, the bounds (1,000 entries a key and minute, the first 429)
 * and their counter (partner_request_log_capped_total),
 * the buffer and its drop counter with PostgreSQL frozen, close() writing the
 * buffer, the daily partitions, and every 400 path of usage/requests.
 */
import express from 'express';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { loadConfig } from '../../server/config';
import { createPool, type Pool } from '../../server/db/pools';
import { createPartnerApp } from '../../server/http/app';
import { metricsText } from '../../server/metrics';
import { redactKeys, redactText, RequestLog, storable, type RequestLogEntry } from '../../server/usage/request-log';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { FreezableProxy } from '../support/freezable-proxy';
import { validateResponse } from '../support/openapi';
import { testNow } from '../support/clock';
import pino from 'pino';
import { bearer, createPlan, issueKey, silentLogger, startPartner, type PartnerInstance } from '../support/partner';

const P = '/api/v1/partner';
const REQUESTS = `${P}/usage/requests`;
const KEY = `pbk_${'A'.repeat(20)}${'b_-9'.repeat(5)}xyz`; // key-shaped: pbk_ + 43 base64url characters

interface Entry {
  request_id: string;
  created_at: string;
  key_prefix: string | null;
  method: string;
  path: string;
  endpoint: string;
  status: number;
  error: string | null;
  duration_ms: number;
  client_ip: string | null;
}

function appWith(partner: PartnerInstance, log: RequestLog): express.Express {
  return createPartnerApp({
    config: { env: 'test' },
    logger: silentLogger,
    pool: partner.pool,
    guard: partner.guard.handlers,
    requestLog: log,
  });
}

async function list(app: express.Express, apiKey: string, query = '') {
  const url = `${REQUESTS}${query ? `?${query}` : ''}`;
  const res = await request(app).get(url).set(bearer(apiKey));
  validateResponse('GET', url, { status: res.status, headers: res.headers as Record<string, string>, text: res.text });
  return res;
}

/** partner_request_log_capped_total{reason} in this process's /metrics. */
async function capped(reason: string): Promise<number> {
  const m = new RegExp(`^partner_request_log_capped_total\\{reason="${reason}"[^}]*\\} (\\d+)`, 'm');
  return Number(m.exec((await metricsText()).body)?.[1] ?? 0);
}

describe('request log through the partner app', () => {
  let db: TestDatabase;
  let partner: PartnerInstance;
  let log: RequestLog;
  let app: express.Express;

  beforeAll(async () => {
    db = await createTestDatabase();
    partner = await startPartner(db);
    log = new RequestLog({ pool: partner.pool, logger: silentLogger, flushEveryMs: 60_000 });
    app = appWith(partner, log);
  });
  afterAll(async () => {
    await log?.close();
    await partner?.close();
    await db?.drop();
  });

  test('4xx answers are kept with their fields, 2xx are not (errors mode); newest first; within one flush', async () => {
    const { apiKey, subscriberId } = await issueKey(db.owner);
    await request(app).get(`${P}/test_endpoint`).set(bearer(apiKey)).expect(200);
    const bad = await request(app)
      .get(`${P}/bars?limit=abc`)
      .set(bearer(apiKey))
      .set('X-Request-Id', 'bad-limit-1')
      .expect(400);
    await request(app).get(`${P}/bars/00000000-0000-0000-0000-000000000000`).set(bearer(apiKey)).expect(404);
    expect(log.pending).toBe(2);
    await log.flush();
    expect(log.pending).toBe(0);

    const res = await list(app, apiKey);
    expect(res.status).toBe(200);
    expect(res.body.next_cursor).toBeNull();
    const entries = res.body.requests as Entry[];
    expect(entries.map((e) => e.status)).toEqual([404, 400]);
    expect(entries[1]).toEqual({
      request_id: 'bad-limit-1',
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
      key_prefix: apiKey.slice(0, entries[1]!.key_prefix!.length),
      method: 'GET',
      path: '/api/v1/partner/bars?limit=abc',
      endpoint: 'bars',
      status: 400,
      error: bad.body.error,
      duration_ms: expect.any(Number),
      client_ip: expect.any(String),
    });
    expect(entries[0]!.endpoint).toBe('bars/:id');
    // the subscriber is recorded from the key
    const { rows } = await db.owner.query('select subscriber_id from admin.request_log where request_id = $1', [
      'bad-limit-1',
    ]);
    expect(rows).toEqual([{ subscriber_id: subscriberId }]);
  });

  test('filters: status, status class, endpoint, request_id, since/until', async () => {
    const { apiKey } = await issueKey(db.owner);
    await request(app).get(`${P}/bars?limit=0`).set(bearer(apiKey)).set('X-Request-Id', 'f-400').expect(400);
    await request(app).get(`${P}/nothing_here`).set(bearer(apiKey)).set('X-Request-Id', 'f-404').expect(404);
    await log.flush();
    const ids = async (q: string) => ((await list(app, apiKey, q)).body.requests as Entry[]).map((e) => e.request_id);
    expect(await ids('status=400')).toEqual(['f-400']);
    expect(await ids('status=4xx')).toEqual(['f-404', 'f-400']);
    expect(await ids('status=5xx')).toEqual([]);
    expect(await ids('endpoint=bars')).toEqual(['f-400']);
    expect(await ids('endpoint=(none)')).toEqual(['f-404']);
    expect(await ids('request_id=f-404')).toEqual(['f-404']);
    // real time: entries carry the real instant they were answered at
    expect(await ids(`since=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);
    expect(await ids(`until=${new Date(Date.now() - 3600_000).toISOString()}`)).toEqual([]);
    expect(await ids(`since=${new Date(Date.now() - 3600_000).toISOString()}`)).toEqual(['f-404', 'f-400']);
  });

  test('cursor pages: every entry once, newest first, then next_cursor null', async () => {
    const { apiKey } = await issueKey(db.owner);
    for (let i = 0; i < 7; i++)
      await request(app).get(`${P}/bars?limit=x${i}`).set(bearer(apiKey)).set('X-Request-Id', `page-${i}`).expect(400);
    await log.flush();
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await list(app, apiKey, `limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...(res.body.requests as Entry[]).map((e) => e.request_id));
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect(seen).toEqual(['page-6', 'page-5', 'page-4', 'page-3', 'page-2', 'page-1', 'page-0']);
  });

  test("another subscriber's entries are never visible; a foreign request_id finds nothing", async () => {
    const mine = await issueKey(db.owner);
    const other = await issueKey(db.owner);
    const sameSubscriber = await issueKey(db.owner, { subscriberId: mine.subscriberId });
    await request(app).get(`${P}/bars?limit=-1`).set(bearer(other.apiKey)).set('X-Request-Id', 'theirs').expect(400);
    await request(app).get(`${P}/bars?limit=-1`).set(bearer(mine.apiKey)).set('X-Request-Id', 'ours').expect(400);
    await log.flush();
    expect((await list(app, mine.apiKey, 'request_id=theirs')).body.requests).toEqual([]);
    const all = (await list(app, mine.apiKey)).body.requests as Entry[];
    expect(all.map((e) => e.request_id)).toEqual(['ours']);
    // every key of the subscriber sees the subscriber's entries
    expect(((await list(app, sameSubscriber.apiKey)).body.requests as Entry[]).map((e) => e.request_id)).toEqual([
      'ours',
    ]);
    expect(((await list(app, other.apiKey)).body.requests as Entry[]).map((e) => e.request_id)).toEqual(['theirs']);
  });

  test('a 401 (no valid key) is kept without subscriber (operators only); a 405 before the guard is not', async () => {
    await request(app).get(`${P}/bars`).set('X-Request-Id', 'no-key-401').expect(401);
    await request(app).get(`${P}/bars`).set(bearer(KEY)).set('X-Request-Id', 'unknown-key-401').expect(401);
    await request(app).delete(`${P}/bars`).set('X-Request-Id', 'delete-405').expect(405);
    await log.flush();
    const { rows } = await db.owner.query(
      `select request_id, subscriber_id, api_key_id, key_prefix, status from admin.request_log
        where request_id in ('no-key-401', 'unknown-key-401', 'delete-405') order by request_id`,
    );
    expect(rows).toEqual([
      { request_id: 'no-key-401', subscriber_id: null, api_key_id: null, key_prefix: null, status: 401 },
      { request_id: 'unknown-key-401', subscriber_id: null, api_key_id: null, key_prefix: null, status: 401 },
    ]);
  });

  test('no entry ever contains a key: key-shaped values in path, query and message are redacted', async () => {
    const { apiKey } = await issueKey(db.owner);
    const urls = [
      `${P}/bars/${KEY}`,
      `${P}/bars?limit=${KEY}`,
      `${P}/bars?api_key=${apiKey}`,
      `${P}/bars?${encodeURIComponent(apiKey)}=1`,
      `${P}/bars?ids=${apiKey.replace('_', '%5F')}`,
      `${P}/bars?ids=%${'70'}bk_${apiKey.slice(4)}`,
      `${P}/search?q=${apiKey.slice(4)}`, // the key without its prefix
    ];
    const all = new RequestLog({ pool: partner.pool, logger: silentLogger, mode: 'all', flushEveryMs: 60_000 });
    const allApp = appWith(partner, all); // the 200s too
    for (const [i, url] of urls.entries())
      await request(allApp).get(url).set(bearer(apiKey)).set('X-Request-Id', `redact-${i}`);
    await all.close();
    const { rows } = await db.owner.query<{ path: string; error: string | null }>(
      `select path, error from admin.request_log where request_id like 'redact-%' order by request_id`,
    );
    expect(rows).toHaveLength(urls.length);
    const secret = apiKey.slice(4, 20);
    for (const row of rows) {
      expect(row.path).not.toContain(secret);
      expect(row.path).not.toContain(KEY.slice(4, 20));
      expect(row.path).toContain('[REDACTED]');
      expect(row.error ?? '').not.toContain(secret);
      expect(row.error ?? '').not.toContain(KEY.slice(4, 20));
    }
  });

  test('REQUEST_LOG=all keeps 2xx too; off keeps nothing', async () => {
    const { apiKey } = await issueKey(db.owner);
    const all = new RequestLog({ pool: partner.pool, logger: silentLogger, mode: 'all', flushEveryMs: 60_000 });
    const off = new RequestLog({ pool: partner.pool, logger: silentLogger, mode: 'off' });
    await request(appWith(partner, all)).get(`${P}/test_endpoint`).set(bearer(apiKey)).expect(200);
    await request(appWith(partner, off)).get(`${P}/bars?limit=x`).set(bearer(apiKey)).expect(400);
    expect(off.pending).toBe(0);
    await all.close();
    await off.close();
    const entries = (await list(app, apiKey)).body.requests as Entry[];
    expect(entries.map((e) => [e.status, e.endpoint])).toEqual([[200, 'test_endpoint']]);
  });

  test('a 4xx flood from one key (pinned clock): 1,000 entries of the minute kept, the rest counted; another key unaffected', async () => {
    const minute = Math.floor(testNow().getTime() / 60_000) * 60_000;
    let now = minute + 30_000;
    await db.owner.query('select private.request_log_maintain($1)', [new Date(now).toISOString()]); // its day
    const plan = await createPlan(db.owner, null);
    const flooder = await issueKey(db.owner, { plan });
    const other = await issueKey(db.owner, { plan });
    const flood = new RequestLog({ pool: partner.pool, logger: silentLogger, flushEveryMs: 3_600_000, now: () => now });
    const server = http.createServer(appWith(partner, flood));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${P}/bars?limit=flood`;
    const before = await capped('minute_cap');
    try {
      const send = async (apiKey: string) => {
        const res = await fetch(url, { headers: bearer(apiKey) }); // keep-alive: 2,500 requests in seconds
        await res.arrayBuffer();
        expect(res.status).toBe(400);
      };
      for (let i = 0; i < 3; i++) await send(other.apiKey);
      let sent = 0;
      const worker = async () => {
        while (sent < 2500) {
          sent++;
          await send(flooder.apiKey);
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      for (let i = 0; i < 3; i++) await send(other.apiKey); // after the flood key's cap: still kept
      expect(flood.pending).toBe(1006);
      expect(flood.capped).toEqual({ minute_cap: 1500, repeat_429: 0, across_instances: 0 });
      expect((await capped('minute_cap')) - before).toBe(1500);
      now = minute + 65_000; // the next minute starts again
      await send(flooder.apiKey);
      expect(flood.pending).toBe(1007);
    } finally {
      await new Promise((r) => server.close(r));
      await flood.close();
    }
    expect(flood.written).toBe(1007);
    expect(flood.capped.across_instances).toBe(0);
    const { rows } = await db.owner.query(
      `select api_key_id, extract(epoch from date_trunc('minute', created_at))::bigint * 1000 as minute,
              count(*)::int as n
         from admin.request_log where api_key_id = any($1) group by 1, 2 order by 2, 3`,
      [[flooder.keyId, other.keyId]],
    );
    expect(rows.map((r) => [r.api_key_id, Number(r.minute), r.n])).toEqual([
      [other.keyId, minute, 6],
      [flooder.keyId, minute, 1000],
      [flooder.keyId, minute + 60_000, 1],
    ]);
  }, 60_000);

  test('429s: only the first of each key and minute is kept', async () => {
    const plan = await createPlan(db.owner, 2);
    const { apiKey } = await issueKey(db.owner, { plan });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++)
      statuses.push((await request(app).get(`${P}/test_endpoint`).set(bearer(apiKey))).status);
    await log.flush();
    const kept = ((await list(app, apiKey, 'status=429')).body.requests as Entry[]).length;
    const answered = statuses.filter((s) => s === 429).length;
    expect(answered).toBeGreaterThanOrEqual(3);
    // one per minute the 429s fell in (they may straddle a minute boundary)
    expect(kept).toBeGreaterThanOrEqual(1);
    expect(kept).toBeLessThanOrEqual(2);
  });
});

describe('usage/requests: bad input', () => {
  let db: TestDatabase;
  let partner: PartnerInstance;
  let apiKey: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    partner = await startPartner(db);
    ({ apiKey } = await issueKey(db.owner));
  });
  afterAll(async () => {
    await partner?.close();
    await db?.drop();
  });

  test.each([
    ['status=abc', /^status must be a status code/],
    ['status=600', /^status must be a status code/],
    ['status=4XXX', /^status must be a status code/],
    ['endpoint=nope', /^endpoint must be one of/],
    ['request_id=', /^request_id must be 1 to 128 characters/],
    [`request_id=${'r'.repeat(129)}`, /^request_id must be 1 to 128 characters/],
    ['since=yesterday', /^since must be an ISO 8601 date-time/],
    ['until=2026-11-25', /^until must be an ISO 8601 date-time/],
    ['limit=0', /^limit must be an integer between 1 and 200/],
    ['limit=201', /^limit must be an integer between 1 and 200/],
    ['limit=ten', /^limit must be an integer between 1 and 200/],
    ['cursor=abc', /^cursor is not valid/],
    [`cursor=${Buffer.from('2026-02-30T00:00:00.000000Z|5').toString('base64url')}`, /^cursor is not valid/],
    ['cursor=%00', /./],
    ['status=400&status=404', /status/],
    [
      'page=2',
      /unknown parameter "page"; usage\/requests accepts status, endpoint, request_id, since, until, limit, cursor/,
    ],
  ])('%s: 400 naming the parameter', async (query, message) => {
    const res = await request(partner.app).get(`${REQUESTS}?${query}`).set(bearer(apiKey)).expect(400);
    expect(res.body.error).toMatch(message);
  });

  test('no key: 401', async () => {
    await request(partner.app).get(REQUESTS).expect(401);
  });
});

describe('api.record_requests: bounds across batches (and instances)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  const entry = (keyId: string | null, status: number, at: string, i: number): RequestLogEntry => ({
    request_id: `b-${i}`,
    created_at: at,
    api_key_id: keyId,
    method: 'GET',
    path: '/api/v1/partner/bars',
    endpoint: 'bars',
    status,
    error: 'x',
    duration_ms: 1.5,
    client_ip: '10.0.0.1',
  });

  test('at most 1,000 entries a key and minute, one 429; the next minute starts again', async () => {
    const { keyId } = await issueKey(db.owner);
    await db.owner.query(`select private.request_log_maintain('2026-11-25T10:00:00Z')`); // its partitions
    const at = (s: number) => new Date(Date.parse('2026-11-25T10:00:00Z') + s).toISOString();
    const store = async (rows: RequestLogEntry[]) =>
      (await db.partnerPool().query('select api.record_requests($1) as n', [JSON.stringify(rows)])).rows[0].n;
    const first = Array.from({ length: 600 }, (_, i) => entry(keyId, i % 100 === 0 ? 429 : 400, at(i * 10), i));
    expect(await store(first)).toBe(595); // 594 400s + the first 429
    const second = Array.from({ length: 600 }, (_, i) => entry(keyId, i === 0 ? 429 : 404, at(6000 + i * 10), i));
    expect(await store(second)).toBe(405); // 1,000 in all; the second batch's 429 is not the minute's first
    expect(await store([entry(keyId, 400, at(60_000), 1), entry(keyId, 429, at(60_001), 2)])).toBe(2);
    const { rows } = await db.owner.query(
      `select date_trunc('minute', created_at) m, count(*)::int n, count(*) filter (where status = 429)::int r
         from admin.request_log where api_key_id = $1 group by 1 order by 1`,
      [keyId],
    );
    expect(rows.map((r) => [r.n, r.r])).toEqual([
      [1000, 1],
      [2, 1],
    ]);
    // without a key: bounded per client address
    const anon = Array.from({ length: 1005 }, (_, i) => entry(null, 401, at(120_000 + i), i));
    expect(await store(anon)).toBe(1000);
  });

  test('two instances of one key in one minute: 1,000 stored in all, the rest counted as capped across instances', async () => {
    const { keyId } = await issueKey(db.owner);
    await db.owner.query(`select private.request_log_maintain('2026-11-25T11:00:00Z')`);
    const at = new Date(Date.parse('2026-11-25T11:00:30Z')).toISOString();
    const before = await capped('across_instances');
    const [a, b] = [1, 2].map(
      () => new RequestLog({ pool: db.partnerPool(), logger: silentLogger, flushEveryMs: 3_600_000 }),
    );
    for (let i = 0; i < 600; i++) a!.add(entry(keyId, 404, at, i));
    for (let i = 0; i < 600; i++) b!.add(entry(keyId, 404, at, 600 + i));
    await a!.close();
    await b!.close();
    expect([a!.written, b!.written]).toEqual([600, 400]);
    expect([a!.capped.across_instances, b!.capped.across_instances]).toEqual([0, 200]);
    expect((await capped('across_instances')) - before).toBe(200);
  });

  test('a batch PostgreSQL refuses (not a connection problem) is dropped and counted, not retried forever', async () => {
    const log = new RequestLog({ pool: db.partnerPool(), logger: silentLogger, flushEveryMs: 60_000 });
    log.add({ ...entry(null, 401, 'not a time', 1), request_id: 'refused' });
    await log.flush();
    expect(log.pending).toBe(0);
    expect(log.dropped).toBe(1);
    const m = /partner_request_log_dropped_total\{reason="write_error"[^}]*\} (\d+)/.exec((await metricsText()).body);
    expect(Number(m?.[1])).toBeGreaterThanOrEqual(1);
    await log.close();
  });

  test('partitions: a week ahead, whole days dropped after 30 days (pinned clock)', async () => {
    const part = async (now: string) =>
      (await db.owner.query('select private.request_log_maintain($1) as r', [now])).rows[0].r;
    const names = async () =>
      (
        await db.owner.query<{ relname: string }>(
          `select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
            where i.inhparent = 'admin.request_log'::regclass order by 1`,
        )
      ).rows.map((r) => r.relname);
    const created = await part('2030-01-10T12:00:00Z');
    expect(created.created).toEqual(['09', '10', '11', '12', '13', '14', '15', '16', '17'].map((d) => `p203001${d}`));
    await db.owner.query(
      `insert into admin.request_log (created_at, request_id, method, path, endpoint, status, duration_ms)
       values ('2030-01-09T23:59:59Z', 'old', 'GET', '/', '(none)', 401, 1)`,
    );
    const later = await part('2030-02-09T00:00:00Z'); // 2030-01-09 is now 31 days old
    expect(later.dropped).toEqual(expect.arrayContaining(['p20300109']));
    expect(later.dropped).not.toContain('p20300110');
    expect(await names()).not.toContain('p20300109');
    expect(await names()).toContain('p20300110');
    const { rows } = await db.owner.query(`select count(*)::int n from admin.request_log where request_id = 'old'`);
    expect(rows[0].n).toBe(0);
  });
});

describe('request log buffer with PostgreSQL frozen', () => {
  let db: TestDatabase;
  let proxy: FreezableProxy;
  let pool: Pool;

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
      applicationName: 'tests-request-log-freeze',
      statementTimeoutMs: 500,
      queryTimeoutMs: 800,
    });
  });
  afterAll(async () => {
    await pool.end().catch(() => undefined);
    await proxy.stop();
    await db.drop();
  });

  const entry = (i: number): RequestLogEntry => ({
    request_id: `frozen-${i}`,
    // real time: entries carry the real instant they were answered at
    created_at: new Date().toISOString(),
    api_key_id: null,
    method: 'GET',
    path: '/api/v1/partner/bars',
    endpoint: 'bars',
    status: 401,
    error: 'Missing API key',
    duration_ms: 0.5,
    client_ip: `10.1.${Math.floor(i / 200)}.${i % 200}`,
  });
  const dropped = async () => {
    const m = /partner_request_log_dropped_total\{reason="buffer_full"[^}]*\} (\d+)/.exec((await metricsText()).body);
    return Number(m?.[1] ?? 0);
  };

  test('adding never waits; what does not fit is dropped and counted; nothing buffered is lost after the thaw', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const log = new RequestLog({ pool, logger, maxBuffer: 50, batchSize: 20, flushEveryMs: 100 });
    const before = await dropped();
    proxy.freeze();
    // 80 entries added synchronously (add returns nothing to wait for) while the database is frozen
    const returned = Array.from({ length: 80 }, (_, i) => log.add(entry(i)));
    expect(returned.every((r) => r === undefined)).toBe(true);
    expect(log.pending + log.dropped).toBe(80); // every one placed or dropped before any await
    await new Promise((r) => setTimeout(r, 1200)); // writes time out meanwhile (query deadline 800 ms)
    expect(log.pending).toBe(50);
    expect(log.dropped).toBe(30);
    expect((await dropped()) - before).toBe(30);
    // logged: the drops (once per 10 s at most) and the failed writes
    expect(lines.find((l) => /entries dropped/.test(String(l.msg)))).toMatchObject({ reason: 'buffer_full' });
    expect(lines.some((l) => /write failed; will retry/.test(String(l.msg)))).toBe(true);
    proxy.thaw();
    await log.close();
    expect(log.pending).toBe(0);
    const { rows } = await db.owner.query(
      `select count(*)::int n from admin.request_log where request_id like 'frozen-%'`,
    );
    expect(rows[0].n).toBe(50);
  });

  test('the partner app answers while the log cannot write', async () => {
    const partner = await startPartner(db);
    const log = new RequestLog({ pool, logger: silentLogger, flushEveryMs: 50 });
    const app = appWith(partner, log);
    proxy.freeze();
    try {
      const started = Date.now();
      for (let i = 0; i < 5; i++) await request(app).get(`${P}/bars`).set('X-Request-Id', `f401-${i}`).expect(401);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(log.pending).toBe(5);
    } finally {
      proxy.thaw();
    }
    await log.close();
    await partner.close();
    const { rows } = await db.owner.query(
      `select count(*)::int n from admin.request_log where request_id like 'f401-%'`,
    );
    expect(rows[0].n).toBe(5);
  });
});

describe('REQUEST_LOG', () => {
  test('errors by default; all, errors, off (any case); anything else stops the start naming the variable', () => {
    expect(loadConfig({}).requestLog).toBe('errors');
    expect(loadConfig({ REQUEST_LOG: 'ALL' }).requestLog).toBe('all');
    expect(loadConfig({ REQUEST_LOG: 'off' }).requestLog).toBe('off');
    expect(() => loadConfig({ REQUEST_LOG: 'sometimes' })).toThrow(/^REQUEST_LOG must be all, errors or off/);
  });
});

describe('redaction helpers', () => {
  test.each([
    [`/api/v1/partner/bars/${KEY}`, '/api/v1/partner/bars/[REDACTED]'],
    [`/x?api_key=short`, '/x?api_key=[REDACTED]'],
    [`/x?token=abc&limit=5`, '/x?token=[REDACTED]&limit=5'],
    [`/x?q=${'z'.repeat(40)}`, '/x?q=[REDACTED]'],
    [`/x?q=pbk%5Fabc`, '/x?q=[REDACTED]'],
    [`/x?q=pbo_abc`, '/x?q=[REDACTED]'], // an operator token, or a part of one
    [`/api/v1/partner/pbo_${'T'.repeat(43)}`, '/api/v1/partner/[REDACTED]'],
    [`/x?q=%2570bk_abc`, '/x?q=[REDACTED]'],
    ['/x?limit=5&q=beer', '/x?limit=5&q=beer'],
    ['/api/v1/partner/bars/1234', '/api/v1/partner/bars/1234'],
  ])('%s', (input, expected) => {
    expect(redactKeys(input)).toBe(expected);
  });

  test('text PostgreSQL refuses in jsonb (NUL, lone surrogates) is replaced, pairs are kept', () => {
    expect(storable('a\u0000b\ud800c\udc00d🍺')).toBe('a\ufffdb\ufffdc\ufffdd🍺');
  });

  test('messages', () => {
    expect(redactText(`unknown parameter "${KEY}"`)).toBe('unknown parameter "[REDACTED]"');
    expect(redactText('unknown parameter "pbo_abc"')).toBe('unknown parameter "[REDACTED]"');
  });
});
