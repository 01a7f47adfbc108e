/**
 * The operator GraphQL listener: its own node:http server (loopback by
 * default) with PostGraphile's grafserv at /graphql behind operator bearer
 * tokens, and the ruru IDE at /graphiql outside production. Every error is
 * JSON {"error","request_id"}, Node's own answers included (a request it cannot
 * parse, headers over 10 s, a request over 30 s: web/node-answers.ts).
 */
import '../graphile/env'; // before PostGraphile is loaded
import '../graphile/node20-compat';
import { randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { postgraphile } from 'postgraphile';
import { grafserv } from 'postgraphile/grafserv/node';
import type { Config } from '../config';
import { createPool } from '../db/pools';
import { isDatabaseUnavailable } from '../contract/errors';
import type { Logger } from '../log';
import { metricsText } from '../metrics';
import { sendWebAsset, webAsset } from '../web/assets';
import { answerNodeLevelErrors, answerUnsupportedExpectation } from '../web/node-answers';
import { DEFAULT_MAX_RESPONSE_BYTES, limitResponseSize } from './response-limit';
import { authenticateOperator, type OperatorIdentity } from './auth';
import { GRAPHIQL_PATH, GRAPHQL_PATH, makeOperatorPreset, OPERATOR_ROLE } from './preset';
import type { QueryLimits } from './limits';
import type { BucketsSource } from './buckets';

export interface OperatorServerOptions {
  databaseUrl: string;
  config: Pick<Config, 'env' | 'adminHost' | 'adminPort' | 'pgPoolMax'>;
  logger: Logger;
  statementTimeoutMs?: number;
  limits?: QueryLimits;
  /** Answers larger than this are refused (default 10 MB, OPERATOR_MAX_RESPONSE_BYTES). */
  maxResponseBytes?: number;
  /** Shared rate-limit counters (Redis) for ApiKey.bucketsNow; unset: that field is null. */
  buckets?: BucketsSource;
  /** Node-level timeouts for receiving a request (defaults: OPERATOR_HEADERS_TIMEOUT_MS, OPERATOR_REQUEST_TIMEOUT_MS). */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** GET /metrics text (default: this process's registry; the primary aggregates its workers). */
  metrics?: () => Promise<{ contentType: string; body: string }>;
}

export interface OperatorServer {
  server: http.Server;
  /** e.g. http://127.0.0.1:3001 */
  url: string;
  close(): Promise<void>;
}

const RURU_STATIC_PREFIX = '/ruru-static/';
/** The request's headers must arrive within 10 s and the whole request within 30 s (as the partner listener). */
export const OPERATOR_HEADERS_TIMEOUT_MS = 10_000;
export const OPERATOR_REQUEST_TIMEOUT_MS = 30_000;
export const METRICS_PATH = '/metrics';
export const CONSOLE_PATH = '/console';

function sendJson(
  res: ServerResponse,
  status: number,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
    ...headers,
  });
  res.end(payload);
}

export async function startOperatorServer(options: OperatorServerOptions): Promise<OperatorServer> {
  const { config, logger } = options;
  const production = config.env === 'production';
  const statementTimeoutMs = options.statementTimeoutMs ?? 5000;
  const pool = createPool(options.databaseUrl, {
    max: config.pgPoolMax,
    role: OPERATOR_ROLE,
    applicationName: 'operator-graphql',
    statementTimeoutMs,
  });
  const operators = new WeakMap<IncomingMessage, OperatorIdentity>();
  const pgl = postgraphile(
    makeOperatorPreset({
      pool,
      logger,
      production,
      operatorOf: (req) => operators.get(req),
      statementTimeoutMs,
      limits: options.limits,
      buckets: options.buckets,
    }),
  );
  // Releases the grafserv instance too.
  const release = async () => {
    await pgl.release();
    await pool.end();
  };

  let handleGraphQL: ReturnType<ReturnType<typeof grafserv>['createHandler']>;
  try {
    await pgl.getSchema(); // fail at start, not on the first request
    const serv = pgl.createServ(grafserv);
    await serv.ready();
    handleGraphQL = serv.createHandler();
  } catch (e) {
    await release().catch(() => undefined);
    throw e;
  }

  // How often Node checks the two timeouts (default 30 s: too coarse for 10 s); the missing Host is answered below.
  const checks = { connectionsCheckingInterval: 1_000, requireHostHeader: false };
  const server = http.createServer(checks, (req, res) => {
    const requestId = randomUUID();
    const started = process.hrtime.bigint();
    res.setHeader('X-Request-Id', requestId);
    res.on('finish', () => {
      logger.info(
        {
          requestId,
          method: req.method,
          path: req.url?.split('?')[0],
          status: res.statusCode,
          durationMs: Number(process.hrtime.bigint() - started) / 1e6,
          operatorId: operators.get(req)?.id,
        },
        'operator request',
      );
    });
    const fail = (status: number, error: string, headers?: Record<string, string>) =>
      sendJson(res, status, { error, request_id: requestId }, headers);
    limitResponseSize(res, options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, (bytes) => ({
      status: 400,
      body: JSON.stringify({
        error: `The answer (${bytes} bytes) exceeds the maximum of ${options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES} bytes; select fewer fields or paginate`,
        request_id: requestId,
      }),
    }));
    const next = (err?: unknown) => {
      if (!err) return fail(404, 'Not found');
      logger.error({ requestId, err }, 'operator request failed');
      if (!res.headersSent) fail(500, 'Internal server error');
    };

    if (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && req.headers.host === undefined) {
      res.shouldKeepAlive = false;
      return fail(400, 'Malformed request: an HTTP/1.1 request needs a Host header', { Connection: 'close' });
    }
    const path = (req.url ?? '/').split('?')[0];
    if (!production && (path === GRAPHIQL_PATH || path?.startsWith(RURU_STATIC_PREFIX))) {
      // The IDE's page and assets carry no data; every query it sends to
      // /graphql needs the operator token (set in the IDE's headers pane).
      handleGraphQL(req, res, next);
      return;
    }
    if (path === METRICS_PATH) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return fail(405, 'Method not allowed', { Allow: 'GET, HEAD' });
      authenticateOperator(pool, req)
        .then(
          async (auth) => {
            if (!auth.ok) return fail(401, auth.error, { 'WWW-Authenticate': 'Bearer' });
            operators.set(req, auth.operator);
            const { contentType, body } = await (options.metrics ?? metricsText)();
            res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' });
            res.end(req.method === 'HEAD' ? undefined : body);
          },
          (err: unknown) => {
            if (isDatabaseUnavailable(err))
              return fail(503, 'Service temporarily unavailable, please retry', { 'Retry-After': '5' });
            next(err);
          },
        )
        .catch(next);
      return;
    }
    if (path === CONSOLE_PATH || path?.startsWith(`${CONSOLE_PATH}/`)) {
      // The console's page and files carry no data; every query it sends to /graphql needs the token.
      if (req.method !== 'GET' && req.method !== 'HEAD') return fail(405, 'Method not allowed', { Allow: 'GET, HEAD' });
      const asset = webAsset('console', path.slice(CONSOLE_PATH.length));
      if (!asset) return fail(404, 'Not found');
      return sendWebAsset(req, res, asset);
    }
    if (path !== GRAPHQL_PATH) return fail(404, 'Not found');

    authenticateOperator(pool, req).then(
      (auth) => {
        if (!auth.ok) return fail(401, auth.error, { 'WWW-Authenticate': 'Bearer' });
        operators.set(req, auth.operator);
        handleGraphQL(req, res, next);
      },
      (err: unknown) => {
        if (isDatabaseUnavailable(err)) {
          logger.warn({ requestId, err: { message: (err as Error).message } }, 'database unavailable');
          return fail(503, 'Service temporarily unavailable, please retry', { 'Retry-After': '5' });
        }
        next(err);
      },
    );
  });

  server.headersTimeout = options.headersTimeoutMs ?? OPERATOR_HEADERS_TIMEOUT_MS;
  server.requestTimeout = options.requestTimeoutMs ?? OPERATOR_REQUEST_TIMEOUT_MS;
  answerNodeLevelErrors(server, 'GET, HEAD, POST'); // parser errors and CONNECT: JSON, as the partner listener
  server.on('checkExpectation', answerUnsupportedExpectation); // JSON 417, not Node's bare one

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.adminPort, config.adminHost, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    await release().catch(() => undefined);
    throw e;
  }

  const { port } = server.address() as AddressInfo;
  const host = config.adminHost.includes(':') ? `[${config.adminHost}]` : config.adminHost;
  let closing: Promise<void> | undefined;
  return {
    server,
    url: `http://${host}:${port}`,
    close: () =>
      (closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await closed;
        await release();
      })()),
  };
}
