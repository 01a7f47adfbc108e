/**
 * GET usage (decisions.md v1.2 "Usage for partners"): the key's three buckets
 * as the guard saw them for this request (the limiter only read them: usage is
 * one of its FREE_ENDPOINTS) and api.usage's latest alerts.
 */
import { Router } from 'express';
import type { PartnerAppDeps } from '../app';
import { sendCacheable } from '../caching';
import { E, expressPath, strictQuery } from '../endpoints';
import type { PartnerIdentity } from '../partner';
import { rateLimitContext } from '../../ratelimit/limiters';
import { BUCKETS } from '../../ratelimit/windows';

export function usageRoutes(deps: PartnerAppDeps): Router {
  const router = Router();
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
    const { rows } = await deps.pool.query<{ body: string }>(
      'select api.usage(p_subscriber_id => $1, p_plan => $2, p_buckets => $3::json)::text as body',
      [partner.subscriberId, partner.plan, JSON.stringify(buckets)],
    );
    await sendCacheable(res.req, res, rows[0]!.body);
  });
  return router;
}
