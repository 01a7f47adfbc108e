/**
 * GET /api/v1/partner/docs: the interactive API reference (Scalar's
 * @scalar/api-reference standalone bundle, served from node_modules; no CDN at
 * run time) rendering /api/v1/partner/openapi.json. Public, text/html,
 * `Cache-Control: public, max-age=3600`, strong ETags.
 */
import { readFileSync } from 'node:fs';
import { Router } from 'express';
import { sendPublic } from './caching';
import { publicDocument, type PublicDocument } from '../web/documents';
import { PARTNER_PREFIX } from '../contract/identity';

export const DOCS_PATH = `${PARTNER_PREFIX}/docs`;
const SCRIPT_PATH = `${DOCS_PATH}/scalar.js`;

const page = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Partner Bar Data API reference</title>
  </head>
  <body>
    <div id="app"></div>
    <script src="${SCRIPT_PATH}"></script>
    <script>
      Scalar.createApiReference('#app', {
        url: '${PARTNER_PREFIX}/openapi.json',
        withDefaultFonts: false,
        hideClientButton: false,
        showDeveloperTools: 'never',
        agent: { disabled: true }, // no AI agent: it would call Scalar's servers
      });
    </script>
  </body>
</html>
`;

/** The docs page and its script. The bundle is read once, on the first request. */
export function docsRoutes(): Router {
  const router = Router();
  const pageDoc = publicDocument(page);
  let script: PublicDocument | undefined;
  router.get(DOCS_PATH, (req, res) => sendPublic(req, res, 'text/html; charset=utf-8', pageDoc));
  router.get(SCRIPT_PATH, (req, res) => {
    if (!script) {
      script = publicDocument(readFileSync(require.resolve('@scalar/api-reference/browser/standalone.js')));
    }
    return sendPublic(req, res, 'text/javascript; charset=utf-8', script);
  });
  return router;
}
