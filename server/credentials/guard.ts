/**
 * The partner guard: authentication, per-plan rate limits, usage alerts and
 * usage accounting, as the middleware list createPartnerApp mounts in front
 * of the partner routes.
 *
 *   authenticate -> limiter (minute, day, month and usage: one Redis round trip) -> headers -> routes
 *
 * Failures: 401 Missing API key / Invalid API key, 403 revoked -> suspended ->
 * expired (the first that applies), and 429 once an address has failed more
 * than 30 times in the current minute (valid keys are still served).
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Pool } from '../db/pools';
import { sendError } from '../contract/errors';
import type { PartnerIdentity } from '../contract/identity';
import type { Logger } from '../log';
import { RedisBreaker } from '../ratelimit/breaker';
import {
  clientAddress,
  FAILED_AUTH_LIMIT,
  type KnownRefusalAnswer,
  PartnerRateLimits,
  rateLimitContext,
  type RateLimitContext,
} from '../ratelimit/limiters';
import { windowEnd, windowStart } from '../ratelimit/windows';
import { createRedisClient, type RedisClient, type RedisTarget } from '../redis';
import { UsageAlerts } from '../usage/alerts';
import { UsageRecorder } from '../usage/recorder';
import { SharedUsage } from '../usage/shared';
import { HourlyUsage } from '../usage/history';
import { DeprecatedCallTally } from '../usage/deprecated-calls';
import { deprecatedCallsOf } from '../contract/deprecations';
import { NO_ENDPOINT, endpointOf } from '../contract/match';
import { CredentialsChangeListener } from './change-listener';
import { IdentityCache, type IdentityCacheOptions, type StoredIdentity } from './identity-cache';
import { hashApiKey, presentedKey } from './key';

export interface PartnerGuardOptions {
  /** The partner pool (role bar_partner). */
  pool: Pool;
  /** Connection string for the change listener's own connection. */
  databaseUrl: string;
  /** Role of the listener connection (default bar_partner). */
  listenerRole?: string;
  /** Shared rate-limit counters (a URL, or a cluster's seed nodes); unset: in-process counting. */
  redisUrl?: string | RedisTarget;
  /** Per-request Redis budget (REDIS_BUDGET_MS, default 50) and circuit probe interval (REDIS_PROBE_MS, default 1000). */
  redisBudgetMs?: number;
  redisProbeMs?: number;
  /** An existing client instead of redisUrl (not closed by the guard). */
  redis?: RedisClient;
  /** Prefix of every Redis key (default 'pbapi:rl:'). */
  redisPrefix?: string;
  logger: Logger;
  usageFlushMs?: number;
  /** The identity cache's settings (its entries' age, its sizes); tests shorten the age. */
  identityCache?: IdentityCacheOptions;
}

export interface PartnerGuard {
  handlers: RequestHandler[];
  /** The two halves of `handlers`, for an endpoint that weighs a request between them (GraphQL points). */
  authenticate: RequestHandler;
  limit: RequestHandler[];
  cache: IdentityCache;
  listener: CredentialsChangeListener;
  usage: UsageRecorder;
  /** Usage counted in Redis (with REDIS_URL), flushed to PostgreSQL by any instance. */
  sharedUsage?: SharedUsage;
  breaker?: RedisBreaker;
  alerts: UsageAlerts;
  /** Usage by hour, key, endpoint and status class (usage/history.ts). */
  history: HourlyUsage;
  /** Calls of deprecated endpoints, parameters and fields per key (GET usage's deprecated_calls). */
  deprecatedCalls: DeprecatedCallTally;
  /**
   * The refused-key shortcut's half (http/refused-shortcut.ts): for a cached, valid key this process
   * refuses until a window ends, the guard's own 429 and its accounting; undefined when the request
   * must take the usual way. Decides without side effects on `res`.
   */
  knownRefusal(req: Request): KnownRefusalAnswer | undefined;
  /** Stops listening, writes pending usage and alerts, releases Redis; says what it wrote. */
  close(): Promise<{ usageRequestsWritten: number; sharedUsageKeyDaysWritten: number }>;
}

/** Why an existing key is refused (403), in the contract's order of precedence. */
export function refusal(identity: StoredIdentity, now: number): string | undefined {
  if (identity.keyStatus !== 'active') return 'API key has been revoked';
  if (identity.subscriberStatus !== 'active') return 'Subscriber account is suspended';
  if (identity.subscriptionEndsAt !== null && identity.subscriptionEndsAt <= now) return 'Subscription has expired';
  return undefined;
}

/** Stands for "not looked up: the address is blocked". */
const BLOCKED = Object.freeze({}) as StoredIdentity;

export async function createPartnerGuard(options: PartnerGuardOptions): Promise<PartnerGuard> {
  const { pool, logger } = options;
  const redis = options.redis ?? (options.redisUrl ? createRedisClient(options.redisUrl, logger) : undefined);
  const redisPrefix = options.redisPrefix ?? 'pbapi:rl:';
  const breaker = redis
    ? new RedisBreaker(redis, { budgetMs: options.redisBudgetMs ?? 50, probeMs: options.redisProbeMs ?? 1000, logger })
    : undefined;
  const limits = new PartnerRateLimits({ redis, breaker, redisPrefix, logger, endpointOf });
  const cache = new IdentityCache(pool, options.identityCache);
  const listener = new CredentialsChangeListener({
    connectionString: options.databaseUrl,
    role: options.listenerRole ?? 'bar_partner',
    cache,
    logger,
  });
  await listener.start();
  const usage = new UsageRecorder(pool, logger, options.usageFlushMs);
  const sharedUsage =
    redis && breaker
      ? new SharedUsage({ redis, breaker, pool, prefix: redisPrefix, logger, flushEveryMs: options.usageFlushMs })
      : undefined;
  // Counts an instance made in Redis and could not flush (killed) are written by the start-up sweep
  // (sharedUsage.started) or the next periodic sweep of any instance.
  const alerts = new UsageAlerts(pool, logger);
  const history = new HourlyUsage({
    pool,
    logger,
    redis: sharedUsage ? redis : undefined,
    breaker,
    prefix: redisPrefix,
    touch: (keyId, day) => sharedUsage?.touch(keyId, day),
    flushEveryMs: options.usageFlushMs,
    rateLimitedInProcess: (keyId, day, n) => {
      // in their day (now, or the day's last instant when the push failed past midnight)
      const now = new Date();
      const at = now.toISOString().startsWith(day) ? now : new Date(Date.parse(`${day}T00:00:00Z`) + 86_399_999);
      for (let i = 0; i < n; i++) usage.record(keyId, NO_ENDPOINT, true, at);
    },
  });
  const deprecatedCalls = new DeprecatedCallTally(pool, logger, options.usageFlushMs);

  // Addresses over the failed-auth limit, known locally until their window ends (no Redis round trip).
  const blocked = new Map<string, number>();
  const failedAuthKey = (req: Request) => `${windowStart('minute', Date.now())}:${clientAddress(req)}`;
  /** Until when this process blocks the request's address, if it does. */
  const blockedUntil = (req: Request): number | undefined => {
    const address = clientAddress(req);
    const until = blocked.get(address);
    if (until === undefined || until > Date.now()) return until;
    blocked.delete(address);
    return undefined;
  };
  const isBlocked = async (req: Request): Promise<boolean> => {
    if (blockedUntil(req) !== undefined) return true;
    const hits = (await limits.failedAuth.getKey(failedAuthKey(req)))?.totalHits ?? 0;
    return hits >= FAILED_AUTH_LIMIT;
  };

  // Only 401s (missing, malformed or unknown keys) count toward the failed-auth limit; a 403
  // (revoked, suspended, expired: the key is known) is always answered as a 403.
  const fail = (req: Request, res: Response, next: NextFunction, status: 401 | 403, message: string) => {
    if (status === 403) return sendError(res, status, message);
    res.once('finish', () => {
      if (res.statusCode !== 429) return;
      if (blocked.size > 100_000) blocked.clear();
      blocked.set(clientAddress(req), windowEnd('minute', windowStart('minute', Date.now())));
    });
    void limits.failedAuth(req, res, (err?: unknown) => {
      if (err) return next(err);
      res.setHeader('WWW-Authenticate', 'Bearer realm="partner-api"');
      sendError(res, status, message);
    });
  };

  /** An answered request's usage, history and alerts (after the answer: on `finish`, or by the shortcut). */
  const accountAnswer = (req: Request, res: Response, identity: StoredIdentity) => {
    const ctx = rateLimitContext(res);
    const rateLimited = res.statusCode === 429;
    const deprecated = deprecatedCallsOf(res); // set by the deprecation gate (contract/deprecations.ts)
    if (deprecated) for (const use of deprecated.uses) deprecatedCalls.record(identity.keyId, use, deprecated.at);
    if (ctx.outcome?.shared) {
      // counted by the script; a 429 refused in process (no Redis) is added with the next push
      if (ctx.refusedLocally) history.rateLimited(identity.keyId, ctx.windows!.start.minute);
      sharedUsage?.touch(identity.keyId, ctx.windows!.day);
    } else if (!ctx.refunded && (rateLimited || ctx.weight !== 0)) {
      const endpoint = rateLimited ? NO_ENDPOINT : endpointOf(req);
      usage.record(identity.keyId, endpoint, rateLimited, undefined, rateLimited ? 1 : (ctx.weight ?? 1));
    }
    if (!ctx.free) {
      const at = ctx.windows?.start.minute ?? Date.now(); // the script's day and hour
      history.record(identity.keyId, ctx.endpoint ?? endpointOf(req), res.statusCode, at, !!ctx.outcome?.shared);
    }
    if (rateLimited) return;
    alerts.check(identity, limits.counted(res), ctx.weight ?? 1);
  };

  const account = (req: Request, res: Response, identity: StoredIdentity) => {
    res.once('finish', () => accountAnswer(req, res, identity));
  };

  /** A valid key's identity and rate-limit context on the response. */
  const identify = (res: Response, identity: StoredIdentity, ctx: RateLimitContext) => {
    res.locals.partner = {
      keyId: identity.keyId,
      subscriberId: identity.subscriberId,
      plan: identity.plan,
    } satisfies PartnerIdentity;
    res.locals.rateLimit = ctx;
  };

  /** The same, and its accounting on finish. */
  const admit = (req: Request, res: Response, identity: StoredIdentity, ctx: RateLimitContext) => {
    identify(res, identity, ctx);
    account(req, res, identity);
  };

  // While any key is refused, the shortcut hashes every request's key first (knownRefusal).
  const hashedByShortcut = new WeakMap<Request, Buffer>();

  const authenticate: RequestHandler = (req, res, next) => {
    const presented = presentedKey(req);
    if (presented.kind !== 'key') {
      fail(req, res, next, 401, presented.kind === 'missing' ? 'Missing API key' : 'Invalid API key');
      return;
    }
    const hash = hashedByShortcut.get(req) ?? hashApiKey(presented.key);
    const cached = cache.peek(hash);
    // An address over the failed-auth limit gets its 429 before any database lookup of an uncached
    // key (valid keys known to the cache are still served, re-read when their entry has aged out;
    // unknown keys are cached negatively).
    const known: Promise<StoredIdentity | null> = cached
      ? Promise.resolve(cached.identity)
      : cache.wasValid(hash)
        ? cache.lookup(hash)
        : isBlocked(req).then((b) => (b ? BLOCKED : cache.lookup(hash)));
    known.then((identity) => {
      if (identity === BLOCKED) return fail(req, res, next, 401, 'Invalid API key'); // counted: 429
      if (!identity) return fail(req, res, next, 401, 'Invalid API key');
      const refused = refusal(identity, Date.now());
      if (refused) return fail(req, res, next, 403, refused);
      admit(req, res, identity, { keyId: identity.keyId, limits: identity.limits });
      next();
    }, next);
  };

  const knownRefusal = (req: Request): KnownRefusalAnswer | undefined => {
    if (!limits.refusing && blocked.size === 0) return undefined; // no key or address refused: nothing to look up
    const presented = presentedKey(req);
    const hash = presented.kind === 'key' ? hashApiKey(presented.key) : undefined;
    const identity = hash === undefined ? undefined : cache.peek(hash)?.identity;
    // A blocked address is refused whatever key it sends, but a valid one known already (authenticate()).
    if (!identity && blocked.size > 0 && !(hash && cache.wasValid(hash))) {
      const until = blockedUntil(req);
      const refused = until !== undefined ? limits.failedAuthRefusal(req, until) : undefined;
      if (refused) return refused;
    }
    if (!hash) return undefined;
    const ctx = identity && !refusal(identity, Date.now()) && limits.refusalFor(req, identity.keyId, identity.limits);
    if (!ctx) {
      hashedByShortcut.set(req, hash); // unknown, a 403 or not refused: authenticate() takes this hash
      return undefined;
    }
    return {
      until: ctx.windows!.end[ctx.outcome!.rejectedBy!],
      answer(res) {
        identify(res, identity, ctx); // as authenticate() does, then the limiter's 429
        return limits.refusalAnswer(ctx);
      },
      account: (res) => accountAnswer(req, res, identity),
    };
  };

  return {
    handlers: [authenticate, ...limits.handlers],
    knownRefusal,
    authenticate,
    limit: limits.handlers,
    cache,
    listener,
    usage,
    sharedUsage,
    breaker,
    alerts,
    history,
    deprecatedCalls,
    async close() {
      await listener.close();
      const usageRequests = usage.pendingRequests;
      await usage.close();
      await history.close(); // before the shared flush: it writes the hourly fields pushed to Redis
      const sharedKeyDays = sharedUsage ? await sharedUsage.flush() : 0;
      await sharedUsage?.close();
      await deprecatedCalls.close();
      breaker?.close();
      await alerts.settle();
      await limits.close();
      if (redis && !options.redis) await redis.quit().catch(() => redis.disconnect());
      // What the shutdown log reports as flushed.
      return { usageRequestsWritten: usageRequests - usage.pendingRequests, sharedUsageKeyDaysWritten: sharedKeyDays };
    },
  };
}
