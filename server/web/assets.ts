/**
 * The browser pages in web/: the operator console (operator listener, /console) and the partner
 * dashboard (partner listener, /api/v1/partner/dashboard). Each is a page, its ES modules, the
 * shared modules and the libraries they import (Preact with htm, uPlot), served from the packages'
 * own files: no CDN, so the pages work with no network. Read once, on first use.
 *
 * Both pages show data partners control (names, paths, URLs), so they are sent with a strict
 * Content-Security-Policy: scripts and styles only from this origin, nothing inline, no framing.
 */
import { readdirSync, readFileSync, type Dirent } from 'node:fs';
import path from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { projectRoot } from '../config';
import { publicDocument, type PublicDocument } from './documents';

export interface WebAsset extends PublicDocument {
  contentType: string;
}

export const PAGE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-cache',
};

/** Content types by file extension (as express.static gives them); anything else is bytes. */
const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.ttf': 'font/ttf',
  '.woff2': 'font/woff2',
};

export function contentTypeOf(file: string): string {
  return TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

const web = (...parts: string[]) => path.join(projectRoot, 'web', ...parts);
/**
 * A file of a package, found from its main entry, which lies in dist/ in both packages (htm's
 * `exports` hide its browser build from require.resolve).
 */
const packageFile = (name: string, file: string) => path.join(path.dirname(require.resolve(name)), '..', file);
const VENDOR: Record<string, () => string> = {
  'preact-htm.js': () => packageFile('htm', 'preact/standalone.module.js'),
  'uplot.js': () => packageFile('uplot', 'dist/uPlot.esm.js'),
  'uplot.css': () => packageFile('uplot', 'dist/uPlot.min.css'),
};

export type WebApp = 'console' | 'dashboard';

/** Every file below `dir`, as paths relative to it with forward slashes. */
function listFiles(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as Dirent[])
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)))
    .map((rel) => rel.split(path.sep).join('/'));
}

/** The files of an app, by the path below its prefix ('' and '/' are the page itself). */
function filesOf(app: WebApp): Map<string, string> {
  const map = new Map<string, string>();
  for (const rel of listFiles(web(app))) map.set(`/${rel}`, web(app, rel));
  map.set('', web(app, 'index.html')).set('/', web(app, 'index.html'));
  for (const rel of listFiles(web('shared'))) map.set(`/shared/${rel}`, web('shared', rel));
  for (const [name, file] of Object.entries(VENDOR)) map.set(`/vendor/${name}`, file());
  return map;
}

const apps = new Map<WebApp, Map<string, string>>();
const cache = new Map<string, WebAsset>();

/** The asset at `subpath` (below the app's prefix), or undefined: only the listed files exist. */
export function webAsset(app: WebApp, subpath: string): WebAsset | undefined {
  let files = apps.get(app);
  if (!files) apps.set(app, (files = filesOf(app)));
  const file = files.get(subpath);
  if (!file) return undefined;
  let asset = cache.get(file);
  if (!asset) {
    asset = { ...publicDocument(readFileSync(file)), contentType: contentTypeOf(file) };
    cache.set(file, asset);
  }
  return asset;
}

export function setPageSecurityHeaders(res: ServerResponse): void {
  for (const [name, value] of Object.entries(PAGE_SECURITY_HEADERS)) res.setHeader(name, value);
}

/**
 * Writes an asset with the pages' security headers (node:http: the operator listener, which
 * compresses nothing); 304 on a matching ETag. The partner listener's dashboard goes through
 * caching.ts sendPublic instead, for its compressed forms.
 */
export function sendWebAsset(req: IncomingMessage, res: ServerResponse, asset: WebAsset): void {
  setPageSecurityHeaders(res);
  res.setHeader('ETag', asset.etag);
  const tags = String(req.headers['if-none-match'] ?? '')
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''));
  if (tags.includes(asset.etag)) {
    res.writeHead(304);
    res.end();
    return;
  }
  res.writeHead(200, { 'Content-Type': asset.contentType, 'Content-Length': asset.body.length });
  res.end(req.method === 'HEAD' ? undefined : asset.body);
}
