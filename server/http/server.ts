/**
 * The partner listener: HTTPS when a certificate and key are configured, else
 * plain HTTP (e.g. behind a TLS proxy), hardened at the Node level:
 *
 * - Answers Node gives before express (malformed request 400, headers too
 *   large 431, request timeout 408, unknown method 405, CONNECT 405, a body
 *   announced larger than 1 MB 413) are JSON {"error","request_id"} with
 *   X-Request-Id and Connection: close (decisions.md "Input hygiene").
 * - Timeouts: headers within 10 s, the whole request within 30 s, and a
 *   socket with no traffic either way for HTTP_IDLE_TIMEOUT_MS (default 30 s)
 *   is destroyed, so a client that never reads its answer cannot hold the
 *   buffered body forever (slow readers).
 * - Graceful close (drain): stop accepting, answer what was received with
 *   Connection: close, and destroy what is left when the deadline passes.
 *   A cluster worker runs the first step alone first (stopAccepting, when the
 *   primary asks) and the rest later (server/main.ts: two-phase shutdown).
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { RequestListener } from 'node:http';
import type { Config } from '../config';
import { bornWithExpressPrototypes, hasExpressPrototypes } from './express-prototypes';
import { answerJsonError, answerNodeLevelErrors, answerUnsupportedExpectation } from '../web/node-answers';

export interface ServerLimits {
  /** Destroy a socket after this long without traffic in either direction (0 = never). */
  idleTimeoutMs?: number;
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  /** Larger announced bodies are refused with 413 (the API takes no bodies). */
  maxBodyBytes?: number;
}

export const DEFAULT_LIMITS: Required<ServerLimits> = {
  idleTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxBodyBytes: 1_048_576,
};

/** How long the drain lets a keep-alive connection sit idle before closing it: 1 s, less for a short deadline. */
export function drainIdleGraceMs(deadlineMs: number): number {
  return Math.min(1000, Math.floor(deadlineMs / 4));
}

export interface PartnerServer extends http.Server {
  /**
   * Closes the net listener only: connections already accepted (and queued) go on as before,
   * keep-alive included, and answers are not yet marked Connection: close. In a node:cluster
   * worker this sends the primary its (internal) close message synchronously. Idempotent;
   * `drain` calls it first.
   */
  stopAccepting(): void;
  /**
   * Stops accepting (after the connections already queued are accepted), marks in-flight answers
   * Connection: close (and answers requests that arrive meanwhile the same way), closes keep-alive
   * connections once idle for a grace period (1 s); resolves when every connection is gone, or
   * destroys the rest after `deadlineMs`. Returns how many answers were in flight when it started,
   * how many idle connections it closed and how many sockets had to be destroyed.
   */
  drain(deadlineMs: number): Promise<{ inFlight: number; destroyed: number; closedIdle: number }>;
  readonly draining: boolean;
}

export function createPartnerServer(
  config: Pick<Config, 'tls'>,
  app: RequestListener,
  limits: ServerLimits = {},
): PartnerServer {
  const l = { ...DEFAULT_LIMITS, ...limits };
  const active = new Set<http.ServerResponse>();
  const sockets = new Set<Duplex>();
  let draining = false;

  /** Sockets with no request in progress, and since when (a fresh connection counts as idle). */
  const idleSince = new WeakMap<Duplex, number>();
  const busy = new WeakMap<Duplex, number>(); // answers in progress (more than one when pipelined)
  const listener: RequestListener = (req, res) => {
    active.add(res);
    const socket = req.socket;
    idleSince.delete(socket);
    busy.set(socket, (busy.get(socket) ?? 0) + 1);
    res.once('close', () => {
      active.delete(res);
      const left = (busy.get(socket) ?? 1) - 1;
      busy.set(socket, left);
      if (left === 0) idleSince.set(socket, Date.now());
    });
    if (draining) res.setHeader('Connection', 'close');
    // Node's own answer to an HTTP/1.1 request without Host is a bare 400 (requireHostHeader is off below).
    if (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && req.headers.host === undefined)
      return answerJsonError(res, 400, 'Bad Request', 'Malformed request: an HTTP/1.1 request needs a Host header');
    const length = Number(req.headers['content-length'] ?? 0);
    if (length > l.maxBodyBytes)
      return answerJsonError(res, 413, 'Content Too Large', 'Request body too large; this API takes no request body');
    app(req, res);
  };

  // How often Node checks headersTimeout / requestTimeout (default 30 s: far too coarse for a 10 s limit).
  const checks = {
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(l.headersTimeoutMs / 2))),
    requireHostHeader: false, // the listener answers the missing Host itself (JSON, X-Request-Id)
    ...(hasExpressPrototypes(app) ? bornWithExpressPrototypes(app) : {}),
  };
  const server = (
    config.tls
      ? https.createServer(
          { ...checks, cert: fs.readFileSync(config.tls.certFile), key: fs.readFileSync(config.tls.keyFile) },
          listener,
        )
      : http.createServer(checks, listener)
  ) as PartnerServer;

  server.headersTimeout = l.headersTimeoutMs;
  server.requestTimeout = l.requestTimeoutMs;
  server.keepAliveTimeout = l.keepAliveTimeoutMs;
  server.timeout = l.idleTimeoutMs; // no 'timeout' listener: Node destroys the idle socket

  server.on('connection', (socket: Duplex) => {
    sockets.add(socket);
    idleSince.set(socket, Date.now());
    socket.once('close', () => sockets.delete(socket));
  });
  if (config.tls) {
    // TLS sockets: track the secure socket (the one requests run on).
    server.on('secureConnection', (socket: Duplex) => {
      sockets.add(socket);
      idleSince.set(socket, Date.now());
      socket.once('close', () => sockets.delete(socket));
    });
  }

  answerNodeLevelErrors(server, 'GET, HEAD'); // parser errors and CONNECT: JSON (web/node-answers.ts)

  // An Expect other than 100-continue: Node's default is a bare 417.
  server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => {
    active.add(res);
    res.once('close', () => active.delete(res));
    answerUnsupportedExpectation(req, res);
  });

  Object.defineProperty(server, 'draining', { get: () => draining });
  /** Settles when the net listener is closed and every connection is gone (net.Server 'close'). */
  let listenerClosed: Promise<void> | undefined;
  server.stopAccepting = () => {
    listenerClosed ??= new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
  };
  server.drain = (deadlineMs: number) => {
    // Stop accepting now (unless already done): clients told Connection: close reconnect and are
    // refused (not reset).
    server.stopAccepting();
    draining = true;
    const inFlight = active.size;
    for (const res of active) if (!res.headersSent) res.setHeader('Connection', 'close');
    return new Promise((resolve) => {
      let destroyed = 0;
      let closedIdle = 0;
      const finish = () => {
        clearTimeout(hard);
        clearInterval(idle);
        // http.Server.close: its own bookkeeping (the net listener is already closed).
        server.close(() => resolve({ inFlight, destroyed, closedIdle }));
      };
      void listenerClosed!.then(finish);
      // Busy connections close after their Connection: close answer. A keep-alive connection is
      // closed only once it has been idle for the grace period: one that just got its answer may
      // already carry the client's next request (http.Server.closeIdleConnections would reset it).
      const grace = drainIdleGraceMs(deadlineMs);
      const idle = setInterval(
        () => {
          const now = Date.now();
          const candidates = [...sockets].filter((s) => {
            const since = idleSince.get(s);
            return since !== undefined && now - since >= grace;
          });
          if (!candidates.length) return;
          // Timers run before I/O: after a busy stretch a client's next request may be waiting unread on
          // a socket that looks idle. setImmediate runs after the I/O phase has read it (a request makes
          // its socket busy again), so only sockets still idle then are closed.
          setImmediate(() => {
            for (const s of candidates) {
              if (!sockets.has(s) || idleSince.get(s) === undefined) continue;
              closedIdle++;
              s.destroy();
            }
          });
        },
        Math.max(10, Math.floor(grace / 5)),
      );
      const hard = setTimeout(() => {
        destroyed = sockets.size;
        for (const s of sockets) s.destroy();
      }, deadlineMs);
    });
  };
  return server;
}
