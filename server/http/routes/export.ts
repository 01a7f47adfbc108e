/**
 * Bulk export and incremental sync (decisions.md "Bulk export and incremental
 * sync"; docs/EXPORT.md): GET export/bars and GET export/events stream NDJSON
 * from a server-side cursor.
 *
 * One pooled client per export: the watermark is read first (its own statement,
 * before the snapshot; see db/migrations/functions/40-export.sql), then a
 * REPEATABLE READ READ ONLY transaction opens the cursor (api.export_*, SQL text
 * constant, bind parameters) and FETCHes 1000 lines at a time. The lines are a
 * Readable stream piped into the response (and gzip when asked): the next FETCH
 * runs only when the consumer wants more, so memory is bounded by one batch plus
 * the socket buffers whatever the size. A client that goes away destroys the
 * stream: no further FETCH, the transaction is rolled back (closing the cursor)
 * as soon as the FETCH in flight (one batch, milliseconds) returns, and the
 * client goes back to the pool.
 */
import { systemClock, type Clock } from '../../clock';
import { randomBytes } from 'node:crypto';
import { Readable, pipeline, type Writable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { Router, type Request, type Response } from 'express';
import type { PoolClient } from 'pg';
import type { Pool } from '../../db/pools';
import type { Logger } from '../../log';
import type { RedisClient } from '../../redis';
import { E, expressPath, strictQuery } from '../../contract/endpoints';
import { HttpError, sendError } from '../../contract/errors';
import type { PartnerIdentity } from '../../contract/identity';
import { QueryParams, badRequest } from '../../contract/params';
import { CALLS, apiQuery, apiSql, type Statement } from '../../contract/calls';

export const EXPORT_BATCH = 1000;
export const EXPORTS_PER_KEY = 2;
const NDJSON = 'application/x-ndjson';

// ---------------------------------------------------------------------------
// At most EXPORTS_PER_KEY concurrent exports per key
// ---------------------------------------------------------------------------

/** A held export slot; release() is idempotent. */
export type SlotRelease = () => void;

export interface ExportSlots {
  /** A slot for this key, or undefined when it already runs `limit` exports. */
  acquire(keyId: string): Promise<SlotRelease | undefined>;
}

/** Counts in this process (no Redis, or Redis failing). */
export class LocalExportSlots implements ExportSlots {
  private readonly running = new Map<string, number>();
  constructor(private readonly limit = EXPORTS_PER_KEY) {}

  acquire(keyId: string): Promise<SlotRelease | undefined> {
    const n = this.running.get(keyId) ?? 0;
    if (n >= this.limit) return Promise.resolve(undefined);
    this.running.set(keyId, n + 1);
    let released = false;
    return Promise.resolve(() => {
      if (released) return;
      released = true;
      const left = (this.running.get(keyId) ?? 1) - 1;
      if (left <= 0) this.running.delete(keyId);
      else this.running.set(keyId, left);
    });
  }
}

// A sorted set of leases per key, scored by expiry (Redis clock): an instance that
// dies holding a slot frees it when its lease runs out (renewed while it streams).
const ACQUIRE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`;
const RENEW_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

/** Counts shared by every instance through Redis; falls back to this process's counts when Redis fails. */
export class RedisExportSlots implements ExportSlots {
  private readonly fallback: LocalExportSlots;
  constructor(
    private readonly redis: RedisClient,
    private readonly options: { prefix?: string; limit?: number; leaseMs?: number; logger?: Logger } = {},
  ) {
    this.fallback = new LocalExportSlots(options.limit ?? EXPORTS_PER_KEY);
  }

  async acquire(keyId: string): Promise<SlotRelease | undefined> {
    const key = `${this.options.prefix ?? 'pbapi:export:'}${keyId}`;
    const lease = randomBytes(9).toString('base64url');
    const leaseMs = this.options.leaseMs ?? 60_000;
    const limit = this.options.limit ?? EXPORTS_PER_KEY;
    try {
      const ok = await this.redis.eval(ACQUIRE_LUA, 1, key, lease, limit, leaseMs);
      if (ok !== 1) return undefined;
    } catch (e) {
      this.options.logger?.warn({ err: e }, 'export slots: Redis unavailable, counting in process');
      return this.fallback.acquire(keyId);
    }
    const renew = setInterval(() => {
      this.redis.eval(RENEW_LUA, 1, key, lease, leaseMs).catch(() => undefined);
    }, leaseMs / 3);
    renew.unref();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      clearInterval(renew);
      this.redis.zrem(key, lease).catch(() => undefined); // else the lease expires
    };
  }
}

// ---------------------------------------------------------------------------
// Routes
// ---------------------------------------------------------------------------

export interface ExportOptions {
  /**
   * Connections for exports (default: the partner pool). Give the primary's: the
   * watermark reads pg_stat_activity of the server that takes the writes, and a
   * replica may lag behind it.
   */
  pool?: Pool;
  /** Concurrent exports per key (default: counted in this process; RedisExportSlots across instances). */
  slots?: ExportSlots;
  /** Lines per FETCH (default 1000). */
  batch?: number;
  /** Exports this instance runs at once, all keys together (default 4): each holds a pooled connection. */
  maxRunning?: number;
  /**
   * Aborted when the shutdown cannot wait any longer: a running export stops after the batch in
   * flight and ends its stream cleanly without the end line (the consumer resumes from its last
   * watermark), logged; instead of a connection destroyed mid-line at the deadline.
   */
  stop?: AbortSignal;
}

const STATE = /^[A-Za-z]{2}$/;

function place(q: QueryParams): { state: string | null; city: string | null } {
  const state = q.nonEmpty('state');
  const city = q.nonEmpty('city');
  if (state !== undefined && !STATE.test(state)) throw badRequest('state must be a two-letter state code');
  if (city !== undefined && state === undefined) throw badRequest('city requires state');
  return { state: state ?? null, city: city ?? null };
}

export function exportRoutes(options: { pool: Pool; logger: Logger; export?: ExportOptions; clock?: Clock }): Router {
  const clock = options.clock ?? systemClock;
  const router = Router();
  const deps: Run = {
    pool: options.export?.pool ?? options.pool,
    slots: options.export?.slots ?? new LocalExportSlots(),
    batch: Math.max(1, Math.floor(options.export?.batch ?? EXPORT_BATCH)),
    maxRunning: options.export?.maxRunning ?? 4,
    running: 0,
    logger: options.logger,
    stop: options.export?.stop,
  };

  router.get(expressPath(E.exportBars), strictQuery(E.exportBars), async (req, res) => {
    const q = new QueryParams(req.query);
    const { state, city } = place(q);
    const since = q.dateTime('updated_since') ?? null;
    await runExport(
      req,
      res,
      deps,
      apiSql(CALLS.exportBars, { cursor: CURSOR, state, city, updated_since: since, now: clock() }),
    );
  });

  router.get(expressPath(E.exportEvents), strictQuery(E.exportEvents), async (req, res) => {
    const q = new QueryParams(req.query);
    const { state, city } = place(q);
    const args = {
      cursor: CURSOR,
      state,
      city,
      start_date: q.date('start_date') ?? null,
      end_date: q.date('end_date') ?? null,
      updated_since: q.dateTime('updated_since') ?? null,
    };
    await runExport(req, res, deps, apiSql(CALLS.exportEvents, args));
  });

  return router;
}

interface Run {
  pool: Pool;
  slots: ExportSlots;
  batch: number;
  maxRunning: number;
  running: number;
  logger: Logger;
  stop?: AbortSignal;
}

const CURSOR = 'partner_export';

async function runExport(req: Request, res: Response, deps: Run, open: Statement) {
  const partner = res.locals.partner as PartnerIdentity | undefined;
  if (deps.running >= deps.maxRunning) {
    // the pool serves the other endpoints too: exports take at most maxRunning of its connections
    res.setHeader('Retry-After', '10');
    sendError(res, 503, 'Too many exports running on this server; retry shortly');
    return;
  }
  const slot = await deps.slots.acquire(partner?.keyId ?? '');
  if (!slot) {
    res.setHeader('Retry-After', '10');
    sendError(res, 429, 'Rate limit exceeded', { limit: EXPORTS_PER_KEY, period: 'concurrent' });
    return;
  }
  deps.running++;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    deps.running--;
    slot();
  };
  let client: PoolClient | undefined;
  try {
    client = await deps.pool.connect();
    const watermark = (await apiQuery(client, CALLS.exportWatermark, {}))[0]!.w as string;
    await client.query('begin isolation level repeatable read read only');
    await client.query('set local jit = off');
    const opened = await client.query<{ c: string | null }>(open.text, open.values);
    if (opened.rows[0]?.c == null) throw new HttpError(404, 'City not found');
    streamCursor(req, res, deps, client, watermark, release);
    client = undefined; // the stream owns it now
  } catch (e) {
    release();
    if (client) {
      await client.query('rollback').catch(() => undefined);
      client.release();
    }
    throw e;
  }
}

function streamCursor(
  req: Request,
  res: Response,
  deps: Run,
  client: PoolClient,
  watermark: string,
  releaseSlot: SlotRelease,
): void {
  let count = 0;
  let done = false;
  let finished: Promise<void> | undefined;
  /** Ends the transaction (closing the cursor) and returns the client; once. */
  const finish = (commit: boolean): Promise<void> =>
    (finished ??= (async () => {
      releaseSlot();
      try {
        await client.query(commit ? 'commit' : 'rollback');
        client.release();
      } catch (e) {
        client.release(e as Error); // a broken connection is discarded
      }
    })());

  let fetching = false;
  const cut = () => {
    if (done) return;
    done = true;
    deps.logger.warn({ count }, 'export ended by the shutdown without its end line (the client resumes)');
    void finish(false).then(() => lines.push(null));
  };
  const lines = new Readable({
    highWaterMark: 64 * 1024,
    read() {
      if (done) return;
      if (deps.stop?.aborted) return cut();
      fetching = true;
      client
        .query<unknown[]>({ text: `fetch ${deps.batch} from ${CURSOR}`, rowMode: 'array' })
        .then(async (result) => {
          fetching = false;
          if (lines.destroyed) return;
          const batch = result.rows;
          count += batch.length;
          let chunk = batch.length ? `${batch.map((r) => r[0] as string).join('\n')}\n` : '';
          if (batch.length < deps.batch) {
            done = true;
            await finish(true);
            chunk += `${JSON.stringify({ type: 'end', count, next_updated_since: watermark })}\n`;
            lines.push(chunk);
            lines.push(null);
          } else {
            lines.push(chunk);
            if (deps.stop?.aborted) cut();
          }
        })
        .catch((e: Error) => lines.destroy(e));
    },
    destroy(err, callback) {
      done = true;
      deps.stop?.removeEventListener('abort', onStop);
      void finish(false).then(() => callback(err));
    },
  });
  // Between batches (or with a consumer that is not reading) the stream is cut at once; a batch in
  // flight is sent first.
  const onStop = () => {
    if (!fetching) cut();
  };
  deps.stop?.addEventListener('abort', onStop, { once: true });
  lines.once('end', () => deps.stop?.removeEventListener('abort', onStop));

  const gzip = req.acceptsEncodings('gzip', 'identity') === 'gzip';
  res.status(200);
  res.setHeader('Content-Type', NDJSON);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Vary', 'Accept-Encoding');
  if (gzip) res.setHeader('Content-Encoding', 'gzip');
  if (req.method === 'HEAD') {
    lines.destroy();
    res.end();
    return;
  }
  const onEnd = (err: Error | null | undefined) => {
    if (err && !res.destroyed && (err as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') {
      deps.logger.error({ err, count }, 'export failed mid-stream');
      res.destroy(err); // the stream ends without its end line: the consumer knows it was cut short
    }
  };
  if (gzip) pipeline(lines, createGzip(), res as unknown as Writable, onEnd);
  else pipeline(lines, res as unknown as Writable, onEnd);
}
