/**
 * Conditional requests and cache headers (decisions.md v1.1 "Caching and
 * compression"). Every partner 200 carries a strong ETag (a hash of the exact
 * body) and `Cache-Control: private, no-cache`; a matching If-None-Match gets a
 * 304 without a body, with the usual rate-limit headers, and the request is
 * refunded in every bucket (a 304 costs no rate limit, as GitHub does).
 */
import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type { RateLimitContext } from '../ratelimit/limiters';

export const PARTNER_CACHE_CONTROL = 'private, no-cache';
export const PUBLIC_CACHE_CONTROL = 'public, max-age=3600';

/** A strong validator: the base64url SHA-256 of the body, first 27 characters (160 bits). */
export function strongEtag(body: string | Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

/** If-None-Match (weak comparison, RFC 9110 13.1.2): `*` or any listed tag equal to ours, W/ ignored. */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const value = header.trim();
  if (value === '*') return true;
  const ours = etag.replace(/^W\//, '');
  return (value.match(/(W\/)?"[^"]*"/g) ?? []).some((tag) => tag.replace(/^W\//, '') === ours);
}

/** Sends a JSON 200 with ETag and Cache-Control, or a 304 (refunded) when If-None-Match matches. */
export async function sendCacheable(req: Request, res: Response, body: string): Promise<void> {
  const etag = strongEtag(body);
  res.setHeader('ETag', etag);
  res.setHeader('Cache-Control', PARTNER_CACHE_CONTROL);
  if (ifNoneMatchHits(req.get('if-none-match'), etag)) {
    const rateLimit = res.locals.rateLimit as RateLimitContext | undefined;
    if (rateLimit?.refund) await rateLimit.refund();
    res.status(304).end();
    return;
  }
  res.status(200).type('application/json').send(body);
}

/** A public document (openapi.json, the docs page): ETag, one hour of caching, 304 when unchanged. */
export function sendPublic(req: Request, res: Response, type: string, body: string, etag: string): void {
  res.setHeader('ETag', etag);
  res.setHeader('Cache-Control', PUBLIC_CACHE_CONTROL);
  if (ifNoneMatchHits(req.get('if-none-match'), etag)) {
    res.status(304).end();
    return;
  }
  res.status(200).type(type).send(body);
}
