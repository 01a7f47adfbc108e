/**
 * Public documents (caching.ts sendPublic: openapi.json, the docs page's script, the changelog, the
 * GraphQL SDL and explorer), the explorer's bundle (public-files.ts) and the partner dashboard's
 * files: their compressed forms come from the compressed-answer cache, compressed once, with a strong
 * ETag per coding; 304s; identity and HEAD unchanged; with the cache off the middleware compresses.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import express from 'express';
import pino from 'pino';
import { CompressedCache, setCompressedCache } from '../../server/http/compressed-cache';
import { compressedCacheLookups } from '../../server/metrics';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createPartnerApp } from '../../server/http/app';
import { graphqlRoutes } from '../../server/graphql/endpoint';
import { publicFileRoutes } from '../../server/web/public-files';
import { sendPublic } from '../../server/http/caching';
import type { Pool } from '../../server/db/pools';
import { testClock } from '../support/clock';
import { testGuard } from '../support/partner-app';

type Raw = { status: number; headers: http.IncomingHttpHeaders; body: Buffer };

/** The bytes as sent (supertest would decode them). */
function rawGet(server: http.Server, url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const { port } = server.address() as AddressInfo;
    const req = http.request({ host: '127.0.0.1', port, path: url, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function decode(coding: string | undefined, body: Buffer): Buffer {
  if (coding === 'br') return zlib.brotliDecompressSync(body);
  if (coding === 'gzip') return zlib.gunzipSync(body);
  return body;
}

async function lookups(encoding: string, result: 'hit' | 'miss'): Promise<number> {
  const m = await compressedCacheLookups.get();
  return m.values.find((v) => v.labels.encoding === encoding && v.labels.result === result)?.value ?? 0;
}

const listen = async (handler: http.RequestListener) => {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
};
const close = (server?: http.Server) => new Promise((r) => (server ? server.close(r) : r(undefined)));

const silent = pino({ level: 'silent' });
const EXPLORER_STATIC = path.join(path.dirname(require.resolve('ruru')), '..', 'static');
const SCALAR = readFileSync(require.resolve('@scalar/api-reference/browser/standalone.js'));

describe('public documents through the compressed-answer cache', () => {
  let server: http.Server;
  let cache: CompressedCache;

  beforeAll(async () => {
    const pass: express.RequestHandler = (_req, _res, next) => next();
    const app = createPartnerApp({
      config: { env: 'test' },
      logger: silent,
      pool: {} as Pool, // no document here reads the database
      guard: [testGuard],
      clock: testClock,
      graphql: graphqlRoutes({ pool: {} as Pool, guard: { authenticate: pass, limit: [] }, logger: silent }),
    });
    server = await listen(app);
  });
  beforeEach(() => {
    cache = new CompressedCache(32 * 1024 * 1024);
    setCompressedCache(cache);
  });
  afterAll(async () => {
    await close(server);
    setCompressedCache(new CompressedCache(64 * 1024 * 1024));
  });

  test.each([
    ['the docs script', `${P}/docs/scalar.js`, /^text\/javascript; charset=utf-8$/],
    ['openapi.json', `${P}/openapi.json`, /^application\/json; charset=utf-8$/],
    ['the changelog', `${P}/changelog`, /^application\/json; charset=utf-8$/],
    ['the GraphQL SDL', `${P}/graphql/schema.graphql`, /^text\/plain; charset=utf-8$/],
    ['the GraphQL explorer', `${P}/graphql/explorer`, /^text\/html; charset=utf-8$/],
  ])('%s: br compressed once, then served from the cache; the identity bytes once decoded', async (_n, url, type) => {
    const plain = await rawGet(server, url, { Accept: '*/*' });
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['content-type']).toMatch(type);
    expect(plain.headers['cache-control']).toBe('public, max-age=3600');
    expect(Number(plain.headers['content-length'])).toBe(plain.body.length);
    expect(plain.headers.etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/); // the identity tag: no coding suffix
    const misses = await lookups('br', 'miss');
    const hits = await lookups('br', 'hit');
    for (let i = 0; i < 3; i++) {
      const res = await rawGet(server, url, { Accept: '*/*', 'Accept-Encoding': 'gzip, br' });
      expect(res.status).toBe(200);
      expect(res.headers['content-encoding']).toBe('br');
      expect(res.headers['content-type']).toMatch(type);
      expect(res.headers.vary).toMatch(/Accept-Encoding/i);
      expect(Number(res.headers['content-length'])).toBe(res.body.length);
      expect(res.headers.etag).toBe(plain.headers.etag!.replace(/"$/, '-br"'));
      expect(decode('br', res.body).equals(plain.body)).toBe(true);
    }
    expect(await lookups('br', 'miss')).toBe(misses + 1);
    expect(await lookups('br', 'hit')).toBe(hits + 2);
    expect(cache.size).toBe(1);
  });

  test('the docs script as sent is the package file, in gzip too; its own tag revalidates (304), the other coding does not', async () => {
    const url = `${P}/docs/scalar.js`;
    const gz = await rawGet(server, url, { 'Accept-Encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(decode('gzip', gz.body).equals(SCALAR)).toBe(true);
    const again = await rawGet(server, url, { 'Accept-Encoding': 'gzip', 'If-None-Match': gz.headers.etag! });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    const br = await rawGet(server, url, { 'Accept-Encoding': 'br', 'If-None-Match': gz.headers.etag! });
    expect(br.status).toBe(200);
    expect(br.headers['content-encoding']).toBe('br');
    const head = await rawGet(server, url, { 'Accept-Encoding': 'gzip, br' }, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers['content-encoding']).toBeUndefined();
    expect(Number(head.headers['content-length'])).toBe(SCALAR.length);
    expect(head.body.length).toBe(0);
  });

  test("the explorer's bundle: a file of ruru's static/ compressed once, its bytes once decoded", async () => {
    const name = '2370.js';
    const file = readFileSync(path.join(EXPLORER_STATIC, name));
    const url = `${P}/graphql/explorer/static/${name}`;
    const misses = await lookups('br', 'miss');
    const first = await rawGet(server, url, { 'Accept-Encoding': 'br' });
    const second = await rawGet(server, url, { 'Accept-Encoding': 'br' });
    for (const res of [first, second]) {
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(res.headers['x-api-beta']).toBe('graphql');
      expect(res.headers['cache-control']).toBe('public, max-age=3600');
      expect(decode('br', res.body).equals(file)).toBe(true);
    }
    expect(await lookups('br', 'miss')).toBe(misses + 1);
    const plain = await rawGet(server, url);
    expect(plain.body.equals(file)).toBe(true);
    expect(second.headers.etag).toBe(plain.headers.etag!.replace(/"$/, '-br"'));
  });

  test("the partner dashboard's files: compressed once, with the pages' security headers and no-cache", async () => {
    const url = `${P}/dashboard/vendor/uplot.js`;
    const plain = await rawGet(server, url);
    expect(plain.status).toBe(200);
    const misses = await lookups('br', 'miss');
    for (let i = 0; i < 2; i++) {
      const res = await rawGet(server, url, { 'Accept-Encoding': 'gzip, br' });
      expect(res.headers['content-encoding']).toBe('br');
      expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
      expect(res.headers['content-security-policy']).toMatch(/default-src 'none'/);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers.etag).toBe(plain.headers.etag!.replace(/"$/, '-br"'));
      expect(decode('br', res.body).equals(plain.body)).toBe(true);
    }
    expect(await lookups('br', 'miss')).toBe(misses + 1);
    const again = await rawGet(server, url, {
      'Accept-Encoding': 'gzip, br',
      'If-None-Match': `"x", ${plain.headers.etag!.replace(/"$/, '-br"')}`,
    });
    expect(again.status).toBe(304);
  });

  test.each([
    ['a name not in the directory', 'nope.js'],
    ['a path outside it', '..%2F..%2Fpackage.json'],
    ['a traversal by segments', '../../package.json'],
    ['a subdirectory', 'a/b.js'],
  ])("the explorer's bundle: %s is 404", async (_n, name) => {
    const res = await rawGet(server, `${P}/graphql/explorer/static/${name}`);
    expect(res.status).toBe(404);
    expect(res.body.toString()).not.toContain('"dependencies"');
  });

  test('with the cache off (COMPRESSED_CACHE_MB=0) the middleware compresses, with the same per-coding tag', async () => {
    setCompressedCache(new CompressedCache(0));
    const url = `${P}/openapi.json`;
    const plain = await rawGet(server, url);
    const br = await rawGet(server, url, { 'Accept-Encoding': 'br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.etag).toBe(plain.headers.etag!.replace(/"$/, '-br"'));
    expect(decode('br', br.body).equals(plain.body)).toBe(true);
  });
});

describe('publicFileRoutes', () => {
  let dir: string;
  let server: http.Server;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'public-files-'));
    writeFileSync(path.join(dir, 'a.css'), 'body { color: red }\n');
    writeFileSync(path.join(dir, 'b.bin'), Buffer.from([0, 1, 2, 255]));
    const app = express();
    app.use('/s', publicFileRoutes(dir, sendPublic));
    server = await listen(app);
  });
  afterAll(async () => {
    await close(server);
    rmSync(dir, { recursive: true, force: true });
  });

  test('types by extension, bytes as stored; a file added after start is not served', async () => {
    const css = await rawGet(server, '/s/a.css');
    expect(css.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(css.body.toString()).toBe('body { color: red }\n');
    const bin = await rawGet(server, '/s/b.bin');
    expect(bin.headers['content-type']).toBe('application/octet-stream');
    expect([...bin.body]).toEqual([0, 1, 2, 255]);
    writeFileSync(path.join(dir, 'late.js'), 'x');
    expect((await rawGet(server, '/s/late.js')).status).toBe(404);
  });
});
