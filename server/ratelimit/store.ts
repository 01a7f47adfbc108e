/**
 * express-rate-limit stores for UTC-aligned windows.
 *
 * The limiter's key is `<window start ms>:<client>` (see limiters.ts), so each
 * window has its own counter and the reset time is the end of that window,
 * not "first hit + windowMs" as in the library's stores.
 *
 * - AlignedMemoryStore: in-process counters (no REDIS_URL, and the fallback).
 *   The library's MemoryStore resets relative to the first hit and sweeps with
 *   setInterval(windowMs), which overflows for a month-long window.
 * - AlignedStore: counts in Redis through rate-limit-redis's RedisStore while
 *   Redis is available (breaker.ts: per-request budget, circuit breaker); when
 *   Redis fails it counts in process (per instance) and goes back to Redis as
 *   soon as it is available again. Used by the failed-authentication limit
 *   (one bucket: one round trip, only on the failure path); the partner
 *   buckets are evaluated together by limiters.ts + buckets.ts.
 */
import { createHash } from 'node:crypto';
import type { ClientRateLimitInfo, IncrementResponse, Options, Store } from 'express-rate-limit';
import { RedisStore } from 'rate-limit-redis';
import type { Logger } from '../log';
import { Cluster } from 'ioredis';
import { redisReady, type RedisClient } from '../redis';
import type { RedisBreaker } from './breaker';
import { windowEnd, type Bucket } from './windows';

const DECREMENT_IF_EXISTS =
  "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end return 0";

function windowOf(key: string): number {
  return Number(key.slice(0, key.indexOf(':')));
}

export class AlignedMemoryStore implements Store {
  readonly localKeys = true;
  private readonly counters = new Map<string, { hits: number; resetsAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly bucket: Bucket) {
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  private resetOf(key: string): number {
    return windowEnd(this.bucket, windowOf(key));
  }

  get(key: string): ClientRateLimitInfo | undefined {
    const counter = this.counters.get(key);
    return counter && { totalHits: counter.hits, resetTime: new Date(counter.resetsAt) };
  }

  increment(key: string): IncrementResponse {
    let counter = this.counters.get(key);
    if (!counter) this.counters.set(key, (counter = { hits: 0, resetsAt: this.resetOf(key) }));
    counter.hits++;
    return { totalHits: counter.hits, resetTime: new Date(counter.resetsAt) };
  }

  decrement(key: string): void {
    const counter = this.counters.get(key);
    if (counter && counter.hits > 0) counter.hits--;
  }

  resetKey(key: string): void {
    this.counters.delete(key);
  }

  resetAll(): void {
    this.counters.clear();
  }

  shutdown(): void {
    clearInterval(this.sweeper);
    this.counters.clear();
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, counter] of this.counters) if (counter.resetsAt <= now) this.counters.delete(key);
  }
}

/**
 * SCRIPT LOAD on every master the cluster client knows (EVALSHA goes to the key's node), answering the
 * script's own SHA-1 whatever the masters answer. rate-limit-redis keeps the promise of this answer and
 * reloads only on NOSCRIPT: a rejection (a master killed, still in the client's node list during a
 * failover) would fail every later call of that script in this process, and each failure opened the
 * Redis circuit again. A node that missed the load (or a promoted replica: Redis does not replicate
 * loaded scripts) answers NOSCRIPT, and the store loads again.
 */
export async function loadOnEveryMaster(redis: Cluster, script: string): Promise<string> {
  await Promise.allSettled(redis.nodes('master').map((n) => n.call('SCRIPT', 'LOAD', script)));
  return createHash('sha1').update(script).digest('hex');
}

export interface AlignedStoreOptions {
  bucket: Bucket;
  /** Absent: in-process counting only. */
  redis?: RedisClient;
  breaker?: RedisBreaker;
  /** Redis key prefix (tests use a unique one). */
  prefix: string;
  logger: Logger;
}

export class AlignedStore implements Store {
  readonly localKeys: boolean;
  readonly prefix: string;
  private readonly local: AlignedMemoryStore;
  private readonly shared?: RedisStore;
  private options?: Options;

  constructor(private readonly opts: AlignedStoreOptions) {
    this.local = new AlignedMemoryStore(opts.bucket);
    this.prefix = `${opts.prefix}${opts.bucket}:`;
    this.localKeys = !opts.redis;
    if (opts.redis) {
      const redis = opts.redis;
      this.shared =
        redis instanceof Cluster
          ? new RedisStore({
              prefix: this.prefix,
              sendCommandCluster: async ({ command }) => {
                const [name, ...args] = command as [string, ...string[]];
                if (name.toUpperCase() === 'SCRIPT' && args[0]?.toUpperCase() === 'LOAD')
                  return loadOnEveryMaster(redis, args[1] ?? '') as never;
                return redis.call(name, ...args) as Promise<never>;
              },
            })
          : new RedisStore({
              prefix: this.prefix,
              sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<never>,
            });
      // The store loads its Lua scripts in init(); if Redis was down then (or
      // restarted since), load them again whenever the connection is ready.
      redis.on('ready', () => this.initShared());
    }
  }

  init(options: Options): void {
    this.options = options;
    this.initShared();
  }

  private initShared(): void {
    if (!this.shared || !this.options || !redisReady(this.opts.redis!)) return;
    this.shared
      .init(this.options)
      .catch((err: Error) =>
        this.opts.logger.debug({ err: { message: err.message } }, 'rate-limit script load failed'),
      );
  }

  private useShared(): boolean {
    if (this.shared === undefined) return false;
    return this.opts.breaker ? this.opts.breaker.available : redisReady(this.opts.redis!);
  }

  private run<T>(call: () => Promise<T>): Promise<T> {
    return this.opts.breaker ? this.opts.breaker.run(call) : call();
  }

  private aligned(key: string, hits: number): IncrementResponse {
    return { totalHits: hits, resetTime: new Date(windowEnd(this.opts.bucket, windowOf(key))) };
  }

  async increment(key: string): Promise<IncrementResponse> {
    if (this.useShared()) {
      try {
        return this.aligned(key, (await this.run(() => this.shared!.increment(key))).totalHits);
      } catch (err) {
        this.opts.logger.warn(
          { err: { message: (err as Error).message }, bucket: this.opts.bucket },
          'Redis increment failed; counting in process',
        );
      }
    }
    return this.local.increment(key);
  }

  async get(key: string): Promise<ClientRateLimitInfo | undefined> {
    if (this.useShared()) {
      try {
        const info = await this.run(() => this.shared!.get(key));
        return info && info.totalHits > 0 ? this.aligned(key, info.totalHits) : undefined;
      } catch {
        // fall through to the local count
      }
    }
    return this.local.get(key);
  }

  // A decrement goes where counting happens now; around a switch between Redis
  // and the fallback it can miss by one, which the window end repairs. Unlike
  // the library's plain DECR it never creates a counter (a Redis that restarted
  // empty would otherwise get a -1 key without expiry).
  async decrement(key: string): Promise<void> {
    if (this.useShared()) {
      try {
        await this.run(() => this.opts.redis!.eval(DECREMENT_IF_EXISTS, 1, this.shared!.prefixKey(key)));
        return;
      } catch {
        // fall through
      }
    }
    this.local.decrement(key);
  }

  async resetKey(key: string): Promise<void> {
    this.local.resetKey(key);
    if (this.useShared()) await this.shared!.resetKey(key).catch(() => undefined);
  }

  shutdown(): void {
    this.local.shutdown();
  }
}
