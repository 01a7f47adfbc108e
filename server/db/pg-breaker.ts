/**
 * A circuit breaker for a frozen PostgreSQL (as Envoy's outlier detection):
 * a server that accepts connections but answers nothing (SIGSTOP, a hung
 * host, a network black hole) would otherwise hold every request until the
 * client-side deadline (PG_QUERY_DEADLINE_MS, 11 s).
 *
 * - Opens when queries are waiting and the server has answered nothing (no
 *   result, no error of its own) for `silenceMs` (2 s), and a probe on a new
 *   connection (`select 1`) gets no answer either (a single long query on an
 *   idle server does not open it).
 * - Open: every query waiting on this pool is answered at once with
 *   PgUnavailableError (503 + Retry-After; a replica is skipped), and new ones
 *   too, without touching the database; their connections are left to the
 *   deadline, which discards them.
 * - A probe runs every `probeMs` (1 s); the first answer (a probe's, or a late
 *   answer to a query that was waiting) closes it.
 */
import { dbBreakerOpen } from '../metrics';
import pg from 'pg';
import type { Logger } from '../log';

export class PgUnavailableError extends Error {
  readonly code = 'EPGFROZEN';
  constructor(name: string) {
    super(`database ${name} is not answering (circuit open)`);
  }
}

export interface PgBreakerOptions {
  /** Connection string the probes use (a new connection each: the pool's may all be stuck). */
  probeUrl: string;
  name: string;
  logger: Logger;
  silenceMs?: number;
  probeMs?: number;
  /** How long a probe may take before it counts as "no answer" (default 600 ms). */
  probeTimeoutMs?: number;
}

interface Waiting {
  started: number;
  fail: (err: Error) => void;
}

/** True when PostgreSQL itself answered (an error with a SQLSTATE), as opposed to a timeout or a dead socket. */
function isServerAnswer(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^08/.test(code);
}

export class PgBreaker {
  private readonly waiting = new Set<Waiting>();
  private lastAnswerAt = Date.now();
  private openSince: number | undefined;
  private confirming = false;
  private readonly watch: NodeJS.Timeout;
  private probeTimer: NodeJS.Timeout | undefined;
  private readonly silenceMs: number;
  private readonly probeMs: number;
  private readonly probeTimeoutMs: number;

  constructor(private readonly o: PgBreakerOptions) {
    this.silenceMs = o.silenceMs ?? 2000;
    this.probeMs = o.probeMs ?? 1000;
    this.probeTimeoutMs = o.probeTimeoutMs ?? 600;
    dbBreakerOpen.set({ database: o.name }, 0);
    this.watch = setInterval(() => this.check(), Math.max(20, Math.floor(this.silenceMs / 20)));
    this.watch.unref();
  }

  get isOpen(): boolean {
    return this.openSince !== undefined;
  }

  /** Runs a database call under the breaker; `late` disposes of a result that arrives after its caller got the 503. */
  run<T>(call: () => Promise<T>, late?: (value: T) => void): Promise<T> {
    if (this.isOpen) return Promise.reject(new PgUnavailableError(this.o.name));
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const entry: Waiting = {
        started: Date.now(),
        fail: (err) => {
          settled = true;
          this.waiting.delete(entry);
          reject(err);
        },
      };
      this.waiting.add(entry);
      call().then(
        (value) => {
          this.answered();
          this.waiting.delete(entry);
          if (settled) return late?.(value);
          settled = true;
          resolve(value);
        },
        (err: unknown) => {
          if (isServerAnswer(err)) this.answered();
          this.waiting.delete(entry);
          if (settled) return;
          settled = true;
          reject(err as Error);
        },
      );
    });
  }

  private answered(): void {
    this.lastAnswerAt = Date.now();
    if (this.isOpen) this.close('an answer arrived');
  }

  private check(): void {
    if (this.isOpen || this.confirming || this.waiting.size === 0) return;
    const now = Date.now();
    let oldest = now;
    for (const w of this.waiting) oldest = Math.min(oldest, w.started);
    if (now - Math.max(this.lastAnswerAt, oldest) < this.silenceMs) return;
    this.confirming = true;
    void this.probe().then((ok) => {
      this.confirming = false;
      if (ok) this.answered();
      else if (this.waiting.size > 0 && Date.now() - this.lastAnswerAt >= this.silenceMs) this.open();
    });
  }

  private open(): void {
    this.openSince = Date.now();
    dbBreakerOpen.set({ database: this.o.name }, 1);
    this.o.logger.error(
      { database: this.o.name, waiting: this.waiting.size, silentForMs: Date.now() - this.lastAnswerAt },
      'database not answering: circuit open, requests answered 503 until a probe answers',
    );
    const err = new PgUnavailableError(this.o.name);
    for (const w of [...this.waiting]) w.fail(err);
    this.probeTimer = setInterval(() => {
      void this.probe().then((ok) => ok && this.answered());
    }, this.probeMs);
    this.probeTimer.unref();
  }

  private close(reason: string): void {
    const openFor = Date.now() - (this.openSince ?? Date.now());
    this.openSince = undefined;
    dbBreakerOpen.set({ database: this.o.name }, 0);
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
    this.o.logger.warn(
      { database: this.o.name, openForMs: openFor, reason },
      'database answering again: circuit closed',
    );
  }

  /** `select 1` on a new connection within probeTimeoutMs. */
  private async probe(): Promise<boolean> {
    const client = new pg.Client({
      connectionString: this.o.probeUrl,
      connectionTimeoutMillis: this.probeTimeoutMs,
      query_timeout: this.probeTimeoutMs,
      application_name: 'partner-api-probe',
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('select 1');
      return true;
    } catch (err) {
      return isServerAnswer(err); // e.g. too many connections: it answers, it is not frozen
    } finally {
      const stream = (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
      stream?.destroy(); // never wait for a frozen server to acknowledge the close
    }
  }

  stop(): void {
    clearInterval(this.watch);
    clearInterval(this.probeTimer);
  }
}

/** Puts a pool's query() and connect() under a breaker (in place: every user of the pool gets it). */
export function guardPool(pool: pg.Pool, options: PgBreakerOptions): PgBreaker {
  const breaker = new PgBreaker(options);
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => Promise<pg.PoolClient>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  (pool as any).query = (...args: unknown[]) => {
    if (typeof args[args.length - 1] === 'function') return query(...args); // callback form: not used here
    return breaker.run(() => query(...args));
  };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  (pool as any).connect = (...args: unknown[]) => {
    if (typeof args[0] === 'function') return connect(...args);
    return breaker.run(
      () => connect(),
      (client) => client.release(), // connected after its caller was answered: back to the pool
    );
  };
  const end = pool.end.bind(pool);
  pool.end = (() => {
    breaker.stop();
    return end();
  }) as typeof pool.end;
  return breaker;
}
