/**
 * Rate-limit windows aligned to UTC: the clock minute, the UTC day and the
 * UTC calendar month. A window is identified by its start (ms since epoch).
 */
export type Bucket = 'minute' | 'day' | 'month';

export const BUCKETS: readonly Bucket[] = ['minute', 'day', 'month'];

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

export function windowStart(bucket: Bucket, now: number): number {
  switch (bucket) {
    case 'minute':
      return now - (now % MINUTE_MS);
    case 'day':
      return now - (now % DAY_MS);
    case 'month': {
      const d = new Date(now);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
  }
}

export function windowEnd(bucket: Bucket, start: number): number {
  switch (bucket) {
    case 'minute':
      return start + MINUTE_MS;
    case 'day':
      return start + DAY_MS;
    case 'month': {
      const d = new Date(start);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
  }
}

/** The nominal length, for the `w` of the RateLimit-Policy header and store expiry (a month: its longest). */
export const NOMINAL_WINDOW_MS: Record<Bucket, number> = {
  minute: MINUTE_MS,
  day: DAY_MS,
  month: 31 * DAY_MS,
};
