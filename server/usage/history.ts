/**
 * Usage history (decisions.md v1.3 "Usage history for partners"): answered
 * authenticated requests per UTC hour, key, endpoint and status class.
 *
 * The class is known only once the answer is written, after the rate-limit
 * script counted the request. So, on the answer's `finish`:
 * - a request counted in Redis (the usual case) adds 1 to the field
 *   `@HH|C|endpoint` of the same key-day usage hash the script counts in
 *   (ratelimit/buckets.ts), in batches: every `pushEveryMs` (100 ms) one
 *   pipeline of HINCRBYs (and '#v', the hash's version) per instance, then the
 *   key-day is touched, so the existing shared-usage flush (shared.ts,
 *   api.record_shared_usage) writes the hourly fields with the daily counts,
 *   absolutely and idempotently, from any instance (a crashed instance's
 *   counts by the next sweep). No PostgreSQL write per request.
 * - a request counted in process (no Redis, or it is unavailable) is counted
 *   in memory and added to PostgreSQL every `flushEveryMs` through
 *   api.record_hourly_usage (like recorder.ts does for the daily counts).
 * A clean shutdown (close()) pushes and writes what is left; a SIGKILL loses at
 * most the last `pushEveryMs` of classes (the daily counts lose nothing).
 *
 * C: '2', '3', '4', '5', or 'R' for a 429 (a 4xx also counted as rate-limited).
 */
import type { Pool } from '../db/pools';
import type { Logger } from '../log';
import type { RedisBreaker } from '../ratelimit/breaker';
import { RATE_LIMITED_FIELD, USAGE_TTL_AFTER_DAY_MS, usageKey } from '../ratelimit/buckets';
import type { RedisClient } from '../redis';
import { CALLS, apiQuery } from '../contract/calls';

export type StatusClass = '2' | '3' | '4' | '5' | 'R';

/** The class a status is counted in ('R': 429). */
export function statusClass(status: number): StatusClass {
  if (status === 429) return 'R';
  if (status < 300) return '2';
  if (status < 400) return '3';
  if (status < 500) return '4';
  return '5';
}

/** The usage-hash field of an hour (0-23 of the hash's day), class and endpoint. */
export function hourField(hour: number, cls: StatusClass, endpoint: string): string {
  return `@${String(hour).padStart(2, '0')}|${cls}|${endpoint}`;
}

export interface HourlyUsageOptions {
  pool: Pool;
  logger: Logger;
  redis?: RedisClient;
  breaker?: RedisBreaker;
  prefix?: string;
  /** Told which key-days got hourly fields (SharedUsage.touch), so its flush writes them. */
  touch?: (keyId: string, day: string) => void;
  pushEveryMs?: number;
  flushEveryMs?: number;
  /** 429s of rateLimited() whose push failed: counted in process instead (UsageRecorder). */
  rateLimitedInProcess?: (keyId: string, day: string, n: number) => void;
}

interface LocalRow {
  hour: string;
  key_id: string;
  endpoint: string;
  status_2xx: number;
  status_3xx: number;
  status_4xx: number;
  status_5xx: number;
  rate_limited: number;
}

const COLUMN: Record<StatusClass, keyof LocalRow> = {
  '2': 'status_2xx',
  '3': 'status_3xx',
  '4': 'status_4xx',
  '5': 'status_5xx',
  R: 'status_4xx',
};

/** More pending entries than this (Redis or PostgreSQL away for long) are dropped and logged. */
const MAX_PENDING = 100_000;

export class HourlyUsage {
  /** Redis: `${keyId}|${day}` -> field -> count. */
  private shared = new Map<string, Map<string, number>>();
  private local = new Map<string, LocalRow>();
  private readonly timers: NodeJS.Timeout[] = [];
  private pushing: Promise<void> = Promise.resolve();
  private writing: Promise<void> = Promise.resolve();
  private lastInstant = { at: NaN, day: '', hour: 0, hourStart: '' };
  dropped = 0;

  constructor(private readonly o: HourlyUsageOptions) {
    const every = (ms: number, fn: () => Promise<void>) => {
      const t = setInterval(() => void fn(), ms);
      t.unref();
      this.timers.push(t);
    };
    if (o.redis) every(o.pushEveryMs ?? 100, () => this.push());
    every(o.flushEveryMs ?? 5000, () => this.write());
  }

  /**
   * One answered request. `at`: the instant its usage was counted (the script's day and hour);
   * `shared`: counted in Redis (else in process).
   */
  record(keyId: string, endpoint: string, status: number, at: number, shared: boolean): void {
    const cls = statusClass(status);
    const t = this.instant(at);
    if (shared && this.o.redis) {
      const id = `${keyId}|${t.day}`;
      let fields = this.shared.get(id);
      if (!fields) {
        if (this.shared.size >= MAX_PENDING) return this.drop();
        this.shared.set(id, (fields = new Map()));
      }
      const field = hourField(t.hour, cls, endpoint);
      fields.set(field, (fields.get(field) ?? 0) + 1);
      return;
    }
    this.addLocal(t.hourStart, keyId, endpoint, cls, 1);
  }

  /**
   * The UTC day and hour of `at`, kept for the last instant asked: callers pass the minute's start,
   * so the date is formatted once a minute rather than once per answer (0.8 µs each).
   */
  private instant(at: number): { day: string; hour: number; hourStart: string } {
    if (at !== this.lastInstant.at) {
      const iso = new Date(at).toISOString();
      this.lastInstant = {
        at,
        day: iso.slice(0, 10),
        hour: Number(iso.slice(11, 13)),
        hourStart: `${iso.slice(0, 13)}:00:00Z`,
      };
    }
    return this.lastInstant;
  }

  /**
   * A 429 the process refused itself (ratelimit/limiters.ts Refusal), which the script did not
   * count: its '#429' in the key-day usage hash goes with the next push, as the hourly fields do.
   */
  rateLimited(keyId: string, at: number): void {
    const id = `${keyId}|${new Date(at).toISOString().slice(0, 10)}`;
    let fields = this.shared.get(id);
    if (!fields) {
      if (this.shared.size >= MAX_PENDING) return this.drop();
      this.shared.set(id, (fields = new Map()));
    }
    fields.set(RATE_LIMITED_FIELD, (fields.get(RATE_LIMITED_FIELD) ?? 0) + 1);
  }

  private drop(): void {
    if (this.dropped++ % 1000 === 0)
      this.o.logger.warn({ dropped: this.dropped }, 'hourly usage: too many pending counts; dropping');
  }

  private addLocal(hour: string, keyId: string, endpoint: string, cls: StatusClass, n: number): void {
    const id = `${hour}|${keyId}|${endpoint}`;
    let row = this.local.get(id);
    if (!row) {
      if (this.local.size >= MAX_PENDING) return this.drop();
      row = {
        hour,
        key_id: keyId,
        endpoint,
        status_2xx: 0,
        status_3xx: 0,
        status_4xx: 0,
        status_5xx: 0,
        rate_limited: 0,
      };
      this.local.set(id, row);
    }
    (row[COLUMN[cls]] as number) += n;
    if (cls === 'R') row.rate_limited += n;
  }

  /** Adds the pending Redis counts to their usage hashes (one pipeline), then touches their key-days. */
  push(): Promise<void> {
    this.pushing = this.pushing.then(async () => {
      if (!this.shared.size || !this.o.redis) return;
      const batch = this.shared;
      this.shared = new Map();
      const prefix = this.o.prefix ?? 'pbapi:rl:';
      try {
        if (this.o.breaker && !this.o.breaker.available) throw new Error('Redis unavailable');
        const pipeline = this.o.redis.pipeline();
        for (const [id, fields] of batch) {
          const [keyId, day] = id.split('|') as [string, string];
          const key = usageKey(prefix, keyId, day);
          for (const [field, n] of fields) pipeline.hincrby(key, field, n);
          pipeline.hincrby(key, '#v', 1);
          // as the script sets it (a hash it did not create, e.g. after a Redis restart, expires too)
          pipeline.pexpireat(key, Date.parse(`${day}T00:00:00Z`) + 86_400_000 + USAGE_TTL_AFTER_DAY_MS);
        }
        const results = (await pipeline.exec()) ?? [];
        const failed = results.find(([err]) => err);
        if (failed) throw failed[0]!;
        for (const id of batch.keys()) {
          const [keyId, day] = id.split('|') as [string, string];
          this.o.touch?.(keyId, day);
        }
      } catch (err) {
        // Counted in process instead: added to PostgreSQL by the next write.
        for (const [id, fields] of batch) {
          const [keyId, day] = id.split('|') as [string, string];
          for (const [field, n] of fields) {
            if (field === RATE_LIMITED_FIELD) {
              this.o.rateLimitedInProcess?.(keyId, day, n);
              continue;
            }
            const [, hh, cls, endpoint] = /^@(\d\d)\|(.)\|(.*)$/s.exec(field)!;
            this.addLocal(`${day}T${hh}:00:00Z`, keyId, endpoint!, cls as StatusClass, n);
          }
        }
        this.o.logger.warn(
          { err: { message: (err as Error).message } },
          'hourly usage: Redis push failed; counted in process',
        );
      }
    });
    return this.pushing;
  }

  /** Adds the in-process counts to PostgreSQL (kept for the next write when it fails). */
  write(): Promise<void> {
    this.writing = this.writing.then(async () => {
      if (!this.local.size) return;
      const batch = this.local;
      this.local = new Map();
      try {
        await apiQuery(this.o.pool, CALLS.recordHourlyUsage, { batch: JSON.stringify([...batch.values()]) });
      } catch (err) {
        for (const row of batch.values())
          for (const cls of ['2', '3', '4', '5'] as const) {
            const n = row[COLUMN[cls]] as number;
            const limited = cls === '4' ? row.rate_limited : 0;
            if (n - limited > 0) this.addLocal(row.hour, row.key_id, row.endpoint, cls, n - limited);
            if (limited > 0) this.addLocal(row.hour, row.key_id, row.endpoint, 'R', limited);
          }
        this.o.logger.warn({ err: { message: (err as Error).message } }, 'hourly usage write failed; will retry');
      }
    });
    return this.writing;
  }

  /** Pushes and writes what is pending (a clean shutdown, or a test). */
  async flush(): Promise<void> {
    await this.push();
    await this.write();
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await this.flush();
  }
}
