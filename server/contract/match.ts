/**
 * The endpoint a request will reach, matched once from the declarations
 * (contract/endpoints.ts ENDPOINTS and the GraphQL route), BEFORE routing: the
 * rate-limit script counts usage per endpoint in the same round trip as the
 * limits, and the limiter runs in front of the routes. The guard's usage
 * counts and the request log read the same answer afterwards.
 *
 * It matches as express's router does for these routes: the partner prefix
 * and literal segments case-insensitively, a `{param}` as one non-empty
 * segment that decodes (an undecodable one matches nothing), an optional
 * trailing slash, GET routes for GET and HEAD, the GraphQL route for any method.
 */
import type { Request } from 'express';
import { ENDPOINTS, GRAPHQL_ROUTE } from './endpoints';
import { PARTNER_PREFIX } from './identity';

/** The endpoint name of a request no declared route serves. */
export const NO_ENDPOINT = '(none)';

interface Pattern {
  /** 'bars/:id', 'test_endpoint', 'graphql' (the usage name). */
  name: string;
  segments: { literal?: string }[];
  anyMethod: boolean;
}

let patterns: Pattern[] | undefined;
function declared(): Pattern[] {
  patterns ??= [
    ...ENDPOINTS.map((e) => ({ path: e.path, anyMethod: false })),
    { path: GRAPHQL_ROUTE, anyMethod: true },
  ].map(({ path, anyMethod }) => ({
    name: path.replace(/^\//, '').replace(/\{([^}]+)\}/g, ':$1'),
    segments: path
      .slice(1)
      .split('/')
      .map((s) => (/^\{[^}]+\}$/.test(s) ? {} : { literal: s.toLowerCase() })),
    anyMethod,
  }));
  return patterns;
}

function decodes(segment: string): boolean {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}

/** The declared endpoint of a method and a URL path ('bars/:id', 'graphql', ...), or NO_ENDPOINT. */
export function matchEndpoint(method: string, path: string): string {
  const prefix = PARTNER_PREFIX.toLowerCase();
  if (!path.toLowerCase().startsWith(`${prefix}/`)) return NO_ENDPOINT;
  const parts = path.slice(prefix.length + 1).split('/');
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop(); // one trailing slash
  const isGet = method === 'GET' || method === 'HEAD';
  for (const p of declared()) {
    if (!p.anyMethod && !isGet) continue;
    if (p.segments.length !== parts.length) continue;
    const ok = p.segments.every((s, i) => {
      const part = parts[i]!;
      return s.literal !== undefined ? part.toLowerCase() === s.literal : part !== '' && decodes(part);
    });
    if (ok) return p.name;
  }
  return NO_ENDPOINT;
}

/** The request's endpoint, matched on first use and kept on res.locals.endpoint for every later reader. */
export function endpointOf(req: Request): string {
  const locals = req.res?.locals as { endpoint?: string } | undefined;
  if (locals?.endpoint !== undefined) return locals.endpoint;
  const url = req.originalUrl ?? req.url;
  const q = url.indexOf('?');
  const endpoint = matchEndpoint(req.method, q === -1 ? url : url.slice(0, q));
  if (locals) locals.endpoint = endpoint;
  return endpoint;
}
