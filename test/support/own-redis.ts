/**
 * Set-ups on a redis-server of the test's own (support/redis-server.ts), for tests that count,
 * freeze or kill what reaches Redis: a test database, the redis-server and a client of it; with a
 * partner app too, a second client for the test's own observations (`probe`) and the app listening.
 */
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { createTestDatabase, type TestDatabase } from './db';
import { listen, type Listening } from './http';
import { silentLogger, startPartner, type PartnerInstance } from './partner';
import { OwnRedisServer } from './redis-server';

export interface OwnRedis {
  db: TestDatabase;
  redisServer: OwnRedisServer;
  /** The app's client. */
  client: RedisClient;
  /** Stops all of it (thawing a frozen redis-server first). */
  stop(): Promise<void>;
}

export interface OwnRedisPartner extends OwnRedis {
  /** The test's client (INFO commandstats, CONFIG RESETSTAT, reading keys). */
  probe: RedisClient;
  partner: PartnerInstance;
  server: Listening;
}

/** A test database, a redis-server of the test's own and a client of it. */
export async function startOwnRedis(): Promise<OwnRedis> {
  const started: Partial<OwnRedis> = {};
  const stop = async () => {
    started.client?.disconnect();
    started.redisServer?.freeze(false);
    await started.redisServer?.stop();
    await started.db?.drop();
  };
  try {
    started.db = await createTestDatabase();
    started.redisServer = await OwnRedisServer.start();
    started.client = createRedisClient(started.redisServer.url, silentLogger);
    await redisReadyPromise(started.client);
  } catch (e) {
    await stop().catch(() => undefined); // what had started
    throw e;
  }
  return { ...(started as Omit<OwnRedis, 'stop'>), stop };
}

/** The same with a probe client and a partner app (keys under `redisPrefix`) listening. */
export async function startOwnRedisPartner(redisPrefix: string): Promise<OwnRedisPartner> {
  const base = await startOwnRedis();
  const started: Partial<Pick<OwnRedisPartner, 'probe' | 'partner' | 'server'>> = {};
  const stop = async () => {
    await started.server?.close();
    await started.partner?.close().catch(() => undefined);
    started.probe?.disconnect();
    await base.stop();
  };
  try {
    started.probe = createRedisClient(base.redisServer.url, silentLogger);
    await redisReadyPromise(started.probe);
    started.partner = await startPartner(base.db, { redis: base.client, redisPrefix });
    started.server = await listen(started.partner.app);
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }
  return { ...base, ...(started as Pick<OwnRedisPartner, 'probe' | 'partner' | 'server'>), stop };
}
