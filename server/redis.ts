/**
 * The shared Redis client (rate-limit counters and usage counts): one server
 * (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES, or a REDIS_URL of the
 * form `redis+cluster://host:port,host:port`).
 *
 * Commands fail fast instead of queueing while Redis is unreachable, and every
 * rate-limit evaluation runs under a per-request budget with a circuit breaker
 * (ratelimit/breaker.ts), so a request never waits on a dead or frozen Redis:
 * the limiter falls back to per-instance counting and ioredis keeps
 * reconnecting in the background.
 *
 * Redis Sentinel (ioredis's `sentinels` + `name` options):
 * `REDIS_URL=redis+sentinel://host:port,host:port/<master name>`.
 */
import { Cluster, Redis } from 'ioredis';
import type { Logger } from './log';

export type RedisClient = Redis | Cluster;

export interface RedisTarget {
  /** A single server. */
  url?: string;
  /** Cluster seed nodes, `host:port` (or redis:// URLs). */
  clusterNodes?: string[];
  /** Sentinels, `host:port`, and the monitored master's name. */
  sentinels?: string[];
  sentinelName?: string;
}

/** `redis+cluster://a:1,b:2` or REDIS_CLUSTER_NODES=`a:1,b:2` → seed nodes; else a plain URL. */
export function redisTarget(url: string | undefined, clusterNodes: string | undefined): RedisTarget | undefined {
  const nodes = (clusterNodes ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (nodes.length) return { clusterNodes: nodes };
  if (!url) return undefined;
  const m = /^rediss?\+cluster:\/\/(.+)$/i.exec(url);
  if (m) return { clusterNodes: m[1]!.split(',').map((s) => s.trim()) };
  const sentinel = /^redis\+sentinel:\/\/([^/]+)\/([^/?#]+)$/i.exec(url);
  if (sentinel)
    return { sentinels: sentinel[1]!.split(',').map((s) => s.trim()), sentinelName: decodeURIComponent(sentinel[2]!) };
  return { url };
}

function seed(node: string): { host: string; port: number } {
  const u = new URL(/^rediss?:\/\//.test(node) ? node : `redis://${node}`);
  return { host: u.hostname, port: Number(u.port || 6379) };
}

const COMMON = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  commandTimeout: 1000,
  connectTimeout: 2000,
  connectionName: 'partner-api',
} as const;

export function createRedisClient(target: string | RedisTarget, logger: Logger): RedisClient {
  const t: RedisTarget = typeof target === 'string' ? (redisTarget(target, undefined) ?? { url: target }) : target;
  const retryStrategy = (attempt: number) => Math.min(attempt * 200, 2000);
  const client: RedisClient = t.clusterNodes
    ? new Cluster(t.clusterNodes.map(seed), {
        enableOfflineQueue: false,
        clusterRetryStrategy: retryStrategy,
        slotsRefreshTimeout: 2000,
        redisOptions: { ...COMMON },
      })
    : t.sentinels
      ? new Redis({
          ...COMMON,
          sentinels: t.sentinels.map(seed),
          name: t.sentinelName ?? 'mymaster',
          retryStrategy,
          sentinelRetryStrategy: retryStrategy,
        })
      : new Redis(t.url!, { ...COMMON, retryStrategy });
  let down = false;
  client.on('ready', () => {
    if (down) logger.warn('Redis is back: rate limits are shared across instances again');
    down = false;
  });
  const lost = (err?: Error) => {
    if (down) return;
    down = true;
    logger.error(
      { err: err ? { message: err.message } : undefined },
      'Redis unavailable: rate limits fall back to per-instance counting until it returns',
    );
  };
  client.on('error', lost);
  client.on('close', () => {
    if (client.status !== 'end') lost();
  });
  return client;
}

/** True while commands can be sent (connected and ready). */
export function redisReady(client: RedisClient): boolean {
  return client.status === 'ready';
}

/** Waits until the client is ready (tests, startup). */
export function redisReadyPromise(client: RedisClient): Promise<void> {
  return client.status === 'ready'
    ? Promise.resolve()
    : new Promise((resolve) => client.once('ready', () => resolve()));
}
