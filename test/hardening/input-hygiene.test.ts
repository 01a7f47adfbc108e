/**
 * Defect 1 (issue 11): a NUL byte or invalid UTF-8 anywhere in the path, the
 * query or a key header is a 400 naming where it was, never a 500 (PostgreSQL
 * refuses NUL in text: 22021). Also /healthz and /readyz, and the access log's
 * query string and 4xx reason.
 */
import request from 'supertest';
import type { Express } from 'express';
import { PARTNER_PREFIX } from '../../server/contract/identity';
import { dirtyPart } from '../../server/web/input-hygiene';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { buildApp, type LogCapture } from '../support/partner-app';

const P = PARTNER_PREFIX;

describe('input hygiene', () => {
  let db: TestDatabase;
  let app: Express;
  let log: LogCapture;

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    await f.bar(city, { name: 'The Tap' });
    ({ app, log } = buildApp(db.partnerPool()));
  });
  afterAll(() => db.drop());

  test.each([
    [`${P}/search?q=a%00`, 'parameter "q"'],
    [`${P}/bars/%00`, 'the path'],
    [`${P}/bars_by_city/TX/%00`, 'the path'],
    [`${P}/bars?category=%00`, 'parameter "category"'],
    [`${P}/bars?ids=1,%00`, 'parameter "ids"'],
    [`${P}/bars?group_slug=x%00y`, 'parameter "group_slug"'],
    [`${P}/search?q=%C3%28`, 'parameter "q"'],
    [`${P}/search?q=%FF`, 'parameter "q"'],
    [`${P}/bars_by_city/TX/Austin%FF`, 'the path'],
    [`${P}/bars?%FF=1`, 'parameter "%FF"'],
    [`${P}/search?q=%ED%A0%80`, 'parameter "q"'], // an encoded surrogate is not UTF-8
  ])('%s is a 400 naming %s', async (url, where) => {
    const res = await request(app).get(url);
    expect(res.status).toBe(400);
    expect(res.type).toBe('application/json');
    expect(res.body.error).toContain(where);
    expect(res.body.request_id).toBe(res.headers['x-request-id']);
    expect(res.headers['x-ratelimit-limit']).toBeDefined(); // judged after the guard, like every partner 400
  });

  test('valid UTF-8 and malformed-but-harmless escapes pass through', () => {
    expect(dirtyPart('/x/caf%C3%A9?q=na%C3%AFve+bar&a=%zz')).toBeUndefined();
    expect(dirtyPart('/x?q=%E2%82%AC')).toBeUndefined();
    expect(dirtyPart('/x?q=a%2500')).toBeUndefined(); // a literal "%00" text, not a NUL
  });

  test('a key header with invalid UTF-8 is a 400 naming it', async () => {
    const res = await request(app)
      .get(`${P}/bars`)
      .set('X-API-Key', Buffer.from([0x70, 0xff]).toString('latin1'));
    expect(res.status).toBe(400);
    expect(res.body.error).toContain('X-API-Key');
  });

  test('/healthz and /readyz answer without a key', async () => {
    const h = await request(app).get('/healthz');
    expect(h.status).toBe(200);
    expect(h.body).toEqual({ status: 'ok' });
    expect(h.headers['x-request-id']).toBeTruthy();
    const r = await request(app).get('/readyz');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ready', checks: { postgres: 'ok' } });
  });

  test('the access log names the query string and the reason of a 4xx', async () => {
    await request(app).get(`${P}/search?q=a%00&page=1`).set('X-Request-Id', 'hygiene-log-1');
    const line = log.lines.find((l) => l.requestId === 'hygiene-log-1' && l.msg === 'request');
    expect(line).toMatchObject({ path: `${P}/search`, query: 'q=a%00&page=1', status: 400 });
    expect(String(line?.reason)).toContain('NUL');
  });
});
