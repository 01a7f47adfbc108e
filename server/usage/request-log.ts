/**
 * The request log (decisions.md v1.3 "Request log"): answered partner requests
 * that ended in 4xx/5xx (REQUEST_LOG=errors, the default; `all`: every answer;
 * `off`: none), kept in PostgreSQL (admin.request_log, one partition per UTC
 * day, 30 days).
 *
 * - Off the request's path: the answer's `finish` puts an entry in a bounded
 *   in-memory buffer; a timer writes it in batches (one multi-row insert,
 *   api.record_requests, about once a second). Serving never waits on it.
 * - PostgreSQL slow or down: the batch stays in the buffer and is retried;
 *   what does not fit in the buffer is dropped, counted
 *   (partner_request_log_dropped_total{reason="buffer_full"}) and logged.
 * - Bounds: at most 1,000 entries per key (a request without a valid key: per
 *   client address) and UTC minute, and of the 429s only the first. Checked
 *   here per instance (so a flood never fills the buffer) and by
 *   api.record_requests across instances; what either leaves out is counted
 *   (partner_request_log_capped_total{reason}), apart from the drops above.
 * - Never a key: key-shaped values in the path and query (and the error
 *   message) are redacted (redactKeys).
 * - 401s (no valid key) are stored without a subscriber: operators only.
 * - close() (SIGTERM) writes what is buffered.
 */
import type { Request, RequestHandler, Response } from 'express';
import { endpointOf } from '../contract/match';
import type { Pool } from '../db/pools';
import { isDatabaseUnavailable } from '../contract/errors';
import type { PartnerIdentity } from '../contract/identity';
import type { Logger } from '../log';
import { requestLogBuffered, requestLogCapped, requestLogDropped, requestLogWritten } from '../metrics';
import type { RateLimitContext } from '../ratelimit/limiters';
import { CALLS, apiQuery } from '../contract/calls';

export type RequestLogMode = 'all' | 'errors' | 'off';

/** Why the bounds left an entry out (the label of partner_request_log_capped_total). */
export type CapReason = 'minute_cap' | 'repeat_429' | 'across_instances';

export const REQUEST_LOG_MODES: readonly RequestLogMode[] = ['all', 'errors', 'off'];

export interface RequestLogEntry {
  request_id: string;
  created_at: string;
  api_key_id: string | null;
  method: string;
  path: string;
  endpoint: string;
  status: number;
  error: string | null;
  duration_ms: number;
  client_ip: string | null;
}

export interface RequestLogOptions {
  pool: Pool;
  logger: Logger;
  mode?: RequestLogMode;
  /** How often a batch is written (default 1000 ms). */
  flushEveryMs?: number;
  /** Entries kept in memory at most (default 10,000); more are dropped and counted. */
  maxBuffer?: number;
  /** Entries per insert (default 1,000). */
  batchSize?: number;
  /** The clock (tests). */
  now?: () => number;
}

export const PATH_MAX = 2048;
export const PER_KEY_MINUTE = 1000;
const REDACTED = '[REDACTED]';
/** Query parameters whose value is a credential whatever it looks like. */
const SECRET_NAMES = /^(api[_-]?key|apikey|key|token|access[_-]?token|auth|authorization|x-api-key|secret|password)$/i;
/**
 * A key ('pbk_' + 43 base64url characters) or an operator token ('pbo_' + 43), a part of one, or any
 * long base64url run (either without its prefix).
 */
const KEY_SHAPED = /pb[ko]_|[A-Za-z0-9_-]{40,}/i;
const KEY_RUN = /pb[ko]_[^\s"'`,;&/?=#]*|[A-Za-z0-9_-]{40,}/gi;

function decoded(text: string): string {
  let s = text;
  for (let i = 0; i < 3; i++) {
    let next: string;
    try {
      next = decodeURIComponent(s.replace(/\+/g, ' '));
    } catch {
      next = s.replace(/%([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    }
    if (next === s) break;
    s = next;
  }
  return s;
}

/**
 * The path and query with every key-shaped value replaced by [REDACTED]: a path segment or query
 * name/value that (raw or percent-decoded, up to three times) contains 'pbk_' or a run of 40+
 * base64url characters, and the value of credential-named parameters (api_key, token, ...).
 */
export function redactKeys(pathAndQuery: string): string {
  const q = pathAndQuery.indexOf('?');
  const path = q === -1 ? pathAndQuery : pathAndQuery.slice(0, q);
  const query = q === -1 ? undefined : pathAndQuery.slice(q + 1);
  const part = (s: string) => (KEY_SHAPED.test(s) || KEY_SHAPED.test(decoded(s)) ? REDACTED : s);
  const out = path.split('/').map(part).join('/');
  if (query === undefined) return out;
  const pairs = query.split(/([&;])/).map((pair) => {
    if (pair === '&' || pair === ';') return pair;
    const eq = pair.indexOf('=');
    if (eq === -1) return part(pair);
    const name = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    const secret = SECRET_NAMES.test(decoded(name).replace(/\[.*$/, ''));
    return `${part(name)}=${secret && value !== '' ? REDACTED : part(value)}`;
  });
  return `${out}?${pairs.join('')}`;
}

/** An error message without key-shaped runs (messages may quote a parameter). */
export function redactText(text: string): string {
  return text.replace(KEY_RUN, REDACTED);
}

// eslint-disable-next-line no-control-regex -- NUL is exactly what must be replaced
const NOT_STORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Text PostgreSQL stores: NUL and lone surrogates (refused by jsonb, and so the whole batch) become U+FFFD. */
export function storable(text: string): string {
  return text.replace(NOT_STORABLE, '\uFFFD');
}

export class RequestLog {
  readonly mode: RequestLogMode;
  private buffer: RequestLogEntry[] = [];
  private readonly timer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();
  private busy = false;
  /** Per instance: entries and 429s per key (or address) in the current minute. */
  private minute = 0;
  private perWho = new Map<string, { entries: number; rateLimited: number }>();
  private droppedSinceLog = 0;
  private lastDropLog = 0;
  /** Entries dropped since start (also in /metrics). */
  dropped = 0;
  /** Entries the bounds left out since start, by reason (also in /metrics). */
  readonly capped: Record<CapReason, number> = { minute_cap: 0, repeat_429: 0, across_instances: 0 };
  /** Entries stored since start (as api.record_requests reported). */
  written = 0;
  private readonly maxBuffer: number;
  private readonly batchSize: number;
  private readonly now: () => number;

  constructor(private readonly o: RequestLogOptions) {
    this.mode = o.mode ?? 'errors';
    this.maxBuffer = o.maxBuffer ?? 10_000;
    this.batchSize = o.batchSize ?? 1000;
    this.now = o.now ?? Date.now;
    if (this.mode !== 'off') {
      this.timer = setInterval(() => void this.flush(), o.flushEveryMs ?? 1000);
      this.timer.unref();
    }
  }

  /** Entries waiting for the next batch. */
  get pending(): number {
    return this.buffer.length;
  }

  /** The app middleware (first, after the request id): records the answer on `finish`. */
  middleware(): RequestHandler {
    return (req, res, next) => {
      if (this.mode === 'off') return next();
      const started = process.hrtime.bigint();
      res.once('finish', () => this.record(req, res, Number(process.hrtime.bigint() - started) / 1e6));
      next();
    };
  }

  /** Records an answer (the middleware's, on `finish`; the refused-key shortcut's, once written). */
  record(req: Request, res: Response, durationMs: number): void {
    if (this.mode === 'off') return;
    try {
      this.entryOf(req, res, durationMs);
    } catch (err) {
      this.o.logger.warn({ err: { message: (err as Error).message } }, 'request log: entry not recorded');
    }
  }

  private entryOf(req: Request, res: Response, durationMs: number): void {
    const status = res.statusCode;
    const partner = res.locals.partner as PartnerIdentity | undefined;
    if (!partner) {
      // Without a valid key only the guard's 401 is kept (operators only); a 405/406 before the guard is not.
      if (status !== 401 || !res.getHeader('www-authenticate')) return;
    } else if (this.mode === 'errors' && status < 400) return;
    const ctx = res.locals.rateLimit as RateLimitContext | undefined;
    const clientIp = req.ip ?? req.socket.remoteAddress ?? null;
    const who = partner ? partner.keyId : `ip:${clientIp ?? ''}`;
    const refused = this.admit(who, status === 429);
    if (refused) return this.cap(refused, 1);
    const message = res.locals.errorMessage as string | undefined;
    this.add({
      request_id: storable(String(res.locals.requestId ?? '')),
      created_at: new Date(this.now()).toISOString(),
      api_key_id: partner?.keyId ?? null,
      method: req.method,
      path: storable(redactKeys(req.originalUrl)).slice(0, PATH_MAX),
      endpoint: ctx?.endpoint ?? endpointOf(req),
      status,
      error: message === undefined ? null : storable(redactText(message)).slice(0, 1000),
      duration_ms: Math.round(durationMs * 1000) / 1000,
      client_ip: clientIp,
    });
  }

  /** This instance's share of the bounds: 1,000 entries a key and minute, one 429. Why not, or undefined: kept. */
  private admit(who: string, rateLimited: boolean): CapReason | undefined {
    const minute = Math.floor(this.now() / 60_000);
    if (minute !== this.minute || this.perWho.size > 100_000) {
      this.minute = minute;
      this.perWho = new Map();
    }
    let c = this.perWho.get(who);
    if (!c) this.perWho.set(who, (c = { entries: 0, rateLimited: 0 }));
    if (rateLimited && c.rateLimited++ > 0) return 'repeat_429';
    if (c.entries >= PER_KEY_MINUTE) return 'minute_cap';
    c.entries++;
    return undefined;
  }

  private cap(reason: CapReason, n: number): void {
    this.capped[reason] += n;
    requestLogCapped.inc({ reason }, n);
  }

  /** Buffers an entry (dropped and counted when the buffer is full). */
  add(entry: RequestLogEntry): void {
    if (this.buffer.length >= this.maxBuffer) return this.drop(1, 'buffer_full');
    this.buffer.push(entry);
    requestLogBuffered.set(this.buffer.length);
  }

  private drop(n: number, reason: 'buffer_full' | 'write_error'): void {
    this.dropped += n;
    this.droppedSinceLog += n;
    requestLogDropped.inc({ reason }, n);
    const now = Date.now();
    if (now - this.lastDropLog >= 10_000) {
      this.o.logger.warn(
        { dropped: this.droppedSinceLog, reason, buffered: this.buffer.length },
        'request log: entries dropped (PostgreSQL slow or down)',
      );
      this.lastDropLog = now;
      this.droppedSinceLog = 0;
    }
  }

  /** Writes the buffer in batches (one write at a time; a failed batch stays for the next). Resolves when done. */
  flush(): Promise<void> {
    if (this.busy) return this.writing;
    this.busy = true;
    this.writing = this.drain().finally(() => {
      this.busy = false;
    });
    return this.writing;
  }

  private async drain(): Promise<void> {
    while (this.buffer.length) {
      const batch = this.buffer.slice(0, this.batchSize);
      try {
        this.written += await this.write(batch);
        this.buffer.splice(0, batch.length);
      } catch (err) {
        if (isDatabaseUnavailable(err)) {
          this.o.logger.warn(
            { err: { message: (err as Error).message }, buffered: this.buffer.length },
            'request log: write failed; will retry',
          );
        } else {
          this.buffer.splice(0, batch.length);
          this.drop(batch.length, 'write_error');
          this.o.logger.error({ err: { message: (err as Error).message } }, 'request log: batch refused');
        }
        return;
      } finally {
        requestLogBuffered.set(this.buffer.length);
      }
    }
  }

  private async write(batch: RequestLogEntry[]): Promise<number> {
    const insert = async () => {
      const rows = await apiQuery(this.o.pool, CALLS.recordRequests, { batch: JSON.stringify(batch) });
      return (rows[0]?.n as number | undefined) ?? 0;
    };
    let stored: number;
    try {
      stored = await insert();
    } catch (err) {
      // 23514: no partition for a row (days without maintenance): create them, once.
      if ((err as { code?: string }).code !== '23514') throw err;
      await apiQuery(this.o.pool, CALLS.requestLogPartitions, {});
      stored = await insert();
    }
    requestLogWritten.inc(stored);
    if (stored < batch.length) this.cap('across_instances', batch.length - stored);
    return stored;
  }

  /** Stops the timer and writes what is buffered (SIGTERM). */
  async close(): Promise<{ requestLogWritten: number; requestLogLeft: number }> {
    if (this.timer) clearInterval(this.timer);
    const before = this.written;
    await this.writing;
    await this.flush();
    return { requestLogWritten: this.written - before, requestLogLeft: this.buffer.length };
  }
}
