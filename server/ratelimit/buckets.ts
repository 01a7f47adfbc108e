/**
 * All three buckets of a request (minute, day, month) and its usage count,
 * evaluated at once: in Redis by one Lua script (one round trip, EVALSHA via
 * ioredis defineCommand), or in process (no Redis, or the fallback).
 *
 * Semantics (decisions.md "Rate limits"):
 * - windows aligned to UTC (windows.ts); the window ends are passed in, so the
 *   counters expire exactly at their window's end;
 * - an unlimited bucket is not counted;
 * - the request is rejected by the first limited bucket (minute, day, month)
 *   that is full, and then counts against NO bucket (nothing is incremented);
 *   it is counted in usage as rate-limited;
 * - otherwise every limited bucket is incremented and the usage of the
 *   request's endpoint for the key and UTC day is incremented.
 *
 * Keys (one hash slot per API key, `{<key id>}` is the Redis Cluster hash tag):
 *   <prefix>{<key id>}:m:<window start ms>  minute counter
 *   <prefix>{<key id>}:d:<window start ms>  day counter
 *   <prefix>{<key id>}:M:<window start ms>  month counter
 *   <prefix>{<key id>}:u:<YYYY-MM-DD>       usage hash: endpoint -> requests, '#429' -> rate limited
 */
import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from '../redis';
import { BUCKETS, windowEnd, windowStart, type Bucket } from './windows';

/** A plan's limits; null = unlimited. */
export type PlanLimits = Record<Bucket, number | null>;

/** The usage field of rate-limited requests. */
export const RATE_LIMITED_FIELD = '#429';

/** Usage hashes live this long after their day ends (for the flusher to read them). */
export const USAGE_TTL_AFTER_DAY_MS = 2 * 86_400_000;

const LETTER: Record<Bucket, string> = { minute: 'm', day: 'd', month: 'M' };

export const BUCKETS_LUA = `
-- KEYS: minute, day, month counters; usage hash
-- ARGV: limits (-1 = unlimited) x3, counter expiry (ms since epoch) x3, usage field, usage expiry, op, now (ms),
--       weight (requests this one counts as: a GraphQL query's points; 0 counts nothing and refuses nothing;
--       a refund gives back as many)
-- The usage hash also holds '#v' (a version bumped by every change, for idempotent flushes) and '#t' (last use).
local op = ARGV[9]
local weight = tonumber(ARGV[11] or '1')
local counts = {0, 0, 0}
if redis.call('HINCRBY', KEYS[4], '#v', 1) == 1 then redis.call('PEXPIREAT', KEYS[4], ARGV[8]) end
if op == 'refund' then
  for i = 1, 3 do
    if tonumber(ARGV[i]) >= 0 then
      local c = tonumber(redis.call('GET', KEYS[i]) or '0')
      if c > 0 then counts[i] = redis.call('DECRBY', KEYS[i], math.min(c, weight)) end
    end
  end
  local u = tonumber(redis.call('HGET', KEYS[4], ARGV[7]) or '0')
  if u > 0 then redis.call('HINCRBY', KEYS[4], ARGV[7], -math.min(u, weight)) end
  return {0, counts[1], counts[2], counts[3]}
end
local rejected = 0
for i = 1, 3 do
  local limit = tonumber(ARGV[i])
  if limit >= 0 then
    counts[i] = tonumber(redis.call('GET', KEYS[i]) or '0')
    if rejected == 0 and weight > 0 and counts[i] + weight > limit then rejected = i end
  end
end
if rejected == 0 then
  if weight > 0 then
    for i = 1, 3 do
      if tonumber(ARGV[i]) >= 0 then
        if weight == 1 then counts[i] = redis.call('INCR', KEYS[i]) else counts[i] = redis.call('INCRBY', KEYS[i], weight) end
        if counts[i] == weight then redis.call('PEXPIREAT', KEYS[i], ARGV[3 + i]) end
      end
    end
    redis.call('HINCRBY', KEYS[4], ARGV[7], weight)
    redis.call('HSET', KEYS[4], '#t', ARGV[10])
  end
else
  redis.call('HINCRBY', KEYS[4], '${RATE_LIMITED_FIELD}', 1)
end
return {rejected, counts[1], counts[2], counts[3]}
`;

type WithBuckets = { pbapiBuckets(...args: (string | number)[]): Promise<number[]> };

/** Registers the script on a client (EVALSHA, EVAL on NOSCRIPT; routed by key on a cluster). */
export function defineBucketsCommand(redis: RedisClient): void {
  const r = redis as (Redis | Cluster) & Partial<WithBuckets>;
  if (typeof r.pbapiBuckets === 'function') return;
  r.defineCommand('pbapiBuckets', { numberOfKeys: 4, lua: BUCKETS_LUA });
}

export interface Windows {
  start: Record<Bucket, number>;
  end: Record<Bucket, number>;
  /** The UTC day (YYYY-MM-DD) usage is counted in. */
  day: string;
}

/** The windows of the current minute: every request of a minute has the same (they are read, never changed). */
let minuteWindows: Windows | undefined;

/** The windows `now` falls in (the minute's start fixes the day's and the month's): built once per minute. */
export function windowsAt(now: number): Windows {
  const w = minuteWindows;
  if (w !== undefined && now >= w.start.minute && now < w.end.minute) return w;
  const start = {} as Record<Bucket, number>;
  const end = {} as Record<Bucket, number>;
  for (const b of BUCKETS) {
    start[b] = windowStart(b, now);
    end[b] = windowEnd(b, start[b]);
  }
  const built = Object.freeze({
    start: Object.freeze(start),
    end: Object.freeze(end),
    day: new Date(now).toISOString().slice(0, 10),
  });
  if (w === undefined || now >= w.end.minute) minuteWindows = built; // a request from the past is not kept
  return built;
}

export interface Outcome {
  /** The bucket that refused the request (nothing was counted), if any. */
  rejectedBy?: Bucket;
  /** Per limited bucket: its count in the window after this request (or now, when rejected). 0 for unlimited. */
  used: Record<Bucket, number>;
  /** Counted in Redis (shared), or in process. */
  shared: boolean;
}

export function keysFor(prefix: string, keyId: string, w: Windows): string[] {
  const tag = `${prefix}{${keyId}}`;
  return [...BUCKETS.map((b) => `${tag}:${LETTER[b]}:${w.start[b]}`), usageKey(prefix, keyId, w.day)];
}

export function usageKey(prefix: string, keyId: string, day: string): string {
  return `${prefix}{${keyId}}:u:${day}`;
}

function args(
  limits: PlanLimits,
  w: Windows,
  field: string,
  op: 'hit' | 'refund',
  weight: number,
): (string | number)[] {
  return [
    ...BUCKETS.map((b) => limits[b] ?? -1),
    ...BUCKETS.map((b) => w.end[b] + 1000),
    field,
    Date.parse(`${w.day}T00:00:00Z`) + 86_400_000 + USAGE_TTL_AFTER_DAY_MS,
    op,
    Date.now(),
    weight,
  ];
}

function outcome(reply: number[], shared: boolean): Outcome {
  const [rejected, m, d, M] = reply.map(Number) as [number, number, number, number];
  return { rejectedBy: rejected ? BUCKETS[rejected - 1] : undefined, used: { minute: m, day: d, month: M }, shared };
}

/** One round trip: evaluate (or refund) the request in Redis. */
export async function evaluateShared(
  redis: RedisClient,
  prefix: string,
  keyId: string,
  limits: PlanLimits,
  w: Windows,
  field: string,
  op: 'hit' | 'refund' = 'hit',
  weight = 1,
): Promise<Outcome> {
  const reply = await (redis as unknown as WithBuckets).pbapiBuckets(
    ...keysFor(prefix, keyId, w),
    ...args(limits, w, field, op, weight),
  );
  return outcome(reply, true);
}

/** The same evaluation in process (per instance): no Redis, or Redis unavailable. */
export class LocalBuckets {
  private readonly counters = new Map<string, { hits: number; expires: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor() {
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
  }

  evaluate(keyId: string, limits: PlanLimits, w: Windows, op: 'hit' | 'refund' = 'hit', weight = 1): Outcome {
    const keys = keysFor('', keyId, w);
    const used = { minute: 0, day: 0, month: 0 } as Record<Bucket, number>;
    const counter = (i: number) => this.counters.get(keys[i]!);
    if (op === 'refund') {
      BUCKETS.forEach((b, i) => {
        const c = counter(i);
        if (limits[b] !== null && c && c.hits > 0) used[b] = c.hits = Math.max(0, c.hits - weight);
      });
      return { used, shared: false };
    }
    let rejectedBy: Bucket | undefined;
    BUCKETS.forEach((b, i) => {
      const limit = limits[b];
      if (limit === null) return;
      used[b] = counter(i)?.hits ?? 0;
      if (!rejectedBy && weight > 0 && used[b] + weight > limit) rejectedBy = b;
    });
    if (!rejectedBy && weight > 0) {
      BUCKETS.forEach((b, i) => {
        if (limits[b] === null) return;
        let c = counter(i);
        if (!c) this.counters.set(keys[i]!, (c = { hits: 0, expires: w.end[b] }));
        used[b] = c.hits += weight;
      });
    }
    return { rejectedBy, used, shared: false };
  }

  /** What a bucket has used in a window (headers of requests counted elsewhere). */
  peek(keyId: string, w: Windows, bucket: Bucket): number {
    return this.counters.get(keysFor('', keyId, w)[BUCKETS.indexOf(bucket)]!)?.hits ?? 0;
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, c] of this.counters) if (c.expires <= now) this.counters.delete(key);
  }

  shutdown(): void {
    clearInterval(this.sweeper);
    this.counters.clear();
  }
}
