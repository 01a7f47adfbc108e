/**
 * Per-key, per-plan rate limits: one express-rate-limit instance per bucket
 * (minute, day, month), each counting in a UTC-aligned window (store.ts).
 *
 * - A bucket the plan leaves unlimited is skipped (not counted).
 * - A request rejected with 429 counts against no bucket: every limiter
 *   decrements its count again when the response is a 429 (skipFailedRequests
 *   with "failed" meaning 429), so a minute rejection does not consume the
 *   day, and a day rejection gives the minute its request back.
 * - X-RateLimit-* headers (general triple and one triple per bucket) are set
 *   here on every authenticated response, 429 included; the library adds the
 *   IETF draft-8 RateLimit / RateLimit-Policy headers for limited buckets.
 */
import type { Request, RequestHandler, Response } from 'express';
import { ipKeyGenerator, rateLimit, type RateLimitInfo, type RateLimitRequestHandler } from 'express-rate-limit';
import { sendError } from '../http/errors';
import type { Logger } from '../log';
import type { RedisClient } from '../redis';
import { AlignedStore } from './store';
import { BUCKETS, NOMINAL_WINDOW_MS, windowEnd, windowStart, type Bucket } from './windows';

/** A plan's limits; null = unlimited. */
export type PlanLimits = Record<Bucket, number | null>;

export interface RateLimitContext {
  keyId: string;
  limits: PlanLimits;
}

export interface LimiterOptions {
  redis?: RedisClient;
  redisPrefix: string;
  logger: Logger;
}

export const FAILED_AUTH_LIMIT = 30;

const infoProperty = (bucket: Bucket) => `rateLimit_${bucket}`;

/** The rate-limit context the guard put on the response (res.locals.rateLimit). */
export function rateLimitContext(res: Response): RateLimitContext {
  return res.locals.rateLimit as RateLimitContext;
}

function bucketInfo(req: Request, bucket: Bucket): RateLimitInfo | undefined {
  return (req as unknown as Record<string, RateLimitInfo | undefined>)[infoProperty(bucket)];
}

function secondsUntil(time: Date | undefined): number {
  return Math.max(1, Math.ceil(((time?.getTime() ?? Date.now()) - Date.now()) / 1000));
}

function libraryLogger(logger: Logger) {
  return {
    warn: (err: unknown, message?: string) => logger.warn({ err }, message ?? 'express-rate-limit'),
    error: (err: unknown, message?: string) => logger.error({ err }, message ?? 'express-rate-limit'),
  };
}

interface Triple { limit: number; remaining: number; reset: number }

export class PartnerRateLimits {
  private readonly limiters: Record<Bucket, RateLimitRequestHandler>;
  private readonly stores: AlignedStore[] = [];
  readonly failedAuth: RateLimitRequestHandler;

  constructor(options: LimiterOptions) {
    const store = (bucket: Bucket, prefix = options.redisPrefix) => {
      const s = new AlignedStore({ bucket, redis: options.redis, prefix, logger: options.logger });
      this.stores.push(s);
      return s;
    };
    const limiter = (bucket: Bucket) => rateLimit({
      windowMs: NOMINAL_WINDOW_MS[bucket],
      limit: (_req, res) => rateLimitContext(res).limits[bucket] ?? Number.MAX_SAFE_INTEGER,
      skip: (_req, res) => rateLimitContext(res).limits[bucket] === null,
      keyGenerator: (_req, res) => `${windowStart(bucket, Date.now())}:${rateLimitContext(res).keyId}`,
      identifier: bucket,
      requestPropertyName: infoProperty(bucket),
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      retryAfter: (req) => secondsUntil(bucketInfo(req, bucket)?.resetTime),
      skipFailedRequests: true,
      requestWasSuccessful: (_req, res) => res.statusCode !== 429,
      handler: async (req, res) => {
        await this.writeHeaders(req, res, bucket);
        const info = bucketInfo(req, bucket)!;
        sendError(res, 429, 'Rate limit exceeded', { limit: info.limit, period: bucket });
      },
      store: store(bucket),
      logger: libraryLogger(options.logger),
    });
    this.limiters = { minute: limiter('minute'), day: limiter('day'), month: limiter('month') };

    // More than 30 failed authentications a minute from one address: 429.
    // Run by the guard on the failure path only, so valid keys are unaffected.
    this.failedAuth = rateLimit({
      windowMs: NOMINAL_WINDOW_MS.minute,
      limit: FAILED_AUTH_LIMIT,
      keyGenerator: (req) => `${windowStart('minute', Date.now())}:${clientAddress(req)}`,
      requestPropertyName: 'rateLimit_failedAuth',
      standardHeaders: false,
      legacyHeaders: false,
      handler: (req, res) => {
        const info = (req as unknown as Record<string, RateLimitInfo>).rateLimit_failedAuth;
        res.setHeader('Retry-After', String(secondsUntil(info?.resetTime)));
        sendError(res, 429, 'Rate limit exceeded', { limit: FAILED_AUTH_LIMIT, period: 'minute' });
      },
      store: store('minute', `${options.redisPrefix}failed-auth:`),
      logger: libraryLogger(options.logger),
    });
  }

  /** The bucket limiters in order, then the header writer; all after authentication. */
  get handlers(): RequestHandler[] {
    const setHeaders: RequestHandler = (req, res, next) => {
      this.writeHeaders(req, res).then(() => next(), next);
    };
    return [this.limiters.minute, this.limiters.day, this.limiters.month, setHeaders];
  }

  /** What each bucket has used in this request's windows (limited buckets that were counted). */
  counted(req: Request): { bucket: Bucket; info: RateLimitInfo }[] {
    return BUCKETS.flatMap((bucket) => {
      const info = bucketInfo(req, bucket);
      return info ? [{ bucket, info }] : [];
    });
  }

  /**
   * X-RateLimit-* for every bucket. On a 429 (`rejectedBy`) buckets counted
   * before it get their request back (it will be decremented), and buckets
   * after it, not counted, are read from their store.
   */
  private async writeHeaders(req: Request, res: Response, rejectedBy?: Bucket): Promise<void> {
    const { limits, keyId } = rateLimitContext(res);
    const now = Date.now();
    const triples = {} as Record<Bucket, Triple>;
    for (const bucket of BUCKETS) {
      const start = windowStart(bucket, now);
      const limit = limits[bucket];
      const info = bucketInfo(req, bucket);
      const reset = Math.ceil((info?.resetTime?.getTime() ?? windowEnd(bucket, start)) / 1000);
      if (limit === null) {
        triples[bucket] = { limit: -1, remaining: -1, reset };
      } else if (info) {
        const giveBack = rejectedBy && bucket !== rejectedBy ? 1 : 0;
        triples[bucket] = { limit, remaining: Math.min(limit, info.remaining + giveBack), reset };
      } else {
        const used = (await this.limiters[bucket].getKey(`${start}:${keyId}`))?.totalHits ?? 0;
        triples[bucket] = { limit, remaining: Math.max(0, limit - used), reset };
      }
    }
    let general: Triple = triples.minute;
    let fewest = Infinity;
    for (const bucket of BUCKETS) {
      const t = triples[bucket];
      if (t.limit !== -1 && t.remaining < fewest) {
        fewest = t.remaining;
        general = t;
      }
    }
    if (res.headersSent) return;
    const set = (suffix: string, t: Triple) => {
      res.setHeader(`X-RateLimit-Limit${suffix}`, String(t.limit));
      res.setHeader(`X-RateLimit-Remaining${suffix}`, String(t.remaining));
      res.setHeader(`X-RateLimit-Reset${suffix}`, String(t.reset));
    };
    set('', general);
    set('-Minute', triples.minute);
    set('-Day', triples.day);
    set('-Month', triples.month);
  }

  async close(): Promise<void> {
    for (const store of this.stores) store.shutdown();
  }
}

/** The client address the failed-auth limit counts by (an IPv6 /56, like the library's default). */
export function clientAddress(req: Request): string {
  return ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? 'unknown');
}
