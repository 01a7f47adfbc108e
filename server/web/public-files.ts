/**
 * The files of one directory served as public documents (`send`: http/caching.ts sendPublic): the GraphQL
 * explorer's bundle (ruru's static/). Unlike express.static their compressed forms come from the
 * compressed-answer cache: ruru's largest chunk (2.7 MB) cost 55-65 ms of CPU per request to
 * compress with `br` or `gzip`, for anyone, without a key.
 *
 * - Only the names listed in the directory at start are served (no path is ever joined from the
 *   request); anything else is 404.
 * - A file is read on its first request and kept, with its strong ETag: at most the directory
 *   (48 MB for ruru 2, source maps included; 11 MB without them).
 * - The answer (Cache-Control, 304, the compressed forms) is `send`'s: the explorer passes sendPublic.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { Router, type Request, type Response } from 'express';
import { sendError } from '../contract/errors';
import { contentTypeOf } from './assets';
import { publicDocument, type PublicDocument } from './documents';

export type SendDocument = (req: Request, res: Response, type: string, doc: PublicDocument) => Promise<void>;

/** GET/HEAD `/<name>` for each regular file directly in `dir`. */
export function publicFileRoutes(dir: string, send: SendDocument): Router {
  const names = new Set(readdirSync(dir).filter((name) => statSync(path.join(dir, name)).isFile()));
  const loaded = new Map<string, PublicDocument>();
  const router = Router();
  router.get('/:name', (req, res) => {
    const name = req.params.name as string;
    if (!names.has(name)) return sendError(res, 404, 'Not found');
    let file = loaded.get(name);
    if (!file) {
      file = publicDocument(readFileSync(path.join(dir, name)));
      loaded.set(name, file);
    }
    return send(req, res, contentTypeOf(name), file);
  });
  return router;
}
