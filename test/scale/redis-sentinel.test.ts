/**
 * Redis Sentinel through ioredis's own options (REDIS_URL=redis+sentinel://host:port/<master>):
 * the test's own redis-server and one sentinel (`redis-server <conf> --sentinel`) monitoring it;
 * the limiter counts in the master the sentinel names.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRedisClient, redisReadyPromise, redisTarget, type RedisClient } from '../../server/redis';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { bearer, issueKey, silentLogger, startPartner, type PartnerInstance } from '../support/partner';
import { OwnRedisServer } from '../support/redis-server';
import { redisClusterBinariesMissing } from '../support/redis-cluster';
import request from 'supertest';
import { freePort } from '../../db/tools/ports';

const missing = redisClusterBinariesMissing();
const describeWithRedis = missing ? describe.skip : describe;

describeWithRedis('Redis Sentinel (own master + sentinel)', () => {
  let db: TestDatabase;
  let master: OwnRedisServer;
  let sentinel: ChildProcess | undefined;
  let dir: string;
  let client: RedisClient;
  let direct: RedisClient;
  let partner: PartnerInstance;

  beforeAll(async () => {
    db = await createTestDatabase();
    master = await OwnRedisServer.start();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pbapi-sentinel-'));
    const port = await freePort();
    const conf = path.join(dir, 'sentinel.conf');
    fs.writeFileSync(
      conf,
      `port ${port}\nbind 127.0.0.1\ndir ${dir}\nsentinel monitor pbmaster 127.0.0.1 ${master.port} 1\n`,
    );
    sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
    const target = redisTarget(`redis+sentinel://127.0.0.1:${port}/pbmaster`, undefined)!;
    expect(target).toEqual({ sentinels: [`127.0.0.1:${port}`], sentinelName: 'pbmaster' });
    client = createRedisClient(target, silentLogger);
    direct = createRedisClient(master.url, silentLogger);
    await Promise.all([redisReadyPromise(client), redisReadyPromise(direct)]);
    partner = await startPartner(db, { redis: client, redisPrefix: 'sn:' });
  }, 30_000);
  afterAll(async () => {
    await partner?.close();
    client?.disconnect();
    direct?.disconnect();
    if (sentinel && sentinel.exitCode === null) {
      const exited = new Promise((r) => sentinel!.once('exit', r));
      sentinel.kill('SIGKILL');
      await exited;
    }
    await master?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    await db?.drop();
  });

  test('the limiter reaches the master through the sentinel', async () => {
    const { apiKey, keyId } = await issueKey(db.owner);
    for (let i = 0; i < 3; i++) await request(partner.app).get('/api/v1/partner/test_endpoint').set(bearer(apiKey));
    const keys = await direct.keys(`sn:{${keyId}}:m:*`);
    expect(keys).toHaveLength(1);
    expect(await direct.get(keys[0]!)).toBe('3');
  });
});
