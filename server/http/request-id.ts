import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';

const CLIENT_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** X-Request-Id on every response: the client's own when well-formed, else a new one. */
export const requestId: RequestHandler = (req, res, next) => {
  const sent = req.get('x-request-id');
  const id = sent && CLIENT_ID.test(sent) ? sent : randomUUID();
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
};
