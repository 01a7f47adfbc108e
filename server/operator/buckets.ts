/**
 * `ApiKey.bucketsNow` on the operator GraphQL endpoint (operators.md › 6, the
 * console's key view: "the three buckets now against their limits"): the
 * key's minute, day and month counts as the rate limiter sees them, read from
 * the shared Redis counters (ratelimit/buckets.ts keys) with the plan's limits.
 * Null when this instance has no Redis (counts are then per partner process
 * and not visible here) or Redis does not answer within 500 ms.
 */
import { lambda } from 'postgraphile/grafast';
import { extendSchema, gql } from 'postgraphile/utils';
import type { Pool } from '../db/pools';
import { keysFor, windowsAt } from '../ratelimit/buckets';
import { BUCKETS, type Bucket } from '../ratelimit/windows';
import type { RedisClient } from '../redis';

export interface BucketsSource {
  redis: RedisClient;
  /** The partner guard's key prefix (default 'pbapi:rl:'). */
  prefix?: string;
}

interface BucketNow {
  limit: number | null;
  used: number;
  remaining: number | null;
  reset: string;
}

const TIMEOUT_MS = 500;

/** The key's buckets now, or null (no answer from Redis in time). `now` is injectable for tests. */
export async function bucketsNow(
  source: BucketsSource,
  pool: Pool,
  keyId: string,
  now = Date.now(),
): Promise<Record<Bucket, BucketNow> | null> {
  const w = windowsAt(now);
  const counts = source.redis.mget(...keysFor(source.prefix ?? 'pbapi:rl:', keyId, w).slice(0, 3));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), TIMEOUT_MS)));
  try {
    const [used, limits] = await Promise.all([
      Promise.race([counts.catch(() => null), timeout]),
      pool.query<{ per_minute: number | null; per_day: number | null; per_month: number | null }>(
        `select p.per_minute, p.per_day, p.per_month from admin.api_keys k
           join admin.subscribers s on s.id = k.subscriber_id join admin.plans p on p.id = s.plan_id
          where k.id = $1`,
        [keyId],
      ),
    ]);
    const plan = limits.rows[0];
    if (!used || !plan) return null;
    const limit: Record<Bucket, number | null> = { minute: plan.per_minute, day: plan.per_day, month: plan.per_month };
    const out = {} as Record<Bucket, BucketNow>;
    BUCKETS.forEach((b, i) => {
      const n = Number(used[i] ?? 0);
      const l = limit[b];
      out[b] = {
        limit: l,
        used: n,
        remaining: l === null ? null : Math.max(0, l - n),
        reset: new Date(w.end[b]).toISOString(),
      };
    });
    return out;
  } finally {
    clearTimeout(timer);
  }
}

export function bucketsPlugin(source: BucketsSource | undefined, pool: Pool): GraphileConfig.Plugin {
  return extendSchema(
    () => ({
      typeDefs: gql`
        """
        One rate-limit window of a key now (UTC-aligned): limit null = unlimited (used is then not counted).
        """
        type KeyBucketNow {
          limit: Int
          used: Int!
          remaining: Int
          "When the window ends."
          reset: Datetime!
        }
        """
        A key's three buckets now, as the partner API's rate limiter counts them in Redis.
        """
        type KeyBucketsNow {
          minute: KeyBucketNow!
          day: KeyBucketNow!
          month: KeyBucketNow!
        }
        extend type ApiKey {
          """
          The three buckets now against the plan's limits; null without shared (Redis) counters.
          """
          bucketsNow: KeyBucketsNow
        }
      `,
      objects: {
        ApiKey: {
          plans: {
            bucketsNow($key) {
              const $id = ($key as unknown as { get(attr: string): ReturnType<typeof lambda> }).get('id');
              return lambda($id, (id) => (source && typeof id === 'string' ? bucketsNow(source, pool, id) : null));
            },
          },
        },
      },
    }),
    'OperatorBucketsNowPlugin',
  );
}
