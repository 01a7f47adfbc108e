/**
 * The rate-limit header values a key's window fixes (limits, resets, the
 * draft-8 RateLimit-Policy with its partition keys), built once per key,
 * limits and minute; per answer only the remaining counts and seconds change
 * (rateLimitHeaders).
 */
import { createHash } from 'node:crypto';
import type { PlanLimits, Windows } from './buckets';
import { BUCKETS, NOMINAL_WINDOW_MS, type Bucket } from './windows';

/** The rate-limit header values a key's window fixes (its limits, the window ends, the policy). */
export interface WindowHeaders {
  /** The limited buckets, in order. */
  limited: Bucket[];
  limit: Record<Bucket, string>;
  reset: Record<Bucket, string>;
  /** RateLimit-Policy ('' when no bucket is limited). */
  policy: string;
}

const windowHeaderCache = new Map<string, WindowHeaders>();

/** Built once per key, limits and minute (the minute's start fixes the day's and the month's). */
export function windowHeaders(keyId: string, limits: PlanLimits, w: Windows): WindowHeaders {
  const id = `${keyId}|${w.start.minute}|${limits.minute}|${limits.day}|${limits.month}`;
  let h = windowHeaderCache.get(id);
  if (h === undefined) {
    const limited = BUCKETS.filter((b) => limits[b] !== null);
    const limit = {} as Record<Bucket, string>;
    const reset = {} as Record<Bucket, string>;
    for (const b of BUCKETS) {
      limit[b] = String(limits[b] ?? -1);
      reset[b] = String(Math.ceil(w.end[b] / 1000));
    }
    const policy = limited
      .map(
        (b) =>
          `"${b}"; q=${limits[b]}; w=${Math.ceil(NOMINAL_WINDOW_MS[b] / 1000)}; pk=:${partitionKey(w.start[b], keyId)}:`,
      )
      .join(', ');
    h = { limited, limit, reset, policy };
    if (windowHeaderCache.size >= 10_000) windowHeaderCache.clear(); // old minutes: bounded, rebuilt on demand
    windowHeaderCache.set(id, h);
  }
  return h;
}

/** The draft-8 partition key of one bucket's window and key; the same for every request of that window. */
const partitionKeys = new Map<string, string>();
function partitionKey(windowStart: number, keyId: string): string {
  const id = `${windowStart}:${keyId}`;
  let pk = partitionKeys.get(id);
  if (pk === undefined) {
    pk = Buffer.from(createHash('sha256').update(id).digest('hex').slice(0, 12)).toString('base64');
    if (partitionKeys.size >= 10_000) partitionKeys.clear(); // old windows: bounded, rebuilt on demand
    partitionKeys.set(id, pk);
  }
  return pk;
}

/** A general triple: the X-RateLimit-Limit / -Remaining / -Reset of the bucket with the fewest remaining. */
export interface Triple {
  limit: number;
  remaining: number;
  reset: number;
}

/**
 * The rate-limit headers of a request's counts (`used`), name and value in turn: X-RateLimit-* (the general
 * triple, the bucket with the fewest remaining, then one triple per bucket) and the draft-8 items for
 * limited buckets. What a window fixes (limits, resets, the RateLimit-Policy value) is built once per
 * key and window (windowHeaders); per answer only the remaining counts and seconds to the ends.
 */
export function rateLimitHeaders(
  keyId: string,
  limits: PlanLimits,
  w: Windows,
  used: Record<Bucket, number>,
  now: number,
): { pairs: string[]; general: Triple } {
  const fixed = windowHeaders(keyId, limits, w);
  const remaining = { minute: '-1', day: '-1', month: '-1' } as Record<Bucket, string>;
  let general: Bucket = 'minute';
  let fewest = Infinity;
  for (const bucket of fixed.limited) {
    const left = Math.max(0, limits[bucket]! - used[bucket]);
    remaining[bucket] = String(left);
    if (left < fewest) {
      fewest = left;
      general = bucket;
    }
  }
  const pairs = [
    'X-RateLimit-Limit',
    fixed.limit[general],
    'X-RateLimit-Remaining',
    remaining[general],
    'X-RateLimit-Reset',
    fixed.reset[general],
    'X-RateLimit-Limit-Minute',
    fixed.limit.minute,
    'X-RateLimit-Remaining-Minute',
    remaining.minute,
    'X-RateLimit-Reset-Minute',
    fixed.reset.minute,
    'X-RateLimit-Limit-Day',
    fixed.limit.day,
    'X-RateLimit-Remaining-Day',
    remaining.day,
    'X-RateLimit-Reset-Day',
    fixed.reset.day,
    'X-RateLimit-Limit-Month',
    fixed.limit.month,
    'X-RateLimit-Remaining-Month',
    remaining.month,
    'X-RateLimit-Reset-Month',
    fixed.reset.month,
  ];
  // IETF draft-8, as express-rate-limit writes it (one item per limited bucket).
  if (fixed.policy) {
    let rl = '';
    for (const bucket of fixed.limited) {
      const t = Math.max(0, Math.ceil((w.end[bucket] - now) / 1000));
      rl += `${rl ? ', ' : ''}"${bucket}"; r=${remaining[bucket]}; t=${t}`;
    }
    pairs.push('RateLimit', rl, 'RateLimit-Policy', fixed.policy);
  }
  const g = {
    limit: Number(fixed.limit[general]),
    remaining: Number(remaining[general]),
    reset: Number(fixed.reset[general]),
  };
  return { pairs, general: g };
}
