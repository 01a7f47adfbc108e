/**
 * One delivery attempt: resolves and checks the URL (address.ts), then
 * connects to exactly the checked address (the socket's lookup is pinned, the
 * Host header and TLS SNI keep the URL's host name), POSTs the signed body and
 * waits at most `timeoutMs` (10 s) for the response. A 2xx is success; any
 * other status, a refused URL, a network error or a timeout is a failure that
 * the queue retries with backoff. Redirects are not followed.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { checkWebhookTarget, WebhookUrlError, type UrlRules } from './address';

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: string | null;
  durationMs: number;
}

export const DELIVERY_TIMEOUT_MS = 10_000;

export async function attemptDelivery(
  rawUrl: string,
  headers: Record<string, string>,
  body: string,
  rules: UrlRules,
  timeoutMs = DELIVERY_TIMEOUT_MS,
  /** Abandons the attempt (the server is shutting down): the request is destroyed, a failure. */
  signal?: AbortSignal,
): Promise<AttemptResult> {
  const started = Date.now();
  const done = (status: number | null, error: string | null): AttemptResult => ({
    ok: status !== null && status >= 200 && status < 300,
    status,
    error,
    durationMs: Date.now() - started,
  });
  let target;
  try {
    target = await checkWebhookTarget(rawUrl, rules);
  } catch (err) {
    return done(null, err instanceof WebhookUrlError ? `refused: ${err.message}` : String(err));
  }
  const pinned: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all) {
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address: target.address, family: target.family },
      ]);
    } else {
      callback(null, target.address, target.family);
    }
  };
  const mod = target.url.protocol === 'https:' ? https : http;
  return new Promise<AttemptResult>((resolve) => {
    const req = mod.request(
      target.url,
      {
        method: 'POST',
        lookup: pinned,
        headers: {
          ...headers,
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': 'partner-bar-data-webhooks/1',
        },
        timeout: timeoutMs,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(done(res.statusCode ?? null, null)));
        res.on('error', (e) => resolve(done(res.statusCode ?? null, e.message)));
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`timeout after ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', (e) => resolve(done(null, e.message)));
    const abandon = () => req.destroy(new Error('abandoned: the server was shutting down; retried later'));
    if (signal?.aborted) abandon();
    else signal?.addEventListener('abort', abandon, { once: true });
    req.on('close', () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abandon);
    });
    req.end(body);
  });
}
