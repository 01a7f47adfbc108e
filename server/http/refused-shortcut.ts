/**
 * The 429 for a key or an address this process already refuses, given first in the app.
 *
 * Once a bucket has refused a key, the process refuses it itself until that
 * window ends (ratelimit/limiters.ts Refusal): no Redis, no PostgreSQL. So it
 * does an address over the failed-auth limit (guard.ts), whatever key it sends
 * but a valid one already known. A flood of such requests still walked the
 * whole app (compression, the public routers, express-rate-limit's chain; for
 * an address, the failure counted in Redis again) for an answer known in
 * advance. Here it is given before that walk, with the same parts that give it
 * on the usual way, so the answer, the access-log line, the request-log entry
 * and the usage counts are the same (test/credentials/refused-shortcut.test.ts
 * compares both ways):
 *
 * - only where the usual way reaches the guard: GET or HEAD (405 first), an
 *   Accept the path serves (406 first), clean key headers (400 first), a
 *   declared REST endpoint, for a key not the free ones (limiters.ts
 *   refusalFor, failedAuthRefusal);
 * - the request id, HSTS and compression's `Vary` (a 429 body is below its
 *   threshold) as the preamble sets them, the limiter's rate-limit headers
 *   (a key's, built once per refusal and second) and the contract's error
 *   body, in one `writeHead` and `end` (no header object, no `res.send`),
 *   after the hold (refusal-hold.ts: the key or address keeps sending before
 *   its Retry-After);
 * - then, without waiting for `finish`, the access-log line, the request-log
 *   entry and the guard's accounting, each by the function the usual way's
 *   `finish` listener calls. What a 429 costs the server is then mostly
 *   node:http's own work, and the hold bounds how many a flood gets
 *   (docs/PERFORMANCE.md, the flood).
 *
 * Anything else, and any key or address not refused, goes on unchanged.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { KnownRefusalAnswer } from '../ratelimit/limiters';
import { dirtyKeyHeader } from '../web/input-hygiene';
import type { AnswerLogger } from './access-log';
import { acceptable, HSTS } from './negotiation';
import { refusalHold, type RefusalHoldSettings } from './refusal-hold';
import { requestIdOf } from './request-id';

export type KnownRefusal = (req: Request) => KnownRefusalAnswer | undefined;

export interface RefusedShortcutParts {
  knownRefusal: KnownRefusal;
  /** The access log's line and metrics (access-log.ts answerLogger). */
  logAnswer: AnswerLogger;
  /** The request log's entry (usage/request-log.ts RequestLog.record), when the log is kept. */
  recordAnswer?: (req: Request, res: Response, durationMs: number) => void;
  /** How long a refused key's or address's 429 is held before it is written (refusal-hold.ts); none: at once. */
  hold?: RefusalHoldSettings;
}

const MESSAGE = 'Rate limit exceeded';
const JSON_TYPE = 'application/json; charset=utf-8';

export function refusedKeyShortcut(parts: RefusedShortcutParts): RequestHandler {
  const { knownRefusal, logAnswer, recordAnswer } = parts;
  const hold = refusalHold(parts.hold);
  const write = (req: Request, res: Response, refused: KnownRefusalAnswer, started: bigint) => {
    const id = res.locals.requestId as string;
    const answer = refused.answer(res);
    const body = JSON.stringify({ error: MESSAGE, limit: answer.limit, period: answer.bucket, request_id: id });
    const head = req.secure
      ? ['X-Request-Id', id, 'Strict-Transport-Security', HSTS, 'Vary', 'Accept-Encoding', ...answer.headers]
      : ['X-Request-Id', id, 'Vary', 'Accept-Encoding', ...answer.headers];
    head.push('Content-Type', JSON_TYPE, 'Content-Length', String(Buffer.byteLength(body)));
    res.writeHead(429, head);
    res.end(body); // none for a HEAD: node:http sends the head alone
    logAnswer(req, res, started);
    recordAnswer?.(req, res, Number(process.hrtime.bigint() - started) / 1e6);
    refused.account(res);
  };
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    if (!acceptable(req) || dirtyKeyHeader(req) !== undefined) return next();
    const refused = knownRefusal(req);
    if (!refused) return next();
    const started = process.hrtime.bigint(); // as the access log's middleware would take it, after this decision
    res.locals.requestId = requestIdOf(req);
    res.locals.errorMessage = MESSAGE; // the access log's reason, as sendError records it
    // the 429 (its Retry-After, its headers' resets) is built when written, after any hold
    const later = () => {
      try {
        write(req, res, refused, started);
      } catch (e) {
        next(e); // outside express's own call: its error handler answers (500) and logs
      }
    };
    if (hold?.defer(res, refused.until, later)) return;
    write(req, res, refused, started);
  };
}
