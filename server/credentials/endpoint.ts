/**
 * The endpoint (route pattern, e.g. 'bars/:id') a request will reach, known
 * BEFORE routing: the rate-limit script counts usage per endpoint in the same
 * round trip as the limits, and the limiter runs in front of the routes.
 *
 * It asks express's own router: the app's layers are matched against the path
 * (Layer#match has no side effects in router 2) down to the route that handles
 * the method, exactly as dispatch would, without running anything.
 */
import type { Request } from 'express';
import { NO_ENDPOINT } from '../usage/recorder';

interface LayerLike {
  match(path: string): false | { path: string };
  route?: { path: unknown; _handlesMethod(method: string): boolean };
  handle?: { stack?: LayerLike[] };
}

function find(stack: LayerLike[], path: string, method: string): string | undefined {
  for (const layer of stack) {
    const inner = layer.handle?.stack;
    if (!layer.route && !inner) continue; // plain middleware
    let m: false | { path: string };
    try {
      m = layer.match(path);
    } catch {
      continue; // undecodable path: no route matches it
    }
    if (!m) continue;
    if (layer.route) {
      if (layer.route._handlesMethod(method)) return String(layer.route.path);
      continue;
    }
    const found = find(inner!, path.slice(m.path.length) || '/', method);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** 'bars/:id', 'test_endpoint', ... or '(none)' when no route matches. */
export function endpointBeforeRouting(req: Request): string {
  const stack = (req.app as unknown as { router?: { stack?: LayerLike[] } }).router?.stack;
  if (!stack) return NO_ENDPOINT;
  const url = req.originalUrl ?? req.url;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const found = find(stack, path, req.method === 'HEAD' ? 'get' : req.method.toLowerCase());
  return found === undefined ? NO_ENDPOINT : found.replace(/^\//, '') || '/';
}
