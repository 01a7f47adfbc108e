/**
 * Compressed forms of the stored texts sendCacheable and sendPublic send (caching.ts), kept
 * in a bounded in-process LRU keyed by the body's ETag and the content coding,
 * so a large answer asked for again with `Accept-Encoding: gzip, br` is not
 * compressed again on every request.
 *
 * - The codings and settings are those `compression` uses (gzip and deflate at
 *   zlib's default level, br at quality 4), so a cached answer is the
 *   representation the middleware would have produced (same decoded bytes,
 *   same ETag: the identity tag with `-br` / `-gzip` / `-deflate`). Two
 *   differences: br's window is fitted to the body (brotliWindowBits), which
 *   changes the stream header, not the compressed size; and an answer around a
 *   point, made anew for nearly every request, is compressed with brotli's and zlib's fast
 *   settings (PER_REQUEST: br at quality 1, gzip and deflate at level 1) and not kept
 *   (caching.ts): a new body per request, it would push out the forms that are asked for again.
 * - Size: COMPRESSED_CACHE_MB (default 64; 0 disables the cache, the
 *   middleware then compresses the forms it would keep; the per-request forms, kept by no one,
 *   are made as with the cache on). Least recently used forms go first.
 * - Concurrent misses of one form compress it once (the pending promise is shared).
 * - A body up to INLINE_COMPRESSION_MAX_BYTES is compressed in line, on the event loop's thread:
 *   see compress().
 * - Metrics: partner_compressed_cache_lookups_total{encoding,result} (result `per_request` for a
 *   form compressed for its request and not kept: countPerRequest),
 *   partner_compressed_cache_evictions_total, partner_compressed_cache_bytes.
 */
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { compressedCacheBytes, compressedCacheEvictions, compressedCacheLookups } from '../metrics';

export type Coding = 'br' | 'gzip' | 'deflate';

const gzip = promisify(zlib.gzip);
const deflate = promisify(zlib.deflate);
const brotli = promisify(zlib.brotliCompress);

/**
 * The smallest brotli window that holds a body of `bytes` bytes (brotli reaches back at most
 * 2^bits − 16 bytes), between brotli's minimum and its default (22). With the default, a body over
 * one input block (64 KB at quality 4) makes the encoder allocate its whole 8 MB ring buffer, and
 * the page faults of that allocation on libuv's pool threads made a 120 KB answer cost 1,497–1,744
 * µs of CPU against 1,082–1,200 with the window fitted, for the same compressed bytes (machine Z,
 * docs/performance/2026-11-28-v1.3.md).
 */
export function brotliWindowBits(bytes: number): number {
  const { BROTLI_MIN_WINDOW_BITS, BROTLI_DEFAULT_WINDOW } = zlib.constants;
  return Math.min(BROTLI_DEFAULT_WINDOW, Math.max(BROTLI_MIN_WINDOW_BITS, Math.ceil(Math.log2(bytes + 16))));
}

/**
 * Bodies up to this many bytes are compressed in line (zlib's sync calls), larger ones on libuv's
 * pool. Handing a compression to the pool and back costs more than the compression of a radius page
 * (60 KB, `br` 4: about 0.6 ms): the pool thread's wake-up and its own malloc arena, which pages the
 * encoder's memory in and out. Server CPU per uncached radius answer with `gzip, br`, paced at 250
 * req/s, pool against in line, 4 alternations: median 2,463 against 2,091 µs (machine AG,
 * docs/performance/2026-12-01-v1.3.md). At 64 KB, brotli 4 reads its input as one block; the event
 * loop waits at most that one compression (0.6-0.8 ms for 60 KB on the slowest machine measured).
 */
export const INLINE_COMPRESSION_MAX_BYTES = 64 * 1024;

/** `compression` 1.8's brotli quality: every answer's br form but those made per request. */
export const BROTLI_QUALITY = 4;

/**
 * The br quality of an answer that seldom repeats (a page around a point: each new point is a new
 * body), whose compression is paid on nearly every request rather than once per cached form.
 * Quality 1 is brotli's fast one-pass encoder, as nginx compresses dynamic answers with gzip at level
 * 1 by default. Server CPU per radius answer with `gzip, br` (1M bars, paced at 250 req/s, Node 20),
 * quality 3 against 1, alternating x4: median 3,253 -> 2,636 µs (-19 %, lower in all four pairs), for
 * 13 % more bytes (8,054 against 7,134 a response, headers included; a 59 KB page is 7.0 KB against
 * 6.1); in process, one compression at a time, 291 against 650 µs (machine AJ,
 * docs/performance/2026-12-02-v1.3.md). Quality 3 (machine AH, the same notebook) had been -14 %
 * against 4.
 */
const BROTLI_QUALITY_PER_REQUEST = 1;

/**
 * The gzip / deflate level of an answer that seldom repeats, for the same reason (nginx's default
 * `gzip_comp_level`; Go's HTTP client asks for gzip only). In process, 40 radius pages of 59 KB:
 * zlib's default level 561-583 µs a page, level 1 245-254 µs, for 7.4 KB instead of 5.6. The full
 * server's CPU per radius answer with `Accept-Encoding: gzip`, 4 alternating pairs of legs: medians
 * 1,360 -> 1,094 µs, lower in all four (machine AY, docs/performance/2026-12-07-v1.3.md).
 */
const ZLIB_LEVEL_PER_REQUEST = 1;

/** How a form is compressed: once, to be kept (KEPT: as `compression` 1.8 does), or for one request. */
export interface CompressionSetting {
  brotliQuality: number;
  zlibLevel: number;
}
export const KEPT: CompressionSetting = {
  brotliQuality: BROTLI_QUALITY,
  zlibLevel: zlib.constants.Z_DEFAULT_COMPRESSION,
};
export const PER_REQUEST: CompressionSetting = {
  brotliQuality: BROTLI_QUALITY_PER_REQUEST,
  zlibLevel: ZLIB_LEVEL_PER_REQUEST,
};

/** `body` in `coding` with `setting`: in line up to INLINE_COMPRESSION_MAX_BYTES, else on libuv's pool. */
export function compress(body: string | Buffer, coding: Coding, setting = KEPT): Promise<Buffer> {
  const bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  if (bytes > INLINE_COMPRESSION_MAX_BYTES) return compressOnPool(body, bytes, coding, setting);
  try {
    return Promise.resolve(compressInLine(body, bytes, coding, setting));
  } catch (e) {
    return Promise.reject(e as Error);
  }
}

function brotliOptions(bytes: number, quality: number): zlib.BrotliOptions {
  return {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: quality,
      [zlib.constants.BROTLI_PARAM_LGWIN]: brotliWindowBits(bytes),
    },
  };
}

function compressInLine(body: string | Buffer, bytes: number, coding: Coding, setting: CompressionSetting): Buffer {
  switch (coding) {
    case 'br':
      return zlib.brotliCompressSync(body, brotliOptions(bytes, setting.brotliQuality));
    case 'gzip':
      return zlib.gzipSync(body, { level: setting.zlibLevel });
    case 'deflate':
      return zlib.deflateSync(body, { level: setting.zlibLevel });
  }
}

function compressOnPool(
  body: string | Buffer,
  bytes: number,
  coding: Coding,
  setting: CompressionSetting,
): Promise<Buffer> {
  switch (coding) {
    case 'br':
      return brotli(body, brotliOptions(bytes, setting.brotliQuality));
    case 'gzip':
      return gzip(body, { level: setting.zlibLevel });
    case 'deflate':
      return deflate(body, { level: setting.zlibLevel });
  }
}

export const DEFAULT_COMPRESSED_CACHE_MB = 64;

/** COMPRESSED_CACHE_MB: a non-negative number of megabytes (fractions allowed), else the default. */
export function compressedCacheBytesFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.COMPRESSED_CACHE_MB;
  if (raw === undefined || raw.trim() === '') return DEFAULT_COMPRESSED_CACHE_MB * 1024 * 1024;
  const mb = Number(raw);
  if (!Number.isFinite(mb) || mb < 0) throw new Error(`COMPRESSED_CACHE_MB must be a number >= 0, got "${raw}"`);
  return Math.floor(mb * 1024 * 1024);
}

export class CompressedCache {
  private readonly entries = new Map<string, Buffer>();
  private readonly pending = new Map<string, Promise<Buffer>>();
  private held = 0;

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.held;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The `coding` form of `body`, whose identity ETag is `etag`: from the cache, else compressed (and kept). */
  async get(etag: string, coding: Coding, body: string | Buffer): Promise<Buffer> {
    if (this.maxBytes <= 0) return compress(body, coding);
    const id = `${coding} ${etag}`;
    const hit = this.entries.get(id);
    if (hit) {
      // most recently used: to the end of the insertion order
      this.entries.delete(id);
      this.entries.set(id, hit);
      compressedCacheLookups.inc({ encoding: coding, result: 'hit' });
      return hit;
    }
    compressedCacheLookups.inc({ encoding: coding, result: 'miss' });
    let compressing = this.pending.get(id);
    if (!compressing) {
      compressing = compress(body, coding).finally(() => this.pending.delete(id));
      this.pending.set(id, compressing);
      void compressing.then(
        (buf) => this.keep(id, buf),
        () => undefined,
      );
    }
    return compressing;
  }

  private keep(id: string, buf: Buffer): void {
    if (buf.length > this.maxBytes || this.entries.has(id)) return;
    this.entries.set(id, buf);
    this.held += buf.length;
    for (const [oldest, old] of this.entries) {
      if (this.held <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.held -= old.length;
      compressedCacheEvictions.inc();
    }
    compressedCacheBytes.set(this.held);
  }

  clear(): void {
    this.entries.clear();
    this.held = 0;
    compressedCacheBytes.set(0);
  }
}

/** A form compressed for its request and not kept (an answer around a point): counted beside the lookups. */
export function countPerRequest(coding: Coding): void {
  compressedCacheLookups.inc({ encoding: coding, result: 'per_request' });
}

let shared: CompressedCache | undefined;

/** The process's cache (sized by COMPRESSED_CACHE_MB on first use). */
export function compressedCache(): CompressedCache {
  return (shared ??= new CompressedCache(compressedCacheBytesFromEnv()));
}

/** Replaces the process's cache (tests; a new size). */
export function setCompressedCache(cache: CompressedCache): void {
  shared?.clear();
  shared = cache;
}
