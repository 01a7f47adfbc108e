/**
 * Issue 11 defect 2 (usage part): usage survives a SIGKILL. The real server
 * (server/main.ts in its own process, Redis limiter on the test's own
 * redis-server) answers requests and is SIGKILLed before any usage flush;
 * another instance's sweep then writes exactly what was answered.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { createPartnerGuard } from '../../server/credentials/guard';
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { issueKey, silentLogger } from '../support/partner';
import { OwnRedisServer } from '../support/redis-server';

function startServer(db: TestDatabase, redisUrl: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [path.join(__dirname, '../hardening/run-ts.js'), 'server/main.ts'], {
    cwd: path.resolve(__dirname, '../..'),
    env: {
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL: db.url,
      REDIS_URL: redisUrl,
      PORT: '0',
      ADMIN_PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SEED_DEMO_DATA: 'false',
      WEB_CONCURRENCY: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        try {
          const entry = JSON.parse(line) as { msg?: string; port?: number };
          if (entry.msg === 'partner API listening') resolve({ child, port: Number(entry.port) });
        } catch {
          /* not a log line */
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}) before listening: ${stderr}`)));
  });
}

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
  let db: TestDatabase;
  let redisServer: OwnRedisServer;
  let client: RedisClient;
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    redisServer = await OwnRedisServer.start();
    client = createRedisClient(redisServer.url, silentLogger);
    await redisReadyPromise(client);
  });
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    client?.disconnect();
    await redisServer?.stop();
    await db?.drop();
  });

  test('every answered request is counted once after the instance is killed', async () => {
    const { apiKey, keyId } = await issueKey(db.owner);
    const started = await startServer(db, redisServer.url);
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
    expect(await usage()).toEqual([]); // the killed instance wrote nothing (it flushes every 5 s)

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
      await guard.sharedUsage!.flush(); // queued after the start-up sweep
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
