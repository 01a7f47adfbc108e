/**
 * The List-Unsubscribe target (RFC 8058) under PUBLIC_BASE_URL:
 *   POST /email/unsubscribe?token=…  one-click (body List-Unsubscribe=One-Click): 200, the address gets no more alerts
 *   GET  /email/unsubscribe?token=…  a page with a button that makes that POST (a GET changes nothing:
 *                                    mail scanners fetch links)
 * No API key: the HMAC-signed token names the subscriber and address; a forged
 * or altered token is a 400. Limited per client address (not per key): 30 a
 * minute, in process.
 */
import express, { Router, type Request, type Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import { projectRoot } from '../config';
import type { Pool } from '../db/pools';
import { sendError } from '../contract/errors';
import { clientAddress } from '../ratelimit/limiters';
import { render } from './render';
import { emailConfig } from './settings';
import { UNSUBSCRIBE_PATH } from './task';
import { verifyUnsubscribeToken, type ContactRef } from './token';
import { CALLS, apiQuery } from '../contract/calls';

export const UNSUBSCRIBE_PER_MINUTE = 30;

export interface UnsubscribeOptions {
  /** A pool on the primary (the update is a write) that may run api.unsubscribe_alert_contact. */
  pool: Pool;
  /** Default: EMAIL_LINK_KEY from the environment, or the development key. */
  linkKey?: Buffer;
  perMinute?: number;
}

const BAD_TOKEN = 'Invalid or altered unsubscribe link; use the link of the latest alert e-mail';

function sendPage(res: Response, html: string): void {
  res.status(200).type('text/html; charset=utf-8').setHeader('Cache-Control', 'no-store').send(html);
}

export function unsubscribeRoutes(options: UnsubscribeOptions): Router {
  const router = Router();
  const linkKey = options.linkKey ?? emailConfig(process.env, false, projectRoot, 3000).linkKey;
  const limiter = rateLimit({
    windowMs: 60_000,
    limit: options.perMinute ?? UNSUBSCRIBE_PER_MINUTE,
    keyGenerator: (req) => clientAddress(req),
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    handler: (_req, res) => {
      res.setHeader('Retry-After', '60');
      sendError(res, 429, 'Too many unsubscribe requests from this address; retry in a minute');
    },
  });
  const contact = (req: Request, res: Response): ContactRef | undefined => {
    const ref = verifyUnsubscribeToken(linkKey, req.query.token);
    if (!ref) sendError(res, 400, BAD_TOKEN);
    return ref;
  };

  router.get(UNSUBSCRIBE_PATH, limiter, (req, res) => {
    const ref = contact(req, res);
    if (!ref) return;
    const action = `${req.baseUrl}${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(String(req.query.token))}`;
    sendPage(res, render('unsubscribe-page.html', { email: ref.email, action }));
  });
  router.post(UNSUBSCRIBE_PATH, limiter, express.urlencoded({ extended: false, limit: '1kb' }), async (req, res) => {
    const ref = contact(req, res);
    if (!ref) return;
    await apiQuery(options.pool, CALLS.unsubscribeAlertContact, { subscriber_id: ref.subscriberId, email: ref.email });
    sendPage(res, render('unsubscribed-page.html', { email: ref.email }));
  });
  router.all(UNSUBSCRIBE_PATH, (req, res) => {
    res.setHeader('Allow', 'GET, HEAD, POST');
    sendError(res, 405, `Method ${req.method} is not allowed here; use GET or POST`);
  });
  return router;
}
