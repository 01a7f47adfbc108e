/**
 * A partner app on a redis-server of the test's own (support/redis-server.ts), for tests that count
 * or freeze what reaches Redis: a test database, the redis-server, the app's Redis client, a second
 * client for the test's own observations (`probe`), and the app listening on a loopback port.
 */
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { createTestDatabase, type TestDatabase } from './db';
import { listen, type Listening } from './http';
import { silentLogger, startPartner, type PartnerInstance } from './partner';
import { OwnRedisServer } from './redis-server';

export interface OwnRedisPartner {
  db: TestDatabase;
  redisServer: OwnRedisServer;
  /** The app's client. */
  client: RedisClient;
  /** The test's client (INFO commandstats, CONFIG RESETSTAT, reading keys). */
  probe: RedisClient;
  partner: PartnerInstance;
  server: Listening;
  /** Stops all of it (thawing a frozen redis-server first). */
  stop(): Promise<void>;
}

/** Starts it all, keys under `redisPrefix`; what started is stopped again when a later step fails. */
export async function startOwnRedisPartner(redisPrefix: string): Promise<OwnRedisPartner> {
  const started: Partial<OwnRedisPartner> = {};
  const stop = async () => {
    await started.server?.close();
    await started.partner?.close().catch(() => undefined);
    started.client?.disconnect();
    started.probe?.disconnect();
    started.redisServer?.freeze(false);
    await started.redisServer?.stop();
    await started.db?.drop();
  };
  try {
    started.db = await createTestDatabase();
    started.redisServer = await OwnRedisServer.start();
    started.client = createRedisClient(started.redisServer.url, silentLogger);
    started.probe = createRedisClient(started.redisServer.url, silentLogger);
    await Promise.all([redisReadyPromise(started.client), redisReadyPromise(started.probe)]);
    started.partner = await startPartner(started.db, { redis: started.client, redisPrefix });
    started.server = await listen(started.partner.app);
  } catch (e) {
    await stop().catch(() => undefined);
    throw e;
  }
  return { ...(started as Omit<OwnRedisPartner, 'stop'>), stop };
}
