/**
 * The fetch that openapi-fetch calls: bounded retries of 429 and 503 after Retry-After, and the
 * optional ETag revalidation (If-None-Match; a 304 is answered from the cached body, and counts
 * against no rate-limit bucket).
 */

export interface RetryOptions {
  /** Retries after the first attempt (default 2; 0 turns retrying off). */
  maxRetries?: number;
  /** A Retry-After longer than this is not waited for: the 429/503 is thrown at once (default 60 000 ms). */
  maxDelayMs?: number;
  /** Wait without a Retry-After header: baseDelayMs * 2^attempt (default 1 000 ms). */
  baseDelayMs?: number;
}

export interface RetryEvent {
  /** 1 for the first retry. */
  attempt: number;
  status: number;
  delayMs: number;
  request_id: string | null;
}

/** An answer announcing its deprecation (RFC 9745 Deprecation, RFC 8594 Sunset, Link rel="deprecation"). */
export interface DeprecationEvent {
  method: string;
  /** The URL's path (without the query). */
  path: string;
  /** The Deprecation header as sent (`@<unix seconds>`). */
  deprecation: string;
  /** When it stops working (the Sunset header, an HTTP date), if announced. */
  sunset: string | null;
  /** The URL of the `Link; rel="deprecation"` header (the changelog entry), if any. */
  link: string | null;
  request_id: string | null;
}

export interface EtagOptions {
  /** Responses kept (least recently used dropped first; default 500). */
  maxEntries?: number;
}

export interface TransportOptions {
  fetch: (request: Request) => Promise<Response>;
  retry: Required<RetryOptions>;
  etag: Required<EtagOptions> | undefined;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  now: () => number;
  onRetry?: (event: RetryEvent) => void;
  onDeprecation?: (event: DeprecationEvent) => void;
}

/** The target of the first `Link` value with rel="deprecation". */
export function deprecationLink(link: string | null): string | null {
  if (!link) return null;
  for (const part of link.split(/,(?=\s*<)/)) {
    const match = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (match && /;\s*rel="?([^";]*\s)?deprecation(\s[^";]*)?"?\s*(;|$)/i.test(match[2]!)) return match[1]!;
  }
  return null;
}

interface Cached {
  etag: string;
  body: ArrayBuffer;
  headers: Headers;
}

/** Milliseconds to wait before retrying: Retry-After (seconds or an HTTP date), else exponential backoff. */
export function retryDelayMs(retryAfter: string | null, attempt: number, base: number, now: number): number {
  if (retryAfter !== null) {
    const value = retryAfter.trim();
    if (/^\d+$/.test(value)) return Number(value) * 1000;
    const at = Date.parse(value);
    if (!Number.isNaN(at)) return Math.max(0, at - now);
  }
  return base * 2 ** attempt;
}

export function createTransport(options: TransportOptions): (request: Request) => Promise<Response> {
  const cache = new Map<string, Cached>();
  return async (request) => {
    const cacheKey =
      options.etag && request.method === 'GET' && !request.headers.has('if-none-match') ? request.url : undefined;
    const cached = cacheKey === undefined ? undefined : cache.get(cacheKey);
    for (let attempt = 0; ; attempt++) {
      const attemptRequest = request.clone();
      if (cached) attemptRequest.headers.set('If-None-Match', cached.etag);
      const response = await options.fetch(attemptRequest);
      const deprecation = response.headers.get('deprecation');
      if (deprecation !== null && options.onDeprecation) {
        options.onDeprecation({
          method: request.method,
          path: new URL(request.url).pathname,
          deprecation,
          sunset: response.headers.get('sunset'),
          link: deprecationLink(response.headers.get('link')),
          request_id: response.headers.get('x-request-id'),
        });
      }
      if ((response.status === 429 || response.status === 503) && attempt < options.retry.maxRetries) {
        const delayMs = retryDelayMs(
          response.headers.get('retry-after'),
          attempt,
          options.retry.baseDelayMs,
          options.now(),
        );
        if (delayMs <= options.retry.maxDelayMs) {
          await response.body?.cancel();
          options.onRetry?.({
            attempt: attempt + 1,
            status: response.status,
            delayMs,
            request_id: response.headers.get('x-request-id'),
          });
          await options.sleep(delayMs, request.signal);
          continue;
        }
      }
      if (cacheKey === undefined) return response;
      if (response.status === 304 && cached) {
        cache.delete(cacheKey); // most recently used last
        cache.set(cacheKey, cached);
        // The cached body with the fresh headers (request id, rate-limit counts) over the cached ones.
        const headers = new Headers(cached.headers);
        response.headers.forEach((value, name) => headers.set(name, value));
        return new Response(cached.body.slice(0), { status: 200, statusText: 'OK', headers });
      }
      const etag = response.headers.get('etag');
      if (response.status === 200 && etag) {
        const body = await response.arrayBuffer();
        cache.delete(cacheKey);
        cache.set(cacheKey, { etag, body, headers: new Headers(response.headers) });
        while (cache.size > options.etag!.maxEntries) cache.delete(cache.keys().next().value!);
        return new Response(body.slice(0), { status: 200, statusText: response.statusText, headers: response.headers });
      }
      return response;
    }
  };
}
