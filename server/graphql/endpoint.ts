/**
 * The partner GraphQL endpoint (beta) on the partner listener, mounted under
 * /api/v1/partner:
 *
 *   graphql                 GET (queries) and POST; other methods 405
 *   graphql/schema.graphql  the published SDL (public)
 *   graphql/explorer        ruru (GraphiQL) from the npm package (public page; queries need a key)
 *
 * A request goes: key checks (the REST guard's authentication: same key
 * forms, states, failed-auth block and error bodies) -> document (bounds,
 * validation, cost; document.ts) -> the REST guard's limiter, charged the
 * query's points -> execution (grafast) with `extensions.cost`. Nothing reads
 * the database before the limiter has counted the points.
 */
import '../graphile/env'; // before grafast is loaded
import '../graphile/node20-compat';
import path from 'node:path';
import express, { Router, type ErrorRequestHandler, type RequestHandler, type Response } from 'express';
import { execute } from 'postgraphile/grafast';
import { GraphQLError, printSchema, type ExecutionResult, type GraphQLSchema } from 'postgraphile/graphql';
import { ruruHTML } from 'ruru/server';
import type { Clock } from '../clock';
import type { Pool } from '../db/pools';
import { sendPublic } from '../http/caching';
import { publicDocument } from '../web/documents';
import { publicFileRoutes } from '../web/public-files';
import { isDatabaseUnavailable } from '../contract/errors';
import { keyHeaderHygiene } from '../web/input-hygiene';
import { PARTNER_PREFIX } from '../contract/identity';
import type { Logger } from '../log';
import { graphqlPoints, graphqlRejections, graphqlRequests } from '../metrics';
import { rateLimitContext, type RateLimitContext } from '../ratelimit/limiters';
import { RequestData } from './data';
import { prepareQuery, Rejection, requestParams, type PreparedQuery } from './document';
import { NODE_LIMIT } from './cost';
import { makePartnerSchema, type GraphqlContext, type RateLimitView } from './schema';
import { announce, dayStart, goneMessage, graphqlDeprecationUses } from '../contract/deprecations';
import { DEPRECATIONS, type Deprecation, GRAPHQL_ROUTE } from '../contract/endpoints';

/** Routes are relative to the partner prefix (usage counts the endpoint as 'graphql'). */
const ROUTE = GRAPHQL_ROUTE;
export const GRAPHQL_PATH = `${PARTNER_PREFIX}${ROUTE}`;
export const SCHEMA_PATH = `${GRAPHQL_PATH}/schema.graphql`;
export const EXPLORER_PATH = `${GRAPHQL_PATH}/explorer`;
const EXPLORER_STATIC = `${EXPLORER_PATH}/static/`;
export const GRAPHQL_ROLE = 'bar_partner_graphql';
const MAX_BODY = '64kb'; // the query's own bound (10,000 bytes) is checked on the text

export interface GraphqlEndpointOptions {
  /** Connections as bar_partner_graphql: may execute only the api functions the schema serves. */
  pool: Pool;
  /** The REST guard's two halves. */
  guard: { authenticate: RequestHandler; limit: RequestHandler[] };
  logger: Logger;
  /** The instant answers are computed at (default: the system clock; server/clock.ts). */
  clock?: Clock;
  /** Deprecations (default: endpoints.ts DEPRECATIONS) and their clock; tests inject both. */
  deprecations?: { list?: readonly Deprecation[]; now?: () => number };
}

let schemaSingleton: GraphQLSchema | undefined;
export function partnerSchema(): GraphQLSchema {
  return (schemaSingleton ??= makePartnerSchema());
}
export function partnerSdl(): string {
  return printSchema(partnerSchema());
}

interface GraphqlLocals {
  prepared?: PreparedQuery;
  rejection?: Rejection;
}
const locals = (res: Response): GraphqlLocals => ((res.locals.graphql as GraphqlLocals | undefined) ??= {});

/**
 * Writes a JSON answer with Node's own calls, as sendCacheable does (not express's `res.send`, whose
 * content-type parsing and copy of the text into a Buffer this answer does not need; the bytes and
 * headers are the same). `compression` still compresses it when the client asks.
 */
function send(res: Response, status: number, json: string, accept: string | undefined): void {
  const type =
    accept && /application\/graphql-response\+json/i.test(accept)
      ? 'application/graphql-response+json; charset=utf-8'
      : 'application/json; charset=utf-8';
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json, 'utf8');
}

/**
 * The answer's text, the same bytes as `JSON.stringify({ errors, data, extensions })`: `data` is the JSON
 * grafast wrote itself (`outputDataAsString`). grafast's output objects have no prototype
 * (`Object.create(null)`), which V8 keeps as dictionaries, slow to stringify. With this and `send`, the
 * server's CPU per `bar(id)` answer went 1,007 -> 882 µs, alternating (machine AZ,
 * docs/performance/2026-12-07-v1.3.md).
 */
export function answerJson(errors: unknown[] | undefined, data: string | null, extensions: unknown): string {
  const head = errors ? `{"errors":${JSON.stringify(errors)},` : '{';
  return `${head}"data":${data ?? 'null'},"extensions":${JSON.stringify(extensions)}}`;
}

/** The limiter's general triple for this request (res.locals.rateLimit), as GitHub's rateLimit object. */
function rateLimitOf(res: Response, cost: { points: number; nodes: number }): RateLimitView {
  const general = (res.locals.rateLimit as RateLimitContext | undefined)?.general;
  const reset = general?.reset ?? 0;
  const limit = general?.limit ?? -1;
  const remaining = general?.remaining ?? -1;
  return {
    cost: cost.points,
    limit,
    remaining,
    used: limit < 0 ? 0 : limit - remaining,
    resetAt: new Date(reset * 1000).toISOString(),
    nodeCount: cost.nodes,
  };
}

export function graphqlRoutes(options: GraphqlEndpointOptions): Router {
  const { logger } = options;
  const deprecations = options.deprecations?.list ?? DEPRECATIONS;
  const now = options.deprecations?.now ?? Date.now;
  const schema = options.deprecations?.list ? makePartnerSchema(deprecations) : partnerSchema();
  const router = Router();
  const sdl = publicDocument(printSchema(schema));
  const beta: RequestHandler = (_req, res, next) => {
    res.setHeader('X-API-Beta', 'graphql');
    next();
  };

  router.get(`${ROUTE}/schema.graphql`, beta, (req, res) => sendPublic(req, res, 'text/plain; charset=utf-8', sdl));

  const explorerHtml = ruruHTML({
    staticPath: EXPLORER_STATIC,
    endpoint: GRAPHQL_PATH,
    clientConfig: {
      initialHeaders: JSON.stringify({ Authorization: 'Bearer <your API key>' }, null, 2),
      isHeadersEditorEnabled: true,
      defaultQuery: `# Put your key in the Headers pane below, then run this query.
{
  city(state: "NY", name: "New York City") {
    name
    bars(first: 5) {
      totalCount
      nodes { id name googleRating occupancy { status } events(first: 3) { nodes { title startAt } } }
    }
  }
  rateLimit { cost limit remaining resetAt }
}
`,
    },
  } as Parameters<typeof ruruHTML>[0]);
  const explorer = publicDocument(explorerHtml);
  router.get(`${ROUTE}/explorer`, beta, (req, res) => sendPublic(req, res, 'text/html; charset=utf-8', explorer));
  // ruru's bundle as files of the npm package (no CDN; its own loader imports them dynamically)
  const assets = publicFileRoutes(path.join(path.dirname(require.resolve('ruru')), '..', 'static'), sendPublic);
  router.use(`${ROUTE}/explorer/static`, beta, assets);

  const methods: RequestHandler = (req, res, next) => {
    if (req.method === 'GET' || req.method === 'POST') return next();
    res.setHeader('Allow', 'GET, POST');
    res
      .status(405)
      .type('application/json')
      .send(
        JSON.stringify({
          error: `Method ${req.method} is not allowed; the GraphQL endpoint accepts GET (queries) and POST`,
          request_id: res.locals.requestId,
        }),
      );
  };

  const body = express.json({ limit: MAX_BODY, type: () => true, strict: false });
  const readBody: RequestHandler = (req, res, next) => (req.method === 'POST' ? body(req, res, next) : next());
  const unreadableBody: ErrorRequestHandler = (err, _req, res, next) => {
    const tooLarge = (err as { type?: string }).type === 'entity.too.large';
    locals(res).rejection = tooLarge
      ? new Rejection(413, 'REQUEST_TOO_LARGE', `The request body is over the limit of ${MAX_BODY}`)
      : new Rejection(400, 'BAD_REQUEST', 'The body is not valid JSON');
    next();
  };

  /** The document and its points, before the limiter counts them; nothing here reads the database. */
  const prepare: RequestHandler = (req, res, next) => {
    const l = locals(res);
    if (!l.rejection) {
      try {
        const params = requestParams(req.method, req.body, req.query as Record<string, unknown>);
        l.prepared = prepareQuery(schema, req.method, params);
        // A deprecated field or argument (docs/COMPATIBILITY.md): the headers and the count as REST;
        // after its sunset a query that selects it is refused with 410 (charged as a rejected query).
        const t = now();
        const used = graphqlDeprecationUses(schema, l.prepared.document, deprecations).filter(
          (d) => t >= dayStart(d.since),
        );
        const gone = used.length ? announce(res, used, t, true) : undefined;
        if (gone) {
          l.prepared = undefined;
          l.rejection = new Rejection(410, 'GONE', goneMessage(gone));
        }
      } catch (e) {
        if (!(e instanceof Rejection)) return next(e);
        l.rejection = e;
      }
    }
    rateLimitContext(res).weight = l.prepared ? l.prepared.cost.points : l.rejection!.points;
    next();
  };

  const run: RequestHandler = (req, res, next) => {
    const l = locals(res);
    const accept = req.get('accept');
    const requestId = String(res.locals.requestId);
    if (l.rejection) {
      const r = l.rejection;
      graphqlRejections.inc({ code: r.code });
      res.locals.errorMessage = r.message;
      for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
      return send(
        res,
        r.status,
        JSON.stringify({ errors: [{ message: r.message, extensions: { code: r.code, request_id: requestId } }] }),
        accept,
      );
    }
    const prepared = l.prepared!;
    const rate = rateLimitOf(res, prepared.cost);
    graphqlRequests.inc();
    graphqlPoints.inc(prepared.cost.points);
    const context: GraphqlContext = { data: new RequestData(options.pool, options.clock), rateLimit: () => rate };
    Promise.resolve(
      execute({
        schema,
        document: prepared.document,
        operationName: prepared.operationName,
        variableValues: prepared.variables,
        contextValue: context,
        outputDataAsString: true,
      }),
    )
      .then((result) => {
        const r = result as ExecutionResult<string | null>;
        let unavailable = false;
        const errors = r.errors?.map((e) => {
          const out = maskError(e, requestId, logger);
          if (out.extensions.code === 'SERVICE_UNAVAILABLE') unavailable = true;
          return out;
        });
        if (unavailable && r.data == null) res.setHeader('Retry-After', '5');
        const cost = { requestedPoints: prepared.cost.points, nodeLimit: NODE_LIMIT, remaining: rate.remaining };
        send(res, unavailable && r.data == null ? 503 : 200, answerJson(errors, r.data ?? null, { cost }), accept);
      })
      .catch(next);
  };

  router.all(
    ROUTE,
    beta,
    methods,
    keyHeaderHygiene,
    options.guard.authenticate,
    readBody,
    unreadableBody,
    prepare,
    ...options.guard.limit,
    run,
  );
  return router;
}

const SAFE_CODES = new Set(['BAD_USER_INPUT', 'NOT_FOUND']);

/** Errors of execution as partners see them: a code and the request id, never a stack or SQL text. */
function maskError(
  error: GraphQLError,
  requestId: string,
  logger: Logger,
): {
  message: string;
  path?: readonly (string | number)[];
  locations?: unknown;
  extensions: { code: string; request_id: string };
} {
  const code = error.extensions?.code;
  const base = { path: error.path, locations: error.locations };
  if (typeof code === 'string' && SAFE_CODES.has(code))
    return { message: error.message, ...base, extensions: { code, request_id: requestId } };
  const original = error.originalError ?? error;
  if ((original as { code?: string }).code === '57014')
    return {
      message: 'The query took too long and was cancelled; narrow it',
      ...base,
      extensions: { code: 'TIMEOUT', request_id: requestId },
    };
  if (isDatabaseUnavailable(original)) {
    logger.warn({ requestId, err: { message: original.message } }, 'database unavailable (GraphQL)');
    return {
      message: 'Service temporarily unavailable, please retry',
      ...base,
      extensions: { code: 'SERVICE_UNAVAILABLE', request_id: requestId },
    };
  }
  if (!error.originalError) {
    // GraphQL's own errors (e.g. a non-null field that resolved to null)
    return { message: error.message, ...base, extensions: { code: 'GRAPHQL_ERROR', request_id: requestId } };
  }
  logger.error({ requestId, err: original }, 'GraphQL execution error');
  return {
    message: `Internal error; quote request id ${requestId}`,
    ...base,
    extensions: { code: 'INTERNAL_SERVER_ERROR', request_id: requestId },
  };
}
