/**
 * The partner guard: authentication, per-plan rate limits, usage alerts and
 * usage accounting, as the middleware list createPartnerApp mounts in front
 * of the partner routes.
 *
 *   authenticate -> minute, day, month limiters -> X-RateLimit headers -> routes
 *
 * Failures: 401 Missing API key / Invalid API key, 403 revoked -> suspended ->
 * expired (the first that applies), and 429 once an address has failed more
 * than 30 times in the current minute (valid keys are still served).
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Pool } from '../db/pools';
import { sendError } from '../http/errors';
import type { PartnerIdentity } from '../http/partner';
import type { Logger } from '../log';
import { PartnerRateLimits, type RateLimitContext } from '../ratelimit/limiters';
import { createRedisClient, type RedisClient } from '../redis';
import { UsageAlerts } from '../usage/alerts';
import { NO_ENDPOINT, UsageRecorder } from '../usage/recorder';
import { CredentialsChangeListener } from './change-listener';
import { IdentityCache, type StoredIdentity } from './identity-cache';
import { hashApiKey, presentedKey } from './key';

export interface PartnerGuardOptions {
  /** The partner pool (role bar_partner). */
  pool: Pool;
  /** Connection string for the change listener's own connection. */
  databaseUrl: string;
  /** Role of the listener connection (default bar_partner). */
  listenerRole?: string;
  /** Shared rate-limit counters; unset: in-process counting. */
  redisUrl?: string;
  /** An existing client instead of redisUrl (not closed by the guard). */
  redis?: RedisClient;
  /** Prefix of every Redis key (default 'pbapi:rl:'). */
  redisPrefix?: string;
  logger: Logger;
  usageFlushMs?: number;
}

export interface PartnerGuard {
  handlers: RequestHandler[];
  cache: IdentityCache;
  listener: CredentialsChangeListener;
  usage: UsageRecorder;
  alerts: UsageAlerts;
  /** Stops listening, writes pending usage and alerts, releases Redis. */
  close(): Promise<void>;
}

/** Why an existing key is refused (403), in the contract's order of precedence. */
export function refusal(identity: StoredIdentity, now: number): string | undefined {
  if (identity.keyStatus !== 'active') return 'API key has been revoked';
  if (identity.subscriberStatus !== 'active') return 'Subscriber account is suspended';
  if (identity.subscriptionEndsAt !== null && identity.subscriptionEndsAt <= now) return 'Subscription has expired';
  return undefined;
}

/** The matched route as a pattern ('bars/:id'), for usage accounting. */
function endpointOf(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return path === undefined ? NO_ENDPOINT : String(path).replace(/^\//, '') || '/';
}

export async function createPartnerGuard(options: PartnerGuardOptions): Promise<PartnerGuard> {
  const { pool, logger } = options;
  const redis = options.redis ?? (options.redisUrl ? createRedisClient(options.redisUrl, logger) : undefined);
  const limits = new PartnerRateLimits({ redis, redisPrefix: options.redisPrefix ?? 'pbapi:rl:', logger });
  const cache = new IdentityCache(pool);
  const listener = new CredentialsChangeListener({
    connectionString: options.databaseUrl, role: options.listenerRole ?? 'bar_partner', cache, logger,
  });
  await listener.start();
  const usage = new UsageRecorder(pool, logger, options.usageFlushMs);
  const alerts = new UsageAlerts(pool, logger);

  const fail = (req: Request, res: Response, next: NextFunction, status: 401 | 403, message: string) => {
    void limits.failedAuth(req, res, (err?: unknown) => {
      if (err) return next(err);
      if (status === 401) res.setHeader('WWW-Authenticate', 'Bearer realm="partner-api"');
      sendError(res, status, message);
    });
  };

  const account = (req: Request, res: Response, identity: StoredIdentity) => {
    res.once('finish', () => {
      const rateLimited = res.statusCode === 429;
      usage.record(identity.keyId, rateLimited ? NO_ENDPOINT : endpointOf(req), rateLimited);
      if (rateLimited) return;
      alerts.check(identity, limits.counted(req).map(({ bucket, info }) => ({
        bucket, used: info.used, limit: info.limit, resetTime: info.resetTime!,
      })));
    });
  };

  const authenticate: RequestHandler = (req, res, next) => {
    const presented = presentedKey(req);
    if (presented.kind !== 'key') {
      fail(req, res, next, 401, presented.kind === 'missing' ? 'Missing API key' : 'Invalid API key');
      return;
    }
    cache.lookup(hashApiKey(presented.key)).then((identity) => {
      if (!identity) return fail(req, res, next, 401, 'Invalid API key');
      const refused = refusal(identity, Date.now());
      if (refused) return fail(req, res, next, 403, refused);
      res.locals.partner = { keyId: identity.keyId, subscriberId: identity.subscriberId, plan: identity.plan } satisfies PartnerIdentity;
      res.locals.rateLimit = { keyId: identity.keyId, limits: identity.limits } satisfies RateLimitContext;
      account(req, res, identity);
      next();
    }, next);
  };

  return {
    handlers: [authenticate, ...limits.handlers],
    cache,
    listener,
    usage,
    alerts,
    async close() {
      await listener.close();
      await usage.close();
      await alerts.settle();
      await limits.close();
      if (redis && !options.redis) await redis.quit().catch(() => redis.disconnect());
    },
  };
}
