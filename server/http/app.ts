/**
 * The partner HTTP application: a thin shell around the database's api
 * functions. Order matters: request id first (every response carries it),
 * access log, HSTS, then what needs no credentials (405, 406, the public
 * OpenAPI document), then the credentials guard (auth + rate limits) for every
 * partner path before route matching, the routes, 404, errors.
 */
import express, { type RequestHandler } from 'express';
import type { Config } from '../config';
import type { Pool } from '../db/pools';
import type { Logger } from '../log';
import { errorHandler, sendError } from './errors';
import { onlyGetAndHead, requireJsonAcceptable, strictTransportSecurity } from './negotiation';
import { openApiJson } from './openapi';
import { PARTNER_PREFIX } from './partner';
import { requestId } from './request-id';
import { partnerRoutes } from './routes';

export interface PartnerAppDeps {
  config: Pick<Config, 'env'> & Partial<Pick<Config, 'trustProxy'>>;
  logger: Logger;
  /** Runs as the bar_partner role: may only EXECUTE api functions. */
  pool: Pool;
  /** Authentication and rate limiting for every partner path. */
  guard: RequestHandler[];
}

export function createPartnerApp(deps: PartnerAppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'extended'); // corner1[latitude]=... arrives as an object
  app.set('trust proxy', deps.config.trustProxy ?? false); // X-Forwarded-Proto makes req.secure

  app.use(requestId);
  app.use(accessLog(deps.logger));
  app.use(strictTransportSecurity);
  app.use(onlyGetAndHead);
  app.use(requireJsonAcceptable);
  app.get(`${PARTNER_PREFIX}/openapi.json`, (_req, res) => {
    res.type('application/json').send(openApiJson);
  });
  app.use(PARTNER_PREFIX, ...deps.guard, partnerRoutes(deps));
  app.use((_req, res) => sendError(res, 404, 'Not found'));
  app.use(errorHandler(deps.logger));
  return app;
}

function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const path = req.path; // before routers strip their mount path; never the query string
    res.on('finish', () => {
      logger.info({
        requestId: res.locals.requestId,
        method: req.method,
        path,
        status: res.statusCode,
        durationMs: Number(process.hrtime.bigint() - started) / 1e6,
        subscriberId: res.locals.partner?.subscriberId,
      }, 'request');
    });
    next();
  };
}
