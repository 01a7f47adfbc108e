/**
 * Conditional requests and cache headers (decisions.md v1.1 "Caching and
 * compression"). Every partner 200 carries a strong ETag (a hash of the exact
 * body) and `Cache-Control: private, no-cache`; a matching If-None-Match gets a
 * 304 without a body, with the usual rate-limit headers, and the request is
 * refunded in every bucket (a 304 costs no rate limit, as GitHub does).
 *
 * A strong validator names one representation, content coding included (RFC 9110
 * 8.8.3): the gzip and br forms that `compression` sends get the identity tag
 * with `-gzip` / `-br` appended, decided here by the same rule the middleware
 * applies (its negotiator, its preference for br then gzip, its 1 KB threshold).
 */
import { createRequire } from 'node:module';
import type { Request, Response } from 'express';
import type { RateLimitContext } from '../ratelimit/limiters';
import { answerCheckOf } from '../contract/deprecations';
import { compress, compressedCache, countPerRequest, PER_REQUEST, type Coding } from './compressed-cache';
import { strongEtag, type PublicDocument } from '../web/documents';

compressedCache(); // COMPRESSED_CACHE_MB is checked at start-up, not on a first request

/** `compression`'s own negotiator (its dependency, so the very version that picks the coding). */
type NegotiatorClass = new (req: Request) => {
  encoding(available: string[], preferred?: string[]): string | undefined;
};
const Negotiator = createRequire(require.resolve('compression'))('negotiator') as NegotiatorClass;

/** Bodies below this many bytes go uncompressed (app.ts passes it to `compression`). */
export const COMPRESSION_THRESHOLD = 1024;

/**
 * The br window of the answers `compression` streams itself (app.ts): the partner GraphQL, usage,
 * errors. 18 bits (256 KB) instead of brotli's 22: such an answer's length is unknown when its
 * stream starts, so the window cannot be fitted as compressed-cache.ts fits it, and at 22 a body
 * over one 64 KB block makes each stream allocate an 8 MB ring buffer. A 292 KB answer with br at
 * 50 connections: 413 → 464 req/s and 4.2 → 3.8 ms of server CPU, the same bytes (machine AC,
 * docs/performance/2026-11-29-v1.3.md). Beyond 256 KB a match reaches back 256 KB at most: 3.5 MB of
 * bars pages came out 1.2 % larger.
 */
export const MIDDLEWARE_BROTLI_WINDOW_BITS = 18;
const ENCODINGS = ['br', 'gzip', 'deflate', 'identity'];
const PREFERRED = ['br', 'gzip'];

/**
 * The content coding `compression({ threshold: COMPRESSION_THRESHOLD })` will give a JSON body of
 * this many bytes for this request: 'identity', 'br', 'gzip' or 'deflate'.
 */
export function responseEncoding(req: Request, bytes: number): string {
  if (bytes < COMPRESSION_THRESHOLD || req.method === 'HEAD' || !req.headers['accept-encoding']) return 'identity';
  return new Negotiator(req).encoding(ENCODINGS, PREFERRED) ?? 'identity';
}

/** The strong ETag of one content coding of a body whose identity ETag is `etag`. */
export function encodedEtag(etag: string, encoding: string): string {
  return encoding === 'identity' ? etag : `${etag.slice(0, -1)}-${encoding}"`;
}

export const PARTNER_CACHE_CONTROL = 'private, no-cache';
export const PUBLIC_CACHE_CONTROL = 'public, max-age=3600';

/** If-None-Match (weak comparison, RFC 9110 13.1.2): `*` or any listed tag equal to ours, W/ ignored. */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const value = header.trim();
  if (value === '*') return true;
  const ours = etag.replace(/^W\//, '');
  return (value.match(/(W\/)?"[^"]*"/g) ?? []).some((tag) => tag.replace(/^W\//, '') === ours);
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Sends a JSON 200 with ETag and Cache-Control, or a 304 (refunded) when If-None-Match matches.
 * The 200 is written with Node's own calls, not `res.send`: its content-type parsing, its copy of
 * a body over 1,000 characters into a Buffer and its second freshness check are work this answer
 * has already done (the bytes are the same; HEAD gets the headers and no body). `seldomRepeats`
 * (an answer around a point, Endpoint.seldomRepeats): compressed for this request with the fast
 * settings (PER_REQUEST) and not kept in the compressed-answer cache, where a new body per request
 * would push out the forms that are asked for again.
 */
export async function sendCacheable(req: Request, res: Response, body: string, seldomRepeats = false): Promise<void> {
  answerCheckOf(res)?.(body); // a deprecation decided by the answer (a parameter's new default)
  await sendRepresentation(req, res, body, strongEtag(body), JSON_TYPE, PARTNER_CACHE_CONTROL, seldomRepeats);
}

/**
 * A public document (openapi.json, the docs page and its script, the changelog, the GraphQL SDL and
 * explorer and its bundle; the partner dashboard's files with `no-cache`): by default an hour of
 * caching, 304 when unchanged. Its compressed forms come from the same cache as partner answers: the
 * docs page's 3.5 MB script cost 70-80 ms of CPU per request to compress with `br` or `gzip`, for
 * anyone, without a key.
 */
export function sendPublic(
  req: Request,
  res: Response,
  type: string,
  doc: PublicDocument,
  cacheControl = PUBLIC_CACHE_CONTROL,
): Promise<void> {
  return sendRepresentation(req, res, doc.body, doc.etag, type, cacheControl);
}

/**
 * The 200 or 304 of a body whose identity ETag is `identityEtag`, in the coding `compression`
 * would choose (its ETag then carries the coding). A 304 is refunded when the request counted
 * against rate limits. A compressed 200 comes from the compressed-answer cache
 * (compressed-cache.ts), or is compressed for this request alone (`perRequest`), with its
 * Content-Encoding and Content-Length set, so `compression` passes
 * it through ("already encoded") after adding Vary: Accept-Encoding, as it does for every answer it
 * considers. With the cache off (COMPRESSED_CACHE_MB=0) the middleware compresses the identity body
 * of the others; a per-request form is made here still, with the fast settings, as it keeps nothing.
 */
async function sendRepresentation(
  req: Request,
  res: Response,
  body: string | Buffer,
  identityEtag: string,
  type: string,
  cacheControl: string,
  perRequest = false,
): Promise<void> {
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  const encoding = responseEncoding(req, length);
  const etag = encodedEtag(identityEtag, encoding);
  res.setHeader('ETag', etag);
  res.setHeader('Cache-Control', cacheControl);
  if (ifNoneMatchHits(req.headers['if-none-match'], etag)) {
    const rateLimit = res.locals.rateLimit as RateLimitContext | undefined;
    if (rateLimit?.refund) await rateLimit.refund(res);
    res.status(304).end();
    return;
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', type);
  const cache = compressedCache();
  if (encoding !== 'identity' && (perRequest || cache.maxBytes > 0)) {
    const coding = encoding as Coding;
    if (perRequest) countPerRequest(coding);
    const encoded = await (perRequest ? compress(body, coding, PER_REQUEST) : cache.get(identityEtag, coding, body));
    if (res.destroyed) return; // the client went away meanwhile
    res.vary('Accept-Encoding');
    res.setHeader('Content-Encoding', encoding);
    res.setHeader('Content-Length', encoded.length);
    res.end(encoded);
    return;
  }
  res.setHeader('Content-Length', length);
  if (req.method === 'HEAD') res.end();
  else if (typeof body === 'string') res.end(body, 'utf8');
  else res.end(body);
}
