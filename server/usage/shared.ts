/**
 * Usage counted in Redis by the rate-limit script (ratelimit/buckets.ts: one
 * hash per key and UTC day), written to PostgreSQL by any instance through
 * api.record_shared_usage, idempotently (absolute counts + a version).
 *
 * - Every `flushEveryMs` (5 s) an instance flushes the key-days it served.
 * - Every `sweepEveryMs` (60 s), one instance (a Redis lock) flushes today's and
 *   yesterday's hash of every key that may have one (api.usage_key_ids()), so
 *   counts made by an instance that was SIGKILLed before its flush reach
 *   PostgreSQL anyway. At start each instance sweeps too, retried every second
 *   until it succeeds (Redis or PostgreSQL may still be coming up). Nothing counted in Redis is lost
 *   with an instance; the bound is Redis itself (its persistence settings).
 */
import type { Pool } from '../db/pools';
import type { Logger } from '../log';
import { usageKey } from '../ratelimit/buckets';
import type { RedisBreaker } from '../ratelimit/breaker';
import type { RedisClient } from '../redis';
import { CALLS, apiQuery } from '../contract/calls';

const DAY_MS = 86_400_000;

export interface SharedUsageOptions {
  redis: RedisClient;
  breaker: RedisBreaker;
  pool: Pool;
  prefix: string;
  logger: Logger;
  flushEveryMs?: number;
  sweepEveryMs?: number;
}

export class SharedUsage {
  private touched = new Set<string>(); // `${day}|${keyId}`
  private readonly timers: NodeJS.Timeout[] = [];
  private chain: Promise<unknown> = Promise.resolve();
  private closed = false;
  private startupRetry: NodeJS.Timeout | undefined;
  private startupDone: () => void = () => undefined;
  /** Settles when the start-up sweep has succeeded (or the instance closed first). */
  readonly started: Promise<void>;

  constructor(private readonly o: SharedUsageOptions) {
    // flush() and sweep() queue themselves on the chain: wrapping them in serial() again would make
    // the outer link wait for an inner one queued behind it (a deadlock from the first tick on).
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const t = setInterval(() => void fn(), ms);
      t.unref();
      this.timers.push(t);
    };
    every(o.flushEveryMs ?? 5000, () => this.flush());
    every(o.sweepEveryMs ?? 60_000, () => this.sweep());
    this.started = new Promise((resolve) => {
      this.startupDone = resolve;
      const attempt = () =>
        void this.sweepOnce(true).then((written) => {
          if (written !== undefined || this.closed) return resolve();
          this.startupRetry = setTimeout(attempt, 1000);
          this.startupRetry.unref();
        });
      attempt();
    });
  }

  /** A request of this key was counted in Redis on this day. */
  touch(keyId: string, day: string): void {
    this.touched.add(`${day}|${keyId}`);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.then(fn, fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Writes the key-days this instance counted since the last flush. */
  flush(): Promise<number> {
    return this.serial(async () => {
      const batch = [...this.touched];
      this.touched = new Set();
      try {
        return await this.write(batch.map((t) => t.split('|') as [string, string]));
      } catch (err) {
        for (const t of batch) this.touched.add(t);
        this.o.logger.warn({ err: { message: (err as Error).message } }, 'shared usage flush failed; will retry');
        return 0;
      }
    });
  }

  /** Writes today's and yesterday's counts of every key (one instance at a time). */
  async sweep(force = false): Promise<number> {
    return (await this.sweepOnce(force)) ?? 0;
  }

  /** undefined when the sweep failed (logged). */
  private sweepOnce(force: boolean): Promise<number | undefined> {
    return this.serial(async () => {
      try {
        const lock = `${this.o.prefix}usage-sweep-lock`;
        if (!force) {
          const got = await this.o.redis.set(
            lock,
            String(process.pid),
            'PX',
            (this.o.sweepEveryMs ?? 60_000) - 1000,
            'NX',
          );
          if (got !== 'OK') return 0;
        }
        const rows = (await apiQuery(this.o.pool, CALLS.usageKeyIds, {})) as { id: string }[];
        const now = Date.now();
        const days = [new Date(now).toISOString().slice(0, 10), new Date(now - DAY_MS).toISOString().slice(0, 10)];
        return await this.write(rows.flatMap((r) => days.map((d) => [d, r.id] as [string, string])));
      } catch (err) {
        this.o.logger.warn({ err: { message: (err as Error).message } }, 'shared usage sweep failed; will retry');
        return undefined;
      }
    });
  }

  private async write(keyDays: [string, string][]): Promise<number> {
    if (!keyDays.length) return 0;
    if (!this.o.breaker.available) throw new Error('Redis unavailable');
    let applied = 0;
    for (let i = 0; i < keyDays.length; i += 500) {
      const chunk = keyDays.slice(i, i + 500);
      const hashes = await Promise.all(
        chunk.map(([day, keyId]) => this.o.redis.hgetall(usageKey(this.o.prefix, keyId, day))),
      );
      const batch = chunk.flatMap(([day, keyId], j) => {
        const h = hashes[j]!;
        if (!h['#v']) return [];
        const counts: Record<string, number> = {};
        for (const [field, value] of Object.entries(h))
          if (field !== '#v' && field !== '#t') counts[field] = Number(value);
        return [
          {
            day,
            key_id: keyId,
            version: Number(h['#v']),
            last_used_at: h['#t'] ? new Date(Number(h['#t'])).toISOString() : null,
            counts,
          },
        ];
      });
      if (!batch.length) continue;
      const rows = await apiQuery(this.o.pool, CALLS.recordSharedUsage, { batch: JSON.stringify(batch) });
      applied += (rows[0]?.n as number | undefined) ?? 0;
    }
    return applied;
  }

  /** Final flush (clean shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.startupRetry);
    this.startupDone(); // a retry that will not run now
    for (const t of this.timers) clearInterval(t);
    await this.flush();
  }
}
