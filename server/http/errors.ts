import type { ErrorRequestHandler, Request, Response } from 'express';
import { HttpError, INVALID_INPUT, isDatabaseUnavailable, sendError } from '../contract/errors';
import type { Logger } from '../log';

/** REST's last handler: a thrown error becomes the contract's JSON error body. */
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
