/**
 * Usage alerts: the served request whose count in a window brings a limited
 * bucket to 80%, 90% or 100% of its limit records one alert each (warning,
 * high_warning, limit_reached). Counts come from one atomic counter (Redis
 * INCR), so exactly one request sees each threshold value; the database keeps
 * one row per key, bucket, window and level anyway (unique constraint, insert
 * ... on conflict do nothing), which covers several instances counting on
 * their own while Redis is unavailable. Alerts are logged and readable by
 * operators only; partners never see them.
 *
 * A write PostgreSQL ends with a deadlock or a serialization failure (nothing written) is made
 * again, up to ATTEMPTS times: on a new database the alert's jobs register their task names
 * while the job runner registers its own, in another order, and one of the two is ended.
 */
import type { Pool } from '../db/pools';
import type { Logger } from '../log';
import { windowStart, type Bucket } from '../ratelimit/windows';
import { CALLS, apiQuery } from '../contract/calls';

export const ALERT_LEVELS = [
  { level: 'warning', share: 0.8 },
  { level: 'high_warning', share: 0.9 },
  { level: 'limit_reached', share: 1 },
] as const;

export type AlertLevel = (typeof ALERT_LEVELS)[number]['level'];

const ATTEMPTS = 3;
/** deadlock_detected, serialization_failure: the transaction was rolled back; doing it again is safe. */
const RETRYABLE = new Set(['40P01', '40001']);

export interface BucketUse {
  bucket: Bucket;
  used: number;
  limit: number;
  /** When the window ends (its start is derived from it). */
  resetTime: Date;
}

/** The count at which a level is reached (at least 1). */
export function threshold(limit: number, share: number): number {
  return Math.max(1, Math.ceil(limit * share));
}

export class UsageAlerts {
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly pool: Pool,
    private readonly logger: Logger,
  ) {}

  /**
   * Called when a request was served, with the counts it brought its buckets to; `weight`: what it
   * counted as (a GraphQL query's points), so a threshold it stepped over is reached too.
   */
  check(identity: { keyId: string; subscriberId: string }, uses: BucketUse[], weight = 1): void {
    for (const use of uses) {
      for (const { level, share } of ALERT_LEVELS) {
        const t = threshold(use.limit, share);
        if (!(use.used >= t && use.used - weight < t)) continue;
        const start = windowStart(use.bucket, use.resetTime.getTime() - 1);
        const write = this.record(identity, use, start, level);
        this.inFlight.add(write);
        void write.finally(() => this.inFlight.delete(write));
      }
    }
  }

  private async record(
    identity: { keyId: string; subscriberId: string },
    use: BucketUse,
    start: number,
    level: AlertLevel,
  ) {
    try {
      const rows = await this.insertWithRetry(identity, use, start, level);
      if (rows[0]?.created) {
        this.logger.warn(
          {
            alert: {
              level,
              bucket: use.bucket,
              windowStart: new Date(start).toISOString(),
              used: use.used,
              limit: use.limit,
              keyId: identity.keyId,
              subscriberId: identity.subscriberId,
            },
          },
          'usage alert',
        );
      }
    } catch (err) {
      this.logger.error(
        { err: { message: (err as Error).message }, level, bucket: use.bucket, keyId: identity.keyId },
        'could not record a usage alert',
      );
    }
  }

  private async insertWithRetry(
    identity: { keyId: string },
    use: BucketUse,
    start: number,
    level: AlertLevel,
  ): Promise<{ created: unknown }[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await apiQuery(this.pool, CALLS.recordUsageAlert, {
          api_key_id: identity.keyId,
          bucket: use.bucket,
          window_start: new Date(start),
          level,
          used: use.used,
          limit: use.limit,
        });
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (attempt >= ATTEMPTS || typeof code !== 'string' || !RETRYABLE.has(code)) throw err;
      }
    }
  }

  /** Waits for alerts being written (clean shutdown, tests). */
  async settle(): Promise<void> {
    while (this.inFlight.size) await Promise.all([...this.inFlight]);
  }
}
