import type { ErrorRequestHandler, Request, Response } from 'express';
import type { Logger } from '../log';

/** An error with a status and a message meant for the client. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Extra body fields (e.g. limit and period on 429) and headers. */
    readonly extra: { body?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
  }
}

/** Writes the contract's error body: {"error": ..., "request_id": ..., ...extra}. */
export function sendError(res: Response, status: number, message: string, body: Record<string, unknown> = {}): void {
  res.locals.errorMessage = message; // the access log's reason
  res
    .status(status)
    .type('application/json')
    .send(JSON.stringify({ error: message, ...body, request_id: res.locals.requestId }));
}

/** SQLSTATE raised by api.* functions for input they reject; the message is written for the client. */
export const INVALID_INPUT = 'PT400';

/** PostgreSQL or network errors that mean "the database cannot be reached right now". */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  if (!e) return false;
  // EPGFROZEN: the database breaker is open (db/pg-breaker.ts).
  if (
    e.code &&
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EPGFROZEN'].includes(e.code)
  )
    return true;
  // 57P01-03: admin shutdown, crash shutdown, cannot connect now; 53300: too many connections; 08*: connection exceptions
  if (e.code && (/^08/.test(e.code) || ['57P01', '57P02', '57P03', '53300'].includes(e.code))) return true;
  // 'Query read timeout': the pool's client-side deadline (PG_QUERY_DEADLINE_MS) passed without an answer.
  return /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED|Query read timeout/i.test(
    e.message ?? '',
  );
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req: Request, res: Response, _next) => {
    if (res.headersSent) return;
    if (err instanceof HttpError) {
      for (const [k, v] of Object.entries(err.extra.headers ?? {})) res.setHeader(k, v);
      sendError(res, err.status, err.message, err.extra.body);
      return;
    }
    // body-parser style errors carry their own 4xx status
    const status =
      (err as { status?: number; statusCode?: number }).status ?? (err as { statusCode?: number }).statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      sendError(res, status, status === 400 ? 'Malformed request' : 'Request rejected');
      return;
    }
    // An api function judged the input invalid (e.g. end_date before start_date in the city's time zone).
    if ((err as { code?: string }).code === INVALID_INPUT) {
      sendError(res, 400, (err as Error).message);
      return;
    }
    // 57014: cancelled by the partner pool's statement_timeout.
    if ((err as { code?: string }).code === '57014') {
      logger.warn({ requestId: res.locals.requestId, method: req.method, path: req.path }, 'statement timeout');
      res.setHeader('Retry-After', '5');
      sendError(res, 503, 'The request took too long and was cancelled; retry later or narrow it');
      return;
    }
    if (isDatabaseUnavailable(err)) {
      logger.warn(
        { requestId: res.locals.requestId, err: { message: (err as Error).message } },
        'database unavailable',
      );
      res.setHeader('Retry-After', '5');
      sendError(res, 503, 'Service temporarily unavailable, please retry');
      return;
    }
    logger.error({ requestId: res.locals.requestId, method: req.method, path: req.path, err }, 'unhandled error');
    sendError(res, 500, 'Internal server error');
  };
}
