/**
 * One log line and one metrics sample per answered request. The log line
 * names the path and the query string (keys travel in headers only, never in
 * the URL) and, for a 4xx/5xx, the reason the client was given (the error
 * body's message, recorded by sendError).
 */
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from '../log';
import { httpDuration, httpRequests } from '../metrics';

/** The matched route's pattern ('/bars/:id'), or '(none)'. */
function routeOf(route: unknown): string {
  const path = (route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? path.replace(/^\//, '') || '/' : '(none)';
}

export function accessLog(logger: Logger): RequestHandler {
  const log = answerLogger(logger);
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => log(req, res, started));
    next();
  };
}

/** An answer's log line and metrics sample, `started` being process.hrtime.bigint() at its request's arrival. */
export type AnswerLogger = (req: Request, res: Response, started: bigint) => void;

export function answerLogger(logger: Logger): AnswerLogger {
  return (req, res, started) => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const url = req.originalUrl;
    const q = url.indexOf('?');
    const route = routeOf(req.route);
    httpRequests.inc({ route, method: req.method, status: res.statusCode });
    httpDuration.observe({ route }, seconds);
    const line: Record<string, unknown> = {
      requestId: res.locals.requestId,
      method: req.method,
      path: q === -1 ? url : url.slice(0, q),
      query: q === -1 ? undefined : url.slice(q + 1, q + 1 + 2048),
      status: res.statusCode,
      durationMs: seconds * 1000,
      subscriberId: (res.locals.partner as { subscriberId?: string } | undefined)?.subscriberId,
    };
    if (res.statusCode >= 400) line.reason = res.locals.errorMessage;
    if (res.statusCode >= 500) logger.warn(line, 'request');
    else logger.info(line, 'request');
  };
}
