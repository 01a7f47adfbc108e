/**
 * Issue 11 defect 2 (usage part): usage survives a SIGKILL. The real server
 * (server/main.ts in its own process, Redis limiter on the test's own
 * redis-server) answers requests and is SIGKILLed before any usage flush;
 * another instance's sweep then writes exactly what was answered.
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import { createPartnerGuard } from '../../server/credentials/guard';
import type { RedisClient } from '../../server/redis';
import type { TestDatabase } from '../support/db';
import { issueKey, silentLogger } from '../support/partner';
import { startOwnRedis, type OwnRedis } from '../support/own-redis';
import { OwnRedisServer } from '../support/redis-server';
import { startServerProcess } from '../support/server-process';

function get(port: number, p: string, apiKey: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: p, headers: { Authorization: `Bearer ${apiKey}` } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      })
      .on('error', reject);
  });
}

describe('usage survives a SIGKILL (Redis)', () => {
  let setup: OwnRedis | undefined;
  let db: TestDatabase;
  let redisServer: OwnRedisServer;
  let client: RedisClient;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    setup = await startOwnRedis();
    ({ db, redisServer, client } = setup);
  });
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await setup?.stop();
  });

  test('every answered request is counted once after the instance is killed', async () => {
    const { apiKey, keyId } = await issueKey(db.owner);
    // SIGKILLed below: the shutdown timeout never comes into play
    const started = await startServerProcess(
      db.url,
      {
        REDIS_URL: redisServer.url,
        WEB_CONCURRENCY: '1',
        // not the production 50 ms: on a loaded machine one slow reply opens the circuit, and what the
        // instance then counts in process dies with SIGKILL (the breaker has its own tests)
        REDIS_BUDGET_MS: '2000',
      },
      { shutdownTimeoutMs: 10_000 },
    );
    child = started.child;
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) statuses.push(await get(started.port, '/api/v1/partner/test_endpoint', apiKey));
    for (let i = 0; i < 5; i++) statuses.push(await get(started.port, '/api/v1/partner/bars/999999', apiKey));
    expect(statuses).toEqual([...Array(15).fill(200), ...Array(5).fill(404)]);
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGKILL'); // no shutdown, no flush
    await exited;

    const usage = async () =>
      (
        await db.owner.query<{ endpoint: string; requests: number }>(
          'select endpoint, requests::int from admin.daily_usage where api_key_id = $1 order by endpoint',
          [keyId],
        )
      ).rows;
    // The killed instance flushes every 5 s: it has usually written nothing yet, but on a loaded machine
    // (20 requests taking over 5 s) a flush may have run before the kill. Either way the rest sits in
    // Redis, and the counts below must come out exact: nothing lost, nothing counted twice.
    const written = (await usage()).reduce((n, r) => n + r.requests, 0);
    expect(written).toBeLessThanOrEqual(20);

    // Any other instance: its start-up sweep writes what sits in Redis.
    const pool = db.partnerPool();
    const guard = await createPartnerGuard({
      pool,
      databaseUrl: db.url,
      logger: silentLogger,
      redis: client,
      usageFlushMs: 60_000,
    });
    try {
      // retried every second until it succeeds (on a loaded machine Redis or the pool may fail it once)
      await guard.sharedUsage!.started;
      expect(await usage()).toEqual([
        { endpoint: 'bars/:id', requests: 5 },
        { endpoint: 'test_endpoint', requests: 15 },
      ]);
    } finally {
      await guard.close();
    }
    expect(await usage()).toEqual([
      { endpoint: 'bars/:id', requests: 5 },
      { endpoint: 'test_endpoint', requests: 15 },
    ]);
  });
});
