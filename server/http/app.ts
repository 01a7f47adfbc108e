/**
 * The partner HTTP application: a thin shell around the database's api
 * functions. Order matters: request id first (every response carries it),
 * access log, HSTS, then what needs no credentials (405, 406, the public
 * OpenAPI document), then the credentials guard (auth + rate limits) for every
 * partner path before route matching, the routes, 404, errors.
 */
import zlib from 'node:zlib';
import compression from 'compression';
import express from 'express';
import { accessLog, answerLogger } from './access-log';
import { COMPRESSION_THRESHOLD, MIDDLEWARE_BROTLI_WINDOW_BITS, sendPublic } from './caching';
import { publicDocument } from '../web/documents';
import { dashboardRoutes } from './dashboard';
import { DOCS_PATH, docsRoutes } from './docs';
import { changelogRoutes } from './changelog';
import { sendError } from '../contract/errors';
import { errorHandler } from './errors';
import { healthRoutes, postgresCheck } from './health';
import { keyHeaderHygiene, urlHygiene } from '../web/input-hygiene';
import { onlyGetAndHead, requireJsonAcceptable, strictTransportSecurity } from './negotiation';
import { openApiFor, openApiJson } from '../openapi/document';
import { deprecationGate, validateDeprecations } from '../contract/deprecations';
import { DEPRECATIONS } from '../contract/endpoints';
import { PARTNER_PREFIX } from '../contract/identity';
import { requestId } from './request-id';
import { refusedKeyShortcut } from './refused-shortcut';
import type { PartnerAppDeps } from './deps';
import { partnerRoutes } from './routes';
import { unsubscribeRoutes } from '../email/unsubscribe';

export type { PartnerAppDeps } from './deps';

export function createPartnerApp(deps: PartnerAppDeps): express.Express {
  const deprecations = deps.deprecations?.list ?? DEPRECATIONS;
  validateDeprecations(deprecations);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'extended'); // corner1[latitude]=... arrives as an object
  app.set('trust proxy', deps.config.trustProxy ?? false); // X-Forwarded-Proto makes req.secure

  // A key this process already refuses gets its 429 before the rest of the app (refused-shortcut.ts).
  const requestLog = deps.requestLog;
  if (deps.knownRefusal)
    app.use(
      refusedKeyShortcut({
        knownRefusal: deps.knownRefusal,
        logAnswer: answerLogger(deps.logger),
        recordAnswer: requestLog && ((req, res, ms) => requestLog.record(req, res, ms)),
        hold: deps.config.refusalHold,
      }),
    );
  app.use(requestId, accessLog(deps.logger), ...(requestLog ? [requestLog.middleware()] : []), strictTransportSecurity);
  // gzip / br by Accept-Encoding (q-values), Vary: Accept-Encoding; br at quality 4 (compression's default)
  app.use(
    compression({
      threshold: COMPRESSION_THRESHOLD,
      brotli: { params: { [zlib.constants.BROTLI_PARAM_LGWIN]: MIDDLEWARE_BROTLI_WINDOW_BITS } },
    }),
  );
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
  const openApi = publicDocument(deps.deprecations?.list ? JSON.stringify(openApiFor(deprecations)) : openApiJson);
  app.get(`${PARTNER_PREFIX}/openapi.json`, (req, res) =>
    sendPublic(req, res, 'application/json; charset=utf-8', openApi),
  );
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
