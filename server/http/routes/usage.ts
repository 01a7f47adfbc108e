/**
 * GET usage (decisions.md v1.2 "Usage for partners"): the key's three buckets
 * as the guard saw them for this request (the limiter only read them: usage is
 * one of its FREE_ENDPOINTS) and api.usage's latest alerts.
 */
import { Router } from 'express';
import type { PartnerAppDeps } from '../app';
import { sendCacheable } from '../caching';
import { DEPRECATIONS, E, expressPath, strictQuery } from '../endpoints';
import { deprecationWhat, sunsetTimestamp } from '../deprecations';
import type { PartnerIdentity } from '../partner';
import { rateLimitContext } from '../../ratelimit/limiters';
import { BUCKETS } from '../../ratelimit/windows';

export function usageRoutes(deps: PartnerAppDeps): Router {
  const router = Router();
  // deprecated_calls (decisions.md v1.3): each counted deprecation with its sunset from its declaration
  const sunsets = new Map(
    (deps.deprecations?.list ?? DEPRECATIONS).map((d) => [deprecationWhat(d), sunsetTimestamp(d)]),
  );
  const now = deps.deprecations?.now ?? Date.now;
  router.get(expressPath(E.usage), strictQuery(E.usage), async (_req, res) => {
    const partner = res.locals.partner as PartnerIdentity;
    const ctx = rateLimitContext(res);
    const buckets = Object.fromEntries(
      BUCKETS.map((b) => {
        const limit = ctx.limits[b];
        const reset = Math.ceil(ctx.windows!.end[b] / 1000);
        if (limit === null) return [b, { limit: -1, used: -1, remaining: -1, reset }];
        const used = ctx.outcome!.used[b];
        return [b, { limit, used, remaining: Math.max(0, limit - used), reset }];
      }),
    );
    const [{ rows }, deprecated] = await Promise.all([
      deps.pool.query<{ body: string }>(
        'select api.usage(p_subscriber_id => $1, p_plan => $2, p_buckets => $3::json)::text as body',
        [partner.subscriberId, partner.plan, JSON.stringify(buckets)],
      ),
      deps.pool.query<{ calls: { what: string; calls_last_14_days: number; last_call_at: string }[] }>(
        'select api.deprecated_calls(p_subscriber_id => $1, p_now => $2) as calls',
        [partner.subscriberId, new Date(now()).toISOString()],
      ),
    ]);
    const body = JSON.parse(rows[0]!.body) as Record<string, unknown>;
    body.deprecated_calls = deprecated.rows[0]!.calls.map((c) => ({
      what: c.what,
      sunset: sunsets.get(c.what) ?? null,
      calls_last_14_days: Number(c.calls_last_14_days),
      last_call_at: c.last_call_at,
    }));
    await sendCacheable(res.req, res, JSON.stringify(body));
  });
  return router;
}
