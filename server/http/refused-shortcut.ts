/**
 * The 429 for a key this process already refuses, given first in the app.
 *
 * Once a bucket has refused a key, the process refuses it itself until that
 * window ends (ratelimit/limiters.ts Refusal): no Redis, no PostgreSQL. A flood
 * of such requests still walked the whole app (compression, the public
 * routers, express-rate-limit's chain) for an answer known in advance. Here it
 * is given before that walk, with the same parts that give it on the usual
 * way, so the answer, the access-log line, the request-log entry and the usage
 * counts are the same (test/credentials/refused-shortcut.test.ts compares
 * both ways):
 *
 * - only where the usual way reaches the guard: GET or HEAD (405 first), an
 *   Accept the path serves (406 first), clean key headers (400 first), a
 *   declared REST endpoint other than the free ones (limiters.ts refusalFor);
 * - the app's preamble runs as on the usual way (request id, access log,
 *   request log, HSTS), compression's `Vary` is set as it would (a 429 body is
 *   below its threshold), then the guard's own answer (guard.ts knownRefusal).
 *
 * Anything else, and any key not refused, goes on unchanged.
 */
import type { Request, RequestHandler, Response } from 'express';
import { dirtyKeyHeader } from '../web/input-hygiene';
import { acceptable } from './negotiation';

export type KnownRefusal = (req: Request) => ((res: Response) => void) | undefined;

export function refusedKeyShortcut(preamble: readonly RequestHandler[], knownRefusal: KnownRefusal): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    if (!acceptable(req) || dirtyKeyHeader(req) !== undefined) return next();
    const answer = knownRefusal(req);
    if (!answer) return next();
    for (const handler of preamble) {
      let passed = false;
      void handler(req, res, () => (passed = true));
      if (!passed) throw new Error('refused-key shortcut: a preamble handler did not pass the request on');
    }
    res.vary('Accept-Encoding'); // compression's, for a JSON answer below its threshold
    answer(res);
  };
}
