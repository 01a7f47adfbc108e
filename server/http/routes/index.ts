import { Router } from 'express';
import type { PartnerAppDeps } from '../app';

/** The eight partner endpoints (see partner-api-v1.md). */
export function partnerRoutes(_deps: PartnerAppDeps): Router {
  const router = Router();
  return router;
}
