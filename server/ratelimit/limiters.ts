/**
 * Per-key, per-plan rate limits: ONE express-rate-limit instance for the three
 * buckets (minute, day, month), whose store evaluates all of them — and counts
 * the request's usage — in one Redis round trip (buckets.ts).
 *
 * express-rate-limit's Store interface is one counter per call
 * (`increment(key)` → one count), so one limiter per bucket meant one Redis
 * round trip per bucket. Here the library keeps its job (skip/key/limit
 * plumbing, the request property, the 429 handler call, its validations) and
 * the store returns, as "the" count, the count of the deciding bucket: the
 * bucket that refused the request, else the limited bucket with the fewest
 * remaining (the general triple). `limit(req, res)` (called by the library
 * after `increment`) returns that same bucket's limit, so the library's
 * `totalHits > limit` is exactly the script's decision. The full outcome (every
 * bucket) is on res.locals.rateLimit.outcome; the headers are written here.
 *
 * - A bucket the plan leaves unlimited is not counted.
 * - A request rejected with 429 counts against no bucket (the script
 *   increments nothing when a bucket is full).
 * - X-RateLimit-* (general triple and one triple per bucket) and the IETF
 *   draft-8 RateLimit / RateLimit-Policy items (one per limited bucket, in the
 *   library's format) on every authenticated response, 429 included.
 * - res.locals.rateLimit.refund() un-counts the request in every bucket and in
 *   usage (a 304 counts against no bucket).
 */
import type { Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator, rateLimit, type RateLimitInfo, type RateLimitRequestHandler } from 'express-rate-limit';
import { GRAPHQL_ROUTE } from '../contract/endpoints';
import { sendError } from '../contract/errors';
import { NO_ENDPOINT } from '../contract/match';
import type { Logger } from '../log';
import { rateLimitLateCountsGivenBack, rateLimitLocalRefusals, rateLimitRejections } from '../metrics';
import type { RedisClient } from '../redis';
import { BudgetExceeded, type RedisBreaker } from './breaker';
import {
  defineBucketsCommand,
  evaluateShared,
  keysFor,
  LocalBuckets,
  windowsAt,
  type Outcome,
  type PlanLimits,
  type Windows,
} from './buckets';
import { AlignedStore } from './store';
import { rateLimitHeaders, type Triple } from './window-headers';
import { BUCKETS, NOMINAL_WINDOW_MS, windowStart, type Bucket } from './windows';

export type { PlanLimits } from './buckets';
export type { Triple } from './window-headers';

/** GraphQL's usage name: its own guard order (points weighed between authentication and limits). */
const GRAPHQL_ENDPOINT = GRAPHQL_ROUTE.slice(1);

/**
 * A key refused because a bucket was full: until that bucket's window ends the
 * process refuses the key itself (no Redis, no PostgreSQL), as the script would
 * (a refused request counts against no bucket, so a full bucket stays full
 * until its window ends; other instances' refunds aside, see docs/OPERATIONS.md).
 */
interface Refusal {
  bucket: Bucket;
  /** The refusing bucket's window end (ms). */
  until: number;
  /** The limits it was decided with (a plan change makes it stale). */
  limits: PlanLimits;
  /** Window starts and counts at the refusal: a bucket still in its window shows the same count. */
  start: Record<Bucket, number>;
  used: Record<Bucket, number>;
  shared: boolean;
  /** Its 429's headers in the current second (PartnerRateLimits.refusalAnswer). */
  answer?: RefusalAnswer & { second: number };
}

/**
 * What the guard gives the refused-key shortcut (http/refused-shortcut.ts) for a request this process
 * refuses itself: a key's (a full bucket) or a blocked address's (the failed-auth limit; guard.ts
 * knownRefusal).
 */
export interface KnownRefusalAnswer {
  /** When the refusing window ends (ms): the refusal's last instant. */
  readonly until: number;
  /** Puts the guard's identity and context on the response (as authentication does) and gives the 429. */
  answer(res: Response): Refused429;
  /** The guard's accounting of the answer (usage, history), once it is written. */
  account(res: Response): void;
}

/** A 429 the shortcut writes: its headers and its error body's fields. */
export interface Refused429 {
  /** The rate-limit headers (a key's) and Retry-After, name and value in turn. */
  readonly headers: readonly string[];
  /** The error body's fields: the refusing bucket and its limit. */
  readonly bucket: Bucket;
  readonly limit: number;
}

/** A refused key's 429, for the refused-key shortcut to write (PartnerRateLimits.refusalAnswer). */
export interface RefusalAnswer extends Refused429 {
  readonly general: Triple;
}

/** More refused keys than this at once: forgotten (they are asked of Redis again). */
const MAX_REFUSALS = 100_000;

export interface RateLimitContext {
  keyId: string;
  limits: PlanLimits;
  /** The usage field (endpoint) counted with the request in Redis. */
  endpoint?: string;
  windows?: Windows;
  outcome?: Outcome;
  /** Set once refund() ran. */
  refunded?: boolean;
  /** Requests this one counts as (default 1): a GraphQL query's points; 0 counts nothing (a rejected query). */
  weight?: number;
  /** A free endpoint (FREE_ENDPOINTS): counted nowhere, not in the usage history either. */
  free?: boolean;
  /**
   * Un-counts the request answered on `res` in every bucket and in usage (e.g. a 304). Idempotent.
   * One function per limiter, not a closure per request: see PartnerRateLimits.refundAnswer.
   */
  refund?: (res: Response) => Promise<void>;
  /** The general triple last written as X-RateLimit-* (the bucket with the fewest remaining). */
  general?: Triple;
  /** Refused by the process's memory of a full bucket (Refusal), not by Redis: its 429 is counted by the guard. */
  refusedLocally?: boolean;
  /** That memory, as refusalFor found it (its 429's headers are kept on it: refusalAnswer). */
  refusal?: Refusal;
}

export interface LimiterOptions {
  redis?: RedisClient;
  /** Budget + circuit breaker around every Redis call (required with redis). */
  breaker?: RedisBreaker;
  redisPrefix: string;
  logger: Logger;
  /** The endpoint (route pattern) of a request before routing, for usage counted in Redis. */
  endpointOf: (req: Request) => string;
}

export const FAILED_AUTH_LIMIT = 30;

/** Endpoints that count against no bucket (decisions.md v1.2 "Usage for partners"): their counts are read only. */
export const FREE_ENDPOINTS: ReadonlySet<string> = new Set(['usage', 'usage/history', 'usage/requests']);

/** The rate-limit context the guard put on the response (res.locals.rateLimit). */
export function rateLimitContext(res: Response): RateLimitContext {
  return res.locals.rateLimit as RateLimitContext;
}

function secondsUntil(time: number): number {
  return Math.max(1, Math.ceil((time - Date.now()) / 1000));
}

function libraryLogger(logger: Logger) {
  return {
    warn: (err: unknown, message?: string) => logger.warn({ err }, message ?? 'express-rate-limit'),
    error: (err: unknown, message?: string) => logger.error({ err }, message ?? 'express-rate-limit'),
  };
}

/** The bucket whose count the library sees: the refusing one, else the limited one with the fewest left. */
function deciding(ctx: RateLimitContext): Bucket | undefined {
  const o = ctx.outcome!;
  if (o.rejectedBy) return o.rejectedBy;
  let best: Bucket | undefined;
  let fewest = Infinity;
  for (const b of BUCKETS) {
    const limit = ctx.limits[b];
    if (limit === null) continue;
    const left = limit - o.used[b];
    if (left < fewest) {
      fewest = left;
      best = b;
    }
  }
  return best;
}

/**
 * The library's store: `increment(key)` evaluates the three buckets of the
 * request registered under `key` by the key generator, in one round trip.
 */
class ThreeBucketStore {
  readonly localKeys: boolean;
  readonly prefix: string;
  readonly pending = new Map<string, RateLimitContext>();
  readonly local = new LocalBuckets();
  /** Key id -> its refusal, until the refusing bucket's window ends. */
  readonly refusals = new Map<string, Refusal>();

  constructor(private readonly options: LimiterOptions) {
    this.localKeys = !options.redis;
    this.prefix = options.redisPrefix;
    if (options.redis) defineBucketsCommand(options.redis);
  }

  async increment(key: string): Promise<{ totalHits: number; resetTime: Date }> {
    const ctx = this.pending.get(key)!;
    this.pending.delete(key);
    const known = this.knownRefusal(ctx);
    if (known) {
      ctx.outcome = known;
      ctx.refusedLocally = true;
      rateLimitLocalRefusals.inc({ bucket: known.rejectedBy! });
    } else {
      ctx.outcome = await this.evaluate(ctx, 'hit');
      this.noteRefusal(ctx);
    }
    const b = deciding(ctx);
    if (!b) return { totalHits: 1, resetTime: new Date(ctx.windows!.end.minute) };
    const limit = ctx.limits[b]!;
    const totalHits = ctx.outcome.rejectedBy ? limit + 1 : ctx.outcome.used[b];
    return { totalHits, resetTime: new Date(ctx.windows!.end[b]) };
  }

  /**
   * The outcome the script would give a key refused earlier in the refusing bucket's window: the
   * same bucket refuses; a bucket still in the window of the refusal shows its count then, one in a
   * later window (e.g. the next minute while the day is full) shows 0, as its new counter in Redis.
   */
  knownRefusal(ctx: RateLimitContext): Outcome | undefined {
    const r = this.refusals.get(ctx.keyId);
    if (!r) return undefined;
    const w = ctx.windows!;
    if (w.end[r.bucket] !== r.until || BUCKETS.some((b) => ctx.limits[b] !== r.limits[b])) {
      this.refusals.delete(ctx.keyId);
      return undefined;
    }
    if ((ctx.weight ?? 1) <= 0) return undefined; // a request that counts nothing is never refused
    const used = { minute: 0, day: 0, month: 0 };
    for (const b of BUCKETS) if (ctx.limits[b] !== null && w.start[b] === r.start[b]) used[b] = r.used[b];
    return { rejectedBy: r.bucket, used, shared: r.shared };
  }

  /** Remembers a refusal by a full bucket (one that refuses any request, whatever its weight). */
  private noteRefusal(ctx: RateLimitContext): void {
    const o = ctx.outcome!;
    const b = o.rejectedBy;
    if (!b) return;
    const limit = ctx.limits[b];
    if (limit === null || o.used[b] < limit) return; // refused by weight only: a lighter request may pass
    if (this.refusals.size >= MAX_REFUSALS) this.refusals.clear();
    const w = ctx.windows!;
    this.refusals.set(ctx.keyId, {
      bucket: b,
      until: w.end[b],
      limits: { ...ctx.limits },
      start: { ...w.start },
      used: { ...o.used },
      shared: o.shared,
    });
  }

  async evaluate(ctx: RateLimitContext, op: 'hit' | 'refund', shared = true): Promise<Outcome> {
    const { redis, breaker, redisPrefix, logger } = this.options;
    const w = ctx.windows!;
    if (redis && breaker && shared && !breaker.available) breaker.noteFallback();
    else if (redis && breaker && shared) {
      try {
        return await breaker.run(() =>
          evaluateShared(redis, redisPrefix, ctx.keyId, ctx.limits, w, ctx.endpoint!, op, ctx.weight ?? 1),
        );
      } catch (err) {
        logger.warn(
          { err: { message: (err as Error).message } },
          'Redis rate-limit evaluation failed; counting in process',
        );
        if (op === 'hit' && err instanceof BudgetExceeded && err.late) this.giveBackIfLate(ctx, err.late);
      }
    }
    return this.local.evaluate(ctx.keyId, ctx.limits, w, op, ctx.weight ?? 1);
  }

  /**
   * A hit that ran out of its budget is counted in process. If Redis runs it all the same (a stall
   * shorter than the client's command timeout, 1 s), the reply still arrives: its count there is
   * given back at once, on the same connection, so the request counts once (docs/CREDENTIALS.md).
   */
  private giveBackIfLate(ctx: RateLimitContext, late: Promise<unknown>): void {
    const { redis, redisPrefix, logger } = this.options;
    const weight = ctx.weight ?? 1;
    late.then(
      async (reply) => {
        const counted = reply as Outcome;
        if (counted.rejectedBy || weight <= 0) return; // the script counted it in no bucket
        const { keyId, limits, windows, endpoint } = ctx;
        try {
          await evaluateShared(redis!, redisPrefix, keyId, limits, windows!, endpoint!, 'refund', weight);
        } catch (err) {
          logger.warn(
            { keyId, err: { message: (err as Error).message } },
            'a request counted in process after its Redis budget ran out was counted in Redis too, and giving it back there failed: it counts twice in this window',
          );
          return;
        }
        rateLimitLateCountsGivenBack.inc();
        logger.warn(
          { keyId },
          'a request counted in process after its Redis budget ran out was counted in Redis too; given back there',
        );
      },
      // no reply within the client's command timeout (Redis may still run it later: CREDENTIALS.md)
      () => undefined,
    );
  }

  /** The buckets' counts without counting this request (GET usage): Redis when available, else in process. */
  async peek(ctx: RateLimitContext): Promise<Outcome> {
    const { redis, breaker } = this.options;
    const w = ctx.windows!;
    if (redis && breaker?.available) {
      try {
        const counts = await breaker.run(() => redis.mget(...keysFor(this.prefix, ctx.keyId, w).slice(0, 3)));
        const [minute, day, month] = counts.map((c) => Number(c ?? 0));
        return { used: { minute: minute!, day: day!, month: month! }, shared: false };
      } catch {
        // counted in process below
      }
    }
    const used = { minute: 0, day: 0, month: 0 };
    for (const b of BUCKETS) used[b] = this.local.peek(ctx.keyId, w, b);
    return { used, shared: false };
  }

  // The script never counts a refused request, so there is nothing to give back.
  decrement(): void {}
  resetKey(): void {}
  shutdown(): void {
    this.local.shutdown();
  }
}

export class PartnerRateLimits {
  private readonly limiter: RateLimitRequestHandler;
  private readonly store: ThreeBucketStore;
  private readonly stores: { shutdown(): void }[] = [];
  private seq = 0;
  readonly failedAuth: RateLimitRequestHandler;

  constructor(private readonly options: LimiterOptions) {
    this.store = new ThreeBucketStore(options);
    this.stores.push(this.store);
    this.limiter = rateLimit({
      windowMs: NOMINAL_WINDOW_MS.minute,
      keyGenerator: (req, res) => {
        const ctx = rateLimitContext(res);
        ctx.windows = windowsAt(Date.now());
        ctx.endpoint = options.endpointOf(req);
        const key = `${ctx.keyId}#${(this.seq = (this.seq + 1) % Number.MAX_SAFE_INTEGER)}`;
        this.store.pending.set(key, ctx);
        ctx.refund = this.refundAnswer;
        return key;
      },
      limit: (_req, res) => {
        const ctx = rateLimitContext(res);
        const b = deciding(ctx);
        return b ? ctx.limits[b]! : Number.MAX_SAFE_INTEGER;
      },
      // A free endpoint: the counts are read, not incremented; the request counts in no bucket and no usage.
      skip: async (req, res) => {
        if (!FREE_ENDPOINTS.has(options.endpointOf(req))) return false;
        const ctx = rateLimitContext(res);
        ctx.windows = windowsAt(Date.now());
        ctx.outcome = await this.store.peek(ctx);
        ctx.refunded = true;
        ctx.free = true;
        return true;
      },
      requestPropertyName: 'rateLimit_buckets',
      standardHeaders: false,
      legacyHeaders: false,
      handler: (_req, res) => this.reject(res),
      store: this.store,
      logger: libraryLogger(options.logger),
    });

    // More than 30 failed authentications a minute from one address: 429.
    // Run by the guard on the failure path only, so valid keys are unaffected.
    const failedStore = new AlignedStore({
      bucket: 'minute',
      redis: options.redis,
      breaker: options.breaker,
      prefix: `${options.redisPrefix}failed-auth:`,
      logger: options.logger,
    });
    this.stores.push(failedStore);
    this.failedAuth = rateLimit({
      windowMs: NOMINAL_WINDOW_MS.minute,
      limit: FAILED_AUTH_LIMIT,
      keyGenerator: (req) => `${windowStart('minute', Date.now())}:${clientAddress(req)}`,
      requestPropertyName: 'rateLimit_failedAuth',
      standardHeaders: false,
      legacyHeaders: false,
      handler: (req, res) => {
        const info = (req as unknown as Record<string, RateLimitInfo>).rateLimit_failedAuth;
        rateLimitRejections.inc({ bucket: 'failed_auth' });
        res.setHeader('Retry-After', String(secondsUntil(info?.resetTime?.getTime() ?? Date.now())));
        sendError(res, 429, 'Rate limit exceeded', { limit: FAILED_AUTH_LIMIT, period: 'minute' });
      },
      store: failedStore,
      logger: libraryLogger(options.logger),
    });
  }

  /** The limiter, then the header writer; after authentication. */
  get handlers(): RequestHandler[] {
    const setHeaders: RequestHandler = (_req, res, next) => {
      this.writeHeaders(res);
      next();
    };
    return [this.limiter, setHeaders];
  }

  /** Whether this process refuses any key locally now (the shortcut's first, cheapest test). */
  get refusing(): boolean {
    return this.store.refusals.size > 0;
  }

  /**
   * For the refused-key shortcut (http/refused-shortcut.ts): the context of a request this process
   * refuses without asking anyone, as the limiter's store would (a full bucket, until its window
   * ends); undefined when the request must take the usual way (a free endpoint, GraphQL, a path no
   * declared route serves, or no refusal).
   */
  refusalFor(req: Request, keyId: string, limits: PlanLimits): RateLimitContext | undefined {
    if (!this.store.refusals.has(keyId)) return undefined;
    const endpoint = this.options.endpointOf(req);
    if (endpoint === NO_ENDPOINT || endpoint === GRAPHQL_ENDPOINT || FREE_ENDPOINTS.has(endpoint)) return undefined;
    const ctx: RateLimitContext = { keyId, limits, windows: windowsAt(Date.now()), endpoint };
    const outcome = this.store.knownRefusal(ctx);
    if (!outcome) return undefined;
    ctx.outcome = outcome;
    ctx.refusedLocally = true;
    ctx.refusal = this.store.refusals.get(keyId); // knownRefusal kept it
    return ctx;
  }

  /**
   * For the shortcut: the 429 of an address blocked until `until` (the failed-auth limit reached in
   * this process), as the failed-auth limiter's handler gives it, without counting the failure in
   * Redis (the count is already over the limit until the window ends). Only where the usual way
   * reaches the guard's failure path: a declared REST endpoint (free ones too; not GraphQL, whose
   * requests take their own way).
   */
  failedAuthRefusal(req: Request, until: number): KnownRefusalAnswer | undefined {
    const endpoint = this.options.endpointOf(req);
    if (endpoint === NO_ENDPOINT || endpoint === GRAPHQL_ENDPOINT) return undefined;
    return {
      until,
      answer() {
        rateLimitLocalRefusals.inc({ bucket: 'failed_auth' });
        rateLimitRejections.inc({ bucket: 'failed_auth' });
        return { headers: ['Retry-After', String(secondsUntil(until))], bucket: 'minute', limit: FAILED_AUTH_LIMIT };
      },
      account() {}, // no key: no usage; the usual way's count in Redis is already over the limit
    };
  }

  /** The 429 of a refused request: the rate-limit headers, Retry-After, the contract's error body. */
  private reject(res: Response): void {
    const ctx = rateLimitContext(res);
    const bucket = ctx.outcome!.rejectedBy!;
    rateLimitRejections.inc({ bucket });
    this.writeHeaders(res);
    res.setHeader('Retry-After', String(secondsUntil(ctx.windows!.end[bucket])));
    sendError(res, 429, 'Rate limit exceeded', { limit: ctx.limits[bucket], period: bucket });
  }

  /** Limited buckets counted for this request (for usage alerts); none when refused or refunded. */
  counted(res: Response): { bucket: Bucket; used: number; limit: number; resetTime: Date }[] {
    const ctx = rateLimitContext(res);
    if (!ctx?.outcome || ctx.outcome.rejectedBy || ctx.refunded) return [];
    return BUCKETS.flatMap((bucket) => {
      const limit = ctx.limits[bucket];
      return limit === null
        ? []
        : [{ bucket, used: ctx.outcome!.used[bucket], limit, resetTime: new Date(ctx.windows!.end[bucket]) }];
    });
  }

  /**
   * The context's refund, shared by every request. A closure per request holding `res` made V8
   * keep whole answers alive: when the context object is allocated in the old generation (V8
   * pretenures an allocation site whose objects tend to survive, as contexts waiting for Redis
   * do), its reference to a young closure keeps that closure, `res` and everything `res` reaches
   * alive through every minor collection until the next full one, so each 429 of a flood
   * promoted ~15 KB (docs/performance/2026-11-28-v1.3.md, machine Y).
   */
  private readonly refundAnswer = (res: Response): Promise<void> => this.refund(rateLimitContext(res), res);

  private async refund(ctx: RateLimitContext, res: Response): Promise<void> {
    if (ctx.refunded || !ctx.outcome || ctx.outcome.rejectedBy) return;
    ctx.refunded = true;
    if (ctx.outcome.shared) {
      // Off the answer's path: the 304 shows the counts it was counted with, less itself, and the
      // refund goes to Redis behind it. On one client connection Redis runs commands in the order
      // sent, so the key's next request is counted after the refund.
      for (const b of BUCKETS) if (ctx.limits[b] !== null) ctx.outcome.used[b] = Math.max(0, ctx.outcome.used[b] - 1);
      this.writeHeaders(res);
      void this.store.evaluate({ ...ctx, outcome: { ...ctx.outcome } }, 'refund', true);
      return;
    }
    // Given back where it was counted (a refund never moves to Redis if the hit was counted in process).
    const after = await this.store.evaluate(ctx, 'refund', false);
    for (const b of BUCKETS) if (ctx.limits[b] !== null) ctx.outcome.used[b] = after.used[b];
    this.writeHeaders(res); // the answer (e.g. a 304) shows the counts without it
  }

  /**
   * X-RateLimit-* for every bucket and the draft-8 items for limited buckets, from the outcome
   * (rateLimitHeaders).
   */
  private writeHeaders(res: Response): void {
    if (res.headersSent) return;
    const ctx = rateLimitContext(res);
    const { pairs, general } = rateLimitHeaders(ctx.keyId, ctx.limits, ctx.windows!, ctx.outcome!.used, Date.now());
    for (let i = 0; i < pairs.length; i += 2) res.setHeader(pairs[i]!, pairs[i + 1]!);
    ctx.general = general;
  }

  /**
   * The 429 of a context refusalFor gave, for the shortcut to write itself: its rate-limit headers
   * and Retry-After (name and value in turn, as reject() sets them) and the error body's fields.
   * Counted as reject() counts. Within one second a refusal's headers do not change (the window
   * ends are whole seconds, so the seconds left to each are the same all through it, and the counts
   * are the refusal's), so they are built once per refusal and second: on the refusal refusalFor
   * found, which a 429 held (http/refusal-hold.ts) keeps even if the process has forgotten or
   * replaced it meanwhile (its window turned, the plan changed).
   */
  refusalAnswer(ctx: RateLimitContext): RefusalAnswer {
    const bucket = ctx.outcome!.rejectedBy!;
    rateLimitLocalRefusals.inc({ bucket });
    rateLimitRejections.inc({ bucket });
    ctx.refund = this.refundAnswer; // a refused request has nothing to give back (a no-op)
    const refusal = ctx.refusal!;
    const now = Date.now();
    const second = Math.floor(now / 1000);
    let answer = refusal.answer;
    if (answer === undefined || answer.second !== second) {
      const { pairs, general } = rateLimitHeaders(ctx.keyId, ctx.limits, ctx.windows!, ctx.outcome!.used, now);
      pairs.push('Retry-After', String(secondsUntil(ctx.windows!.end[bucket])));
      answer = { second, headers: pairs, general, limit: ctx.limits[bucket]!, bucket };
      refusal.answer = answer;
    }
    ctx.general = answer.general;
    return answer;
  }

  async close(): Promise<void> {
    for (const store of this.stores) store.shutdown();
  }
}

/** The client address the failed-auth limit counts by (an IPv6 /56, like the library's default). */
export function clientAddress(req: Request): string {
  return ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown');
}
