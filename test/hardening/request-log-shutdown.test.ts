/**
 * The request log at SIGTERM (issue 30): the real server (server/main.ts in
 * its own process, REQUEST_LOG unset = errors) answers 4xx, is stopped with
 * SIGTERM right away, and every one of those answers is in admin.request_log
 * afterwards: the shutdown writes the buffer (the step "request log" says so).
 */
import http from 'node:http';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { issueKey } from '../support/partner';
import { startServerProcess } from '../support/server-process';

function get(port: number, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      })
      .on('error', reject);
  });
}

describe('request log at shutdown', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  test('SIGTERM writes the buffered entries; none is lost', async () => {
    const { apiKey, subscriberId } = await issueKey(db.owner);
    const server = await startServerProcess(db.url, {}, { shutdownTimeoutMs: 8000, dropRequestLines: true });
    const statuses: number[] = [];
    for (let i = 0; i < 30; i++)
      statuses.push(
        await get(server.port, `${P}/bars?limit=bad${i}`, { 'X-API-Key': apiKey, 'X-Request-Id': `term-${i}` }),
      );
    statuses.push(await get(server.port, `${P}/bars`, { 'X-Request-Id': 'term-401' }));
    server.child.kill('SIGTERM');
    const { code } = await server.exited;
    expect(code).toBe(0);
    expect(statuses).toEqual([...Array(30).fill(400), 401]);

    const step = server.logs.find((l) => l.msg === 'shutdown step done' && l.step === 'request log');
    expect(step).toMatchObject({ requestLogLeft: 0, requestLogWritten: expect.any(Number) });
    const { rows } = await db.owner.query<{ n: number; mine: number; anonymous: number }>(
      `select count(*)::int as n, count(*) filter (where subscriber_id = $1)::int as mine,
              count(*) filter (where subscriber_id is null)::int as anonymous
         from admin.request_log where request_id like 'term-%'`,
      [subscriberId],
    );
    expect(rows[0]).toEqual({ n: 31, mine: 30, anonymous: 1 });
  }, 90_000);
});
