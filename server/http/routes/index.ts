import { Router } from 'express';
import type { PartnerAppDeps } from '../app';
import type { PartnerIdentity } from '../partner';

/** The eight partner endpoints (see partner-api-v1.md). */
export function partnerRoutes(_deps: PartnerAppDeps): Router {
  const router = Router();

  router.get('/test_endpoint', (_req, res) => {
    const partner = res.locals.partner as PartnerIdentity;
    res.type('application/json').send(JSON.stringify({
      message: 'API key is valid',
      timestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      subscriber_id: partner.subscriberId,
      plan: partner.plan,
    }));
  });

  return router;
}
