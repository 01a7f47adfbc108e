import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';

const CLIENT_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** X-Request-Id on every response: the client's own when well-formed, else a new one. */
export const requestId: RequestHandler = (req, res, next) => {
  const id = requestIdOf(req);
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
};

/** The request's id: the client's X-Request-Id when well-formed, else a new one. */
export function requestIdOf(req: Request): string {
  const sent = req.get('x-request-id');
  return sent && CLIENT_ID.test(sent) ? sent : randomUUID();
}
