/**
 * The partner HTTP application: a thin shell around the database's api
 * functions. Order matters: request id first (every response carries it),
 * access log, HSTS, then what needs no credentials (405, 406, the public
 * OpenAPI document), then the credentials guard (auth + rate limits) for every
 * partner path before route matching, the routes, 404, errors.
 */
import compression from 'compression';
import express, { type RequestHandler } from 'express';
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Pool } from '../db/pools';
import type { Logger } from '../log';
import { accessLog } from './access-log';
import { COMPRESSION_THRESHOLD, sendPublic, strongEtag } from './caching';
import { dashboardRoutes } from './dashboard';
import { DOCS_PATH, docsRoutes } from './docs';
import { changelogRoutes, type ChangelogEntry } from './changelog';
import { sendError } from '../contract/errors';
import { errorHandler } from './errors';
import { healthRoutes, postgresCheck, type ReadinessCheck } from './health';
import { keyHeaderHygiene, urlHygiene } from './input-hygiene';
import { onlyGetAndHead, requireJsonAcceptable, strictTransportSecurity } from './negotiation';
import { openApiFor, openApiJson } from './openapi';
import { deprecationGate, validateDeprecations } from './deprecations';
import { DEPRECATIONS, type Deprecation } from '../contract/endpoints';
import { PARTNER_PREFIX } from '../contract/identity';
import { requestId } from './request-id';
import { partnerRoutes } from './routes';
import type { ExportOptions } from './routes/export';
import { unsubscribeRoutes } from '../email/unsubscribe';

export interface PartnerAppDeps {
  config: Pick<Config, 'env'> & Partial<Pick<Config, 'trustProxy'>>;
  logger: Logger;
  /** Runs as the bar_partner role: may only EXECUTE api functions. */
  pool: Pool;
  /** Authentication and rate limiting for every partner path. */
  guard: RequestHandler[];
  /** GET /readyz checks (default: PostgreSQL on `pool`) and whether shutdown began. */
  health?: { checks?: ReadinessCheck[]; draining?: () => boolean };
  /** The GraphQL endpoint (beta; server/graphql/endpoint.ts): its own methods, body and guard order. */
  graphql?: RequestHandler;
  /** GET export/*: the pool (the primary), concurrent-export slots (Redis), batch size (routes/export.ts). */
  export?: ExportOptions;
  /** The request log (usage/request-log.ts): records answers on `finish`, off the request's path. */
  requestLog?: { middleware(): RequestHandler };
  /** Alert e-mails' unsubscribe links: the signing key (default: EMAIL_LINK_KEY or the development key) and the primary. */
  email?: { linkKey?: Buffer; pool?: Pool };
  /** The instant answers are computed at (open now, events today, ...; default: the system clock). */
  clock?: Clock;
  /** Deprecations in force (default: endpoints.ts DEPRECATIONS) and the clock that judges them (tests inject both). */
  deprecations?: { list?: readonly Deprecation[]; now?: () => number };
  /** The changelog's entries (default: docs/changelog.yml). */
  changelog?: ChangelogEntry[];
}

export function createPartnerApp(deps: PartnerAppDeps): express.Express {
  const deprecations = deps.deprecations?.list ?? DEPRECATIONS;
  validateDeprecations(deprecations);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'extended'); // corner1[latitude]=... arrives as an object
  app.set('trust proxy', deps.config.trustProxy ?? false); // X-Forwarded-Proto makes req.secure

  app.use(requestId);
  app.use(accessLog(deps.logger));
  if (deps.requestLog) app.use(deps.requestLog.middleware());
  app.use(strictTransportSecurity);
  app.use(compression({ threshold: COMPRESSION_THRESHOLD })); // gzip / br by Accept-Encoding (q-values), Vary: Accept-Encoding
  // One-click unsubscribe from alert e-mails (RFC 8058 POST, an HTML page): no key, before the GET/JSON-only checks.
  app.use(unsubscribeRoutes({ pool: deps.email?.pool ?? deps.pool, linkKey: deps.email?.linkKey }));
  if (deps.graphql) app.use(PARTNER_PREFIX, deps.graphql); // POST and its own Accept types: before the GET-only JSON checks
  app.use(onlyGetAndHead);
  app.use(docsRoutes()); // the HTML API reference: public, before the JSON-only Accept check
  app.use(dashboardRoutes()); // the partner's usage page: public (it calls the usage endpoints with a key)
  app.use(changelogRoutes(deps.changelog)); // GET changelog (JSON) and changelog.atom: public, their own Accept checks
  app.use(requireJsonAcceptable);
  app.use(keyHeaderHygiene); // invalid UTF-8 in Authorization / X-API-Key: 400 before the guard reads them
  app.use(
    healthRoutes({
      checks: deps.health?.checks ?? [postgresCheck(deps.pool)],
      draining: deps.health?.draining,
    }),
  ); // no key, no limits, no usage
  const openApi = deps.deprecations?.list ? JSON.stringify(openApiFor(deprecations)) : openApiJson;
  const openApiEtag = strongEtag(openApi);
  app.get(`${PARTNER_PREFIX}/openapi.json`, (req, res) => {
    sendPublic(req, res, 'application/json', openApi, openApiEtag);
  });
  // NUL / invalid UTF-8 in the path or query: 400 (with the rate-limit headers) before a route reads them
  // Deprecation headers, 410 after a sunset (deprecations.ts): after the guard (the key is known for the count)
  app.use(
    PARTNER_PREFIX,
    ...deps.guard,
    urlHygiene,
    deprecationGate(deprecations, deps.deprecations?.now),
    partnerRoutes(deps),
  );
  app.use((req, res) =>
    sendError(
      res,
      404,
      req.path.startsWith(`${PARTNER_PREFIX}/`) || req.path === PARTNER_PREFIX
        ? `Not found; the endpoints are listed at ${DOCS_PATH} (and ${PARTNER_PREFIX}/openapi.json)`
        : 'Not found',
    ),
  );
  app.use(errorHandler(deps.logger));
  return app;
}
