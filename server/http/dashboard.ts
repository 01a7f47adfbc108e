/**
 * GET /api/v1/partner/dashboard: the partner's usage page (web/dashboard) and its files. Public, like
 * the docs page: the page carries no data; it calls the usage endpoints with the key typed into it.
 */
import { Router } from 'express';
import { PAGE_SECURITY_HEADERS, setPageSecurityHeaders, webAsset } from '../web/assets';
import { sendPublic } from './caching';
import { PARTNER_PREFIX } from '../contract/identity';

export const DASHBOARD_PATH = `${PARTNER_PREFIX}/dashboard`;

export function dashboardRoutes(): Router {
  const router = Router();
  router.get(/^\/api\/v1\/partner\/dashboard(\/.*)?$/, (req, res, next) => {
    const asset = webAsset('dashboard', req.path.slice(DASHBOARD_PATH.length));
    if (!asset) return next();
    setPageSecurityHeaders(res);
    // compressed once, from the compressed-answer cache (uPlot is 145 KB)
    return sendPublic(req, res, asset.contentType, asset, PAGE_SECURITY_HEADERS['Cache-Control']!);
  });
  return router;
}
