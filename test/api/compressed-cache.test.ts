/**
 * The compressed-answer cache (server/http/compressed-cache.ts): a large answer asked for with
 * gzip / br is compressed once per ETag and coding and then served from the cache, with the same
 * decoded bytes, Content-Encoding, Content-Length, Vary and per-coding strong ETag as before;
 * q-values decide the coding; identity when none is acceptable; 304s; the cache stays within its size;
 * an answer around a point gets br at quality 1 and is not kept (it would push out the forms asked
 * for again).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Express } from 'express';
import request from 'supertest';
import {
  BROTLI_QUALITY,
  brotliWindowBits,
  compress,
  CompressedCache,
  compressedCacheBytesFromEnv,
  DEFAULT_COMPRESSED_CACHE_MB,
  INLINE_COMPRESSION_MAX_BYTES,
  KEPT,
  PER_REQUEST,
  setCompressedCache,
} from '../../server/http/compressed-cache';
import { compressedCacheEvictions, compressedCacheLookups } from '../../server/metrics';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { buildApp } from '../support/partner-app';
import { declaredWindowBits } from '../support/brotli';

async function lookups(encoding: string, result: 'hit' | 'miss' | 'per_request'): Promise<number> {
  const m = await compressedCacheLookups.get();
  return m.values.find((v) => v.labels.encoding === encoding && v.labels.result === result)?.value ?? 0;
}

function decode(coding: string | undefined, body: Buffer): string {
  if (coding === 'br') return zlib.brotliDecompressSync(body).toString('utf8');
  if (coding === 'gzip') return zlib.gunzipSync(body).toString('utf8');
  if (coding === 'deflate') return zlib.inflateSync(body).toString('utf8');
  return body.toString('utf8');
}

describe('the br window fitted to the body', () => {
  test('the smallest window that holds the body, within brotli 10..22', () => {
    expect(brotliWindowBits(0)).toBe(10);
    expect(brotliWindowBits(1008)).toBe(10);
    expect(brotliWindowBits(1009)).toBe(11);
    expect(brotliWindowBits(60_000)).toBe(16);
    expect(brotliWindowBits(65_520)).toBe(16);
    expect(brotliWindowBits(65_521)).toBe(17);
    expect(brotliWindowBits(120_000)).toBe(17);
    expect(brotliWindowBits(50_000_000)).toBe(22);
  });

  test.each([2_000, 60_000, 120_000, 700_000])(
    'a %d-character body: the stream declares the fitted window and decodes to the body',
    async (chars) => {
      const body = JSON.stringify(Array.from({ length: chars }, (_, i) => `bar ${i % 977}`)).slice(0, chars);
      const br = await compress(body, 'br');
      expect(declaredWindowBits(br)).toBe(brotliWindowBits(Buffer.byteLength(body)));
      expect(zlib.brotliDecompressSync(br).toString('utf8')).toBe(body);
      // as small as with brotli's default window (22), up to the header's longer window code (3 bits):
      // no match the body holds is out of reach
      const wide = zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } });
      expect(declaredWindowBits(wide)).toBe(22);
      expect(br.length).toBeLessThanOrEqual(wide.length + 1);
    },
  );
});

/** br as zlib gives it at `quality` with the window fitted: what the server must send, computed apart. */
const brAt = (body: string, quality: number) =>
  zlib.brotliCompressSync(body, {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: quality,
      [zlib.constants.BROTLI_PARAM_LGWIN]: brotliWindowBits(Buffer.byteLength(body)),
    },
  });

describe('kept forms as `compression` makes them; answers made per request with the fast settings', () => {
  const body = JSON.stringify(Array.from({ length: 3_000 }, (_, i) => ({ id: `b${i}`, name: `Bar ${i % 131}` })));

  test('compress gives each setting as zlib does, each decoding to the body, in line and on the pool', async () => {
    expect(KEPT).toEqual({ brotliQuality: 4, zlibLevel: zlib.constants.Z_DEFAULT_COMPRESSION });
    expect(PER_REQUEST).toEqual({ brotliQuality: 1, zlibLevel: 1 });
    expect(BROTLI_QUALITY).toBe(4);
    // a body within the in-line bound, then one above it (libuv's pool)
    const large = body.repeat(Math.ceil((INLINE_COMPRESSION_MAX_BYTES * 2) / body.length));
    for (const b of [body, large]) {
      const four = await compress(b, 'br');
      const one = await compress(b, 'br', PER_REQUEST);
      expect(four.equals(brAt(b, 4))).toBe(true);
      expect(one.equals(brAt(b, 1))).toBe(true);
      expect(one.equals(four)).toBe(false);
      expect(decode('br', one)).toBe(b);
      expect((await compress(b, 'gzip')).equals(zlib.gzipSync(b))).toBe(true);
      const gzipOne = await compress(b, 'gzip', PER_REQUEST);
      expect(gzipOne.equals(zlib.gzipSync(b, { level: 1 }))).toBe(true);
      expect(gzipOne.equals(zlib.gzipSync(b))).toBe(false);
      expect(decode('gzip', gzipOne)).toBe(b);
      expect((await compress(b, 'deflate')).equals(zlib.deflateSync(b))).toBe(true);
      expect((await compress(b, 'deflate', PER_REQUEST)).equals(zlib.deflateSync(b, { level: 1 }))).toBe(true);
    }
  });

  test('the cache keeps one br form per body: its quality is BROTLI_QUALITY', async () => {
    const cache = new CompressedCache(8 * 1024 * 1024);
    expect((await cache.get('"p"', 'br', body)).equals(brAt(body, BROTLI_QUALITY))).toBe(true);
    expect((await cache.get('"p"', 'br', body)).equals(brAt(body, BROTLI_QUALITY))).toBe(true);
    expect(cache.size).toBe(1);
  });
});

describe('small bodies compressed in line, large ones on the pool', () => {
  const onPool = {
    br: (b: string) =>
      promisify(zlib.brotliCompress)(b, {
        params: {
          [zlib.constants.BROTLI_PARAM_QUALITY]: 4,
          [zlib.constants.BROTLI_PARAM_LGWIN]: brotliWindowBits(Buffer.byteLength(b)),
        },
      }),
    gzip: (b: string) => promisify(zlib.gzip)(b),
    deflate: (b: string) => promisify(zlib.deflate)(b),
  };
  const sync = { br: 'brotliCompressSync', gzip: 'gzipSync', deflate: 'deflateSync' } as const;
  const bodyOf = (bytes: number) => 'bar,'.repeat(bytes).slice(0, bytes);
  afterEach(() => jest.restoreAllMocks());

  test.each([
    ['br', INLINE_COMPRESSION_MAX_BYTES, true],
    ['br', INLINE_COMPRESSION_MAX_BYTES + 1, false],
    ['gzip', INLINE_COMPRESSION_MAX_BYTES, true],
    ['gzip', INLINE_COMPRESSION_MAX_BYTES + 1, false],
    ['deflate', 2_000, true],
    ['deflate', 200_000, false],
  ] as const)('%s of %d bytes: in line %s, the same bytes either way', async (coding, bytes, inLine) => {
    const body = bodyOf(bytes);
    const spy = jest.spyOn(zlib, sync[coding]);
    const got = await compress(body, coding);
    expect(spy).toHaveBeenCalledTimes(inLine ? 1 : 0);
    spy.mockRestore();
    expect(got.equals(await onPool[coding](body))).toBe(true);
    expect(decode(coding, got)).toBe(body);
  });

  test('a multi-byte body is measured in bytes, not characters', async () => {
    const body = 'é'.repeat(INLINE_COMPRESSION_MAX_BYTES / 2 + 1); // more bytes than the bound, fewer characters
    const spy = jest.spyOn(zlib, 'brotliCompressSync');
    expect(decode('br', await compress(body, 'br'))).toBe(body);
    expect(spy).not.toHaveBeenCalled();
  });

  test('an in-line compression that throws rejects, as the pool would', async () => {
    jest.spyOn(zlib, 'gzipSync').mockImplementation(() => {
      throw new RangeError('Cannot create a Buffer larger than the maximum');
    });
    const cache = new CompressedCache(1024 * 1024);
    await expect(cache.get('"t1"', 'gzip', bodyOf(5_000))).rejects.toThrow(RangeError);
    expect(cache.size).toBe(0); // nothing kept
    jest.restoreAllMocks();
    expect(decode('gzip', await cache.get('"t1"', 'gzip', bodyOf(5_000)))).toBe(bodyOf(5_000)); // a later request compresses anew
  });
});

describe('compressed answers cached', () => {
  let db: TestDatabase;
  let app: Express;
  let cache: CompressedCache;

  let server: http.Server;
  /** The bytes as sent (supertest would decode them). */
  const raw = (url: string, encoding?: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const { port } = server.address() as AddressInfo;
      const req = http.get(
        {
          host: '127.0.0.1',
          port,
          path: `${P}${url}`,
          headers: { ...headers, ...(encoding !== undefined ? { 'Accept-Encoding': encoding } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
    });

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    const austin = await f.city({
      name: 'Austin',
      state: 'TX',
      time_zone: 'America/Chicago',
      latitude: 30.25,
      longitude: -97.75,
    });
    for (let i = 0; i < 30; i++) await f.bar(austin, { name: `Cached Bar ${i}`, latitude: 30.2, longitude: -97.7 });
    ({ app } = buildApp(db.partnerPool()));
    server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  beforeEach(() => {
    cache = new CompressedCache(8 * 1024 * 1024);
    setCompressedCache(cache);
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
    await db?.drop();
  });

  test.each([
    ['gzip, br', 'br'],
    ['br', 'br'],
    ['gzip', 'gzip'],
    ['deflate', 'deflate'],
    ['gzip;q=0.5, br;q=1', 'br'],
    ['br;q=0.2, gzip;q=0.9', 'gzip'],
    ['br;q=0, gzip', 'gzip'],
    ['gzip;q=0, br;q=0', undefined],
    ['identity', undefined],
  ])('Accept-Encoding %j: %s, the identity bytes once decoded, a hit the second time', async (accept, expected) => {
    const plain = await raw('/bars', 'identity');
    expect(plain.status).toBe(200);
    const identity = plain.body.toString('utf8');
    expect(identity.length).toBeGreaterThan(1024);
    const misses = await lookups(expected ?? 'none', 'miss');
    const hits = await lookups(expected ?? 'none', 'hit');
    for (let i = 0; i < 2; i++) {
      const res = await raw('/bars', accept);
      expect(res.status).toBe(200);
      expect(res.headers['content-encoding']).toBe(expected);
      expect(res.headers.vary).toMatch(/Accept-Encoding/i);
      expect(Number(res.headers['content-length'])).toBe(res.body.length);
      expect(decode(expected, res.body)).toBe(identity);
      expect(res.headers.etag).toBe(expected ? plain.headers.etag!.replace(/"$/, `-${expected}"`) : plain.headers.etag);
    }
    if (expected) {
      expect(await lookups(expected, 'miss')).toBe(misses + 1);
      expect(await lookups(expected, 'hit')).toBe(hits + 1);
      expect(cache.size).toBe(1);
    } else {
      expect(cache.size).toBe(0);
    }
  });

  test('a cached coding still revalidates: its own tag gets a 304, the identity tag a full 200', async () => {
    const first = await raw('/bars', 'gzip, br');
    const etag = first.headers.etag!;
    expect(etag).toMatch(/-br"$/);
    const again = await raw('/bars', 'gzip, br', { 'If-None-Match': etag });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    expect(again.headers.etag).toBe(etag);
    const other = await raw('/bars', 'gzip, br', { 'If-None-Match': etag.replace(/-br"$/, '"') });
    expect(other.status).toBe(200);
    expect(other.headers['content-encoding']).toBe('br');
  });

  test.each([
    ['/bars?latitude=30.2&longitude=-97.7', 1],
    ['/bars?latitude=30.2&longitude=-97.7&radius=5', 1],
    ['/search?q=Cached&latitude=30.2&longitude=-97.7', 1],
    ['/bars', 4],
    ['/bars?limit=30', 4],
    ['/search?q=Cached', 4],
  ])('%s: br at quality %d (gzip at the matching level), with its own tag, revalidating', async (url, quality) => {
    const plain = await raw(url, 'identity');
    expect(plain.status).toBe(200);
    const identity = plain.body.toString('utf8');
    expect(identity.length).toBeGreaterThan(1024);
    const res = await raw(url, 'gzip, br');
    expect(res.headers['content-encoding']).toBe('br');
    expect(res.body.equals(brAt(identity, quality))).toBe(true);
    expect(res.headers.etag).toBe(plain.headers.etag!.replace(/"$/, '-br"'));
    const again = await raw(url, 'gzip, br', { 'If-None-Match': res.headers.etag! });
    expect(again.status).toBe(304);
    // gzip: level 1 with br's quality 1 (made per request), zlib's default with br's 4 (kept)
    const gz = await raw(url, 'gzip');
    expect(gz.headers.etag).toBe(plain.headers.etag!.replace(/"$/, '-gzip"'));
    expect(
      gz.body.equals(zlib.gzipSync(identity, { level: quality === 1 ? 1 : zlib.constants.Z_DEFAULT_COMPRESSION })),
    ).toBe(true);
  });

  test('answers around a point are compressed for their request and not kept: they push out nothing', async () => {
    const kept = await raw('/bars', 'gzip, br');
    expect(kept.headers['content-encoding']).toBe('br');
    // room for the kept form and little more: with around-a-point forms kept, it would go first
    setCompressedCache((cache = new CompressedCache(Math.floor(kept.body.length * 1.5))));
    await raw('/bars', 'gzip, br');
    expect(cache.size).toBe(1);
    const evictions = (await compressedCacheEvictions.get()).values[0]?.value ?? 0;
    const perRequest = { br: await lookups('br', 'per_request'), gzip: await lookups('gzip', 'per_request') };
    for (let i = 0; i < 10; i++) {
      const url = `/bars?latitude=${(30.2 + i / 1e4).toFixed(4)}&longitude=-97.7&radius=5`;
      const identity = (await raw(url, 'identity')).body.toString('utf8');
      for (const [accept, coding] of [
        ['gzip, br', 'br'],
        ['gzip', 'gzip'],
      ] as const) {
        const res = await raw(url, accept);
        expect(res.headers['content-encoding']).toBe(coding);
        expect(decode(coding, res.body)).toBe(identity);
      }
    }
    expect(cache.size).toBe(1);
    expect((await compressedCacheEvictions.get()).values[0]?.value ?? 0).toBe(evictions);
    expect(await lookups('br', 'per_request')).toBe(perRequest.br + 10);
    expect(await lookups('gzip', 'per_request')).toBe(perRequest.gzip + 10);
    const hits = await lookups('br', 'hit');
    await raw('/bars', 'gzip, br');
    expect(await lookups('br', 'hit')).toBe(hits + 1);
  });

  test('with the cache off (COMPRESSED_CACHE_MB=0) answers around a point still get the fast settings', async () => {
    setCompressedCache((cache = new CompressedCache(0)));
    const url = '/bars?latitude=30.2001&longitude=-97.7&radius=5';
    const identity = (await raw(url, 'identity')).body.toString('utf8');
    const perRequest = await lookups('br', 'per_request');
    const br = await raw(url, 'gzip, br');
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.body.equals(brAt(identity, 1))).toBe(true);
    expect(Number(br.headers['content-length'])).toBe(br.body.length);
    const gz = await raw(url, 'gzip');
    expect(gz.body.equals(zlib.gzipSync(identity, { level: 1 }))).toBe(true);
    expect(await lookups('br', 'per_request')).toBe(perRequest + 1);
    // the forms a cache would keep: the middleware's (br 4 over a stream), the same decoded bytes and tag
    const plain = await raw('/bars', 'identity');
    const kept = await raw('/bars', 'gzip, br');
    expect(kept.headers['content-encoding']).toBe('br');
    expect(decode('br', kept.body)).toBe(plain.body.toString('utf8'));
    expect(kept.headers.etag).toBe(plain.headers.etag!.replace(/"$/, '-br"'));
    expect(cache.size).toBe(0);
  });

  test('bodies under 1 KB and HEAD stay uncompressed and uncached', async () => {
    const small = await raw('/bars?limit=1', 'gzip, br');
    expect(small.body.length).toBeLessThan(1024);
    expect(small.headers['content-encoding']).toBeUndefined();
    const head = await request(app).head(`${P}/bars`).set('Accept-Encoding', 'gzip, br');
    expect(head.status).toBe(200);
    expect(head.headers['content-encoding']).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  test('the cache stays within its size: least recently used first out', async () => {
    const body = (n: number) => JSON.stringify({ n, data: Array.from({ length: 2000 }, (_, i) => `${n}:${i}`) });
    const one = (await new CompressedCache(1e9).get('"x"', 'gzip', body(0))).length;
    const small = new CompressedCache(Math.floor(one * 2.5)); // room for two
    const evictions = (await compressedCacheEvictions.get()).values[0]?.value ?? 0;
    await small.get('"a"', 'gzip', body(0));
    await small.get('"b"', 'gzip', body(1));
    await small.get('"a"', 'gzip', body(0)); // a: most recently used
    await small.get('"c"', 'gzip', body(2)); // b goes
    expect(small.size).toBe(2);
    expect(small.bytes).toBeLessThanOrEqual(small.maxBytes);
    expect((await compressedCacheEvictions.get()).values[0]?.value).toBe(evictions + 1);
    const missesBefore = await lookups('gzip', 'miss');
    await small.get('"a"', 'gzip', body(0));
    expect(await lookups('gzip', 'miss')).toBe(missesBefore); // still there
    await small.get('"b"', 'gzip', body(1));
    expect(await lookups('gzip', 'miss')).toBe(missesBefore + 1); // evicted
    // a form larger than the whole cache is served, not kept
    const tiny = new CompressedCache(10);
    expect(zlib.gunzipSync(await tiny.get('"d"', 'gzip', body(3))).toString()).toBe(body(3));
    expect(tiny.size).toBe(0);
  });

  test('COMPRESSED_CACHE_MB: default, a number of MB, 0 (off), and a clear error for anything else', async () => {
    expect(compressedCacheBytesFromEnv({})).toBe(DEFAULT_COMPRESSED_CACHE_MB * 1024 * 1024);
    expect(compressedCacheBytesFromEnv({ COMPRESSED_CACHE_MB: '16' })).toBe(16 * 1024 * 1024);
    expect(compressedCacheBytesFromEnv({ COMPRESSED_CACHE_MB: '0' })).toBe(0);
    expect(() => compressedCacheBytesFromEnv({ COMPRESSED_CACHE_MB: 'lots' })).toThrow(/COMPRESSED_CACHE_MB/);
    expect(() => compressedCacheBytesFromEnv({ COMPRESSED_CACHE_MB: '-1' })).toThrow(/COMPRESSED_CACHE_MB/);
    // off: the middleware compresses as before, nothing is kept
    setCompressedCache(new CompressedCache(0));
    const res = await raw('/bars', 'gzip');
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(decode('gzip', res.body))).toBeDefined();
  });
});
