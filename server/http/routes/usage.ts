/**
 * GET usage (decisions.md v1.2 "Usage for partners"): the key's three buckets
 * as the guard saw them for this request (the limiter only read them: usage is
 * one of its FREE_ENDPOINTS) and api.usage's latest alerts.
 */
import { Router } from 'express';
import type { PartnerAppDeps } from '../deps';
import { sendCacheable } from '../caching';
import { DEPRECATIONS, E, ENDPOINTS, expressPath, strictQuery } from '../../contract/endpoints';
import { deprecationWhat, sunsetTimestamp } from '../../contract/deprecations';
import { QueryParams, USAGE_REQUESTS_LIMIT, badRequest } from '../../contract/params';
import type { PartnerIdentity } from '../../contract/identity';
import { rateLimitContext } from '../../ratelimit/limiters';
import { BUCKETS } from '../../ratelimit/windows';
import { CALLS, apiQuery } from '../../contract/calls';

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
    const [rows, deprecated] = await Promise.all([
      apiQuery(deps.pool, CALLS.usage, {
        subscriber_id: partner.subscriberId,
        plan: partner.plan,
        buckets: JSON.stringify(buckets),
      }),
      apiQuery(deps.pool, CALLS.deprecatedCalls, {
        subscriber_id: partner.subscriberId,
        now: new Date(now()).toISOString(),
      }),
    ]);
    const body = JSON.parse(rows[0]!.body!) as Record<string, unknown>;
    const calls = deprecated[0]!.calls as { what: string; calls_last_14_days: number; last_call_at: string }[];
    body.deprecated_calls = calls.map((c) => ({
      what: c.what,
      sunset: sunsets.get(c.what) ?? null,
      calls_last_14_days: Number(c.calls_last_14_days),
      last_call_at: c.last_call_at,
    }));
    await sendCacheable(res.req, res, JSON.stringify(body));
  });

  // GET usage/history (decisions.md v1.3): api.usage_history checks the range (PT400 naming the parameter).
  router.get(expressPath(E.usageHistory), strictQuery(E.usageHistory), async (req, res) => {
    const partner = res.locals.partner as PartnerIdentity;
    const q = new QueryParams(req.query);
    const granularity = q.oneOf('granularity', GRANULARITIES) ?? 'hour';
    const start = q.dateTime('start');
    const end = q.dateTime('end');
    const endpoint = endpointParam(q);
    const rows = await apiQuery(deps.pool, CALLS.usageHistory, {
      subscriber_id: partner.subscriberId,
      granularity,
      start: start ?? null,
      end: end ?? null,
      endpoint: endpoint ?? null,
    });
    await sendCacheable(req, res, rows[0]!.body!);
  });

  // GET usage/requests (decisions.md v1.3 "Request log"): the subscriber's entries, newest first.
  router.get(expressPath(E.usageRequests), strictQuery(E.usageRequests), async (req, res) => {
    const partner = res.locals.partner as PartnerIdentity;
    const q = new QueryParams(req.query);
    const status = statusParam(q.string('status'));
    const endpoint = endpointParam(q);
    const requestId = q.string('request_id');
    if (requestId !== undefined && (requestId === '' || requestId.length > 128))
      throw badRequest('request_id must be 1 to 128 characters (an X-Request-Id)');
    const since = q.dateTime('since');
    const until = q.dateTime('until');
    const limit = q.int('limit', USAGE_REQUESTS_LIMIT);
    const cursor = cursorParam(q.string('cursor'));
    const rows = await apiQuery(deps.pool, CALLS.usageRequests, {
      subscriber_id: partner.subscriberId,
      status_min: status?.[0] ?? null,
      status_max: status?.[1] ?? null,
      endpoint: endpoint ?? null,
      request_id: requestId ?? null,
      since: since ?? null,
      until: until ?? null,
      limit,
      cursor_at: cursor?.at ?? null,
      cursor_id: cursor?.id ?? null,
    });
    await sendCacheable(req, res, rows[0]!.body!);
  });
  return router;
}

const GRANULARITIES = ['hour', 'day'] as const;

/** The endpoint names usage is counted under: the route patterns, 'graphql' and '(none)'. */
let endpointNames: string[] | undefined;
export function usageEndpointNames(): string[] {
  endpointNames ??= [...ENDPOINTS.map((e) => expressPath(e).slice(1)), 'graphql', '(none)'];
  return endpointNames;
}

function endpointParam(q: QueryParams): string | undefined {
  const endpoint = q.string('endpoint');
  if (endpoint === undefined) return undefined;
  if (!usageEndpointNames().includes(endpoint))
    throw badRequest(`endpoint must be one of ${usageEndpointNames().join(', ')}`);
  return endpoint;
}

/** '404' -> [404, 404]; '4xx' -> [400, 499]. */
function statusParam(raw: string | undefined): [number, number] | undefined {
  if (raw === undefined) return undefined;
  if (/^[1-5][0-9][0-9]$/.test(raw)) return [Number(raw), Number(raw)];
  if (/^[1-5]xx$/i.test(raw)) return [Number(raw[0]) * 100, Number(raw[0]) * 100 + 99];
  throw badRequest('status must be a status code (e.g. 404) or a class (4xx, 5xx)');
}

/** next_cursor (api.usage_requests): base64url of "<created_at, microseconds>|<id>". */
function cursorParam(raw: string | undefined): { at: string; id: string } | undefined {
  if (raw === undefined) return undefined;
  const text = /^[A-Za-z0-9_-]{1,200}$/.test(raw) ? Buffer.from(raw, 'base64url').toString('utf8') : '';
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)\|(\d{1,18})$/.exec(text);
  const ms = m ? Date.parse(m[1]!) : NaN;
  if (!m || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 19) !== m[1]!.slice(0, 19))
    throw badRequest('cursor is not valid; pass next_cursor as it is');
  return { at: m[1]!, id: m[2]! };
}
