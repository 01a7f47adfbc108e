/**
 * The shared Redis client (rate-limit counters). Commands fail fast instead of
 * queueing while Redis is unreachable, so a request never waits on Redis: the
 * rate limiter falls back to per-instance counting (see ratelimit/store.ts)
 * and ioredis keeps reconnecting in the background.
 */
import { Redis } from 'ioredis';
import type { Logger } from './log';

export type RedisClient = Redis;

export function createRedisClient(url: string, logger: Logger): Redis {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1000,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    connectionName: 'partner-api',
  });
  let down = false;
  client.on('ready', () => {
    if (down) logger.warn('Redis is back: rate limits are shared across instances again');
    down = false;
  });
  const lost = (err?: Error) => {
    if (down) return;
    down = true;
    logger.error({ err: err ? { message: err.message } : undefined },
      'Redis unavailable: rate limits fall back to per-instance counting until it returns');
  };
  client.on('error', lost);
  client.on('close', () => { if (client.status !== 'end') lost(); });
  return client;
}

/** True while commands can be sent (connected and ready). */
export function redisReady(client: Redis): boolean {
  return client.status === 'ready';
}
