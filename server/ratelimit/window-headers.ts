/**
 * The rate-limit header values a key's window fixes (limits, resets, the
 * draft-8 RateLimit-Policy with its partition keys), built once per key,
 * limits and minute; per answer only the remaining counts and seconds change
 * (limiters.ts writeHeaders).
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
