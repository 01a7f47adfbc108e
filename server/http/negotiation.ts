/**
 * Protocol-level checks answered before the credentials guard: methods (405),
 * Accept (406) and HSTS. Every resource of this API is GET-only JSON.
 */
import type { Request, RequestHandler } from 'express';
import { sendError } from '../contract/errors';
import { PARTNER_PREFIX } from '../contract/identity';

export const ALLOWED_METHODS = 'GET, HEAD';

export const onlyGetAndHead: RequestHandler = (req, res, next) => {
  if (req.method === 'GET' || req.method === 'HEAD') return next();
  res.setHeader('Allow', ALLOWED_METHODS);
  sendError(res, 405, `Method ${req.method} is not allowed; this API accepts GET and HEAD`);
};

/**
 * True when an Accept header admits application/json: no header, `*\/*`,
 * `application/*` or `application/json` (with any parameters), unless the most
 * specific matching range says q=0.
 */
export function acceptsJson(accept: string | undefined): boolean {
  return admits(accept, 'application/json');
}

function admits(accept: string | undefined, type: string): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  let best: { specificity: number; q: number } | undefined;
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.split(';').map((s) => s.trim());
    const specificity = ({ [type]: 2, 'application/*': 1, '*/*': 0 } as Record<string, number>)[range.toLowerCase()];
    if (specificity === undefined) continue;
    let q = 1;
    for (const param of params) {
      const [name, value] = param.split('=').map((s) => s.trim());
      if (name?.toLowerCase() === 'q') q = Number(value);
    }
    if (!Number.isFinite(q)) q = 0;
    if (!best || specificity > best.specificity || (specificity === best.specificity && q > best.q))
      best = { specificity, q };
  }
  return best !== undefined && best.q > 0;
}

/** True when an Accept header admits this application/* type (`*\/*`, `application/*`, the type itself; q > 0). */
export function acceptsType(accept: string | undefined, type: string): boolean {
  return admits(accept, type);
}

/** True when an Accept header admits application/x-ndjson (`*\/*`, `application/*`, the type itself; q > 0). */
export function acceptsNdjson(accept: string | undefined): boolean {
  return admits(accept, 'application/x-ndjson');
}

/** The bulk export paths (routes/export.ts) serve application/x-ndjson instead of JSON. */
const EXPORT_PATH = new RegExp(`^${PARTNER_PREFIX}/export/(bars|events)/?$`, 'i');
export const isExportPath = (path: string): boolean => EXPORT_PATH.test(path);

/** Whether the request's Accept admits what its path serves (NDJSON for the exports, else JSON). */
export function acceptable(req: Request): boolean {
  return isExportPath(req.path) ? acceptsNdjson(req.get('accept')) : acceptsJson(req.get('accept'));
}

export const requireJsonAcceptable: RequestHandler = (req, res, next) => {
  if (acceptable(req)) return next();
  if (isExportPath(req.path))
    return sendError(res, 406, 'Not acceptable: this endpoint serves application/x-ndjson only');
  sendError(res, 406, 'Not acceptable: this API serves application/json only');
};

/** The Strict-Transport-Security value (a year, subdomains included). */
export const HSTS = 'max-age=31536000; includeSubDomains';

/** HSTS on responses that reached us over HTTPS (directly, or via a trusted proxy's X-Forwarded-Proto). */
export const strictTransportSecurity: RequestHandler = (req, res, next) => {
  if (req.secure) res.setHeader('Strict-Transport-Security', HSTS);
  next();
};
