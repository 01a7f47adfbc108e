/**
 * Partner reads on PostgreSQL streaming replicas (DATABASE_READ_URLS).
 *
 * A pg.Pool look-alike for the partner routes: `query()` runs on the replicas
 * in turn (round robin). A replica that cannot serve (connection refused or
 * lost, shutting down, in recovery conflict, past the client-side query
 * deadline, or refusing a write) is skipped and retried after a backoff
 * (250 ms doubling to 30 s, reset by its first success), and the query is
 * retried at once on the next replica, then on the primary. Replica errors
 * therefore never reach partners: an error the primary would give as well
 * (bad input PT400, statement timeout 57014) is passed on unchanged.
 *
 * Credentials, usage, alerts, webhooks and LISTEN never come here: they use
 * the primary pool (`primary`), so a revocation is never undone by replica lag.
 */
import pg from 'pg';
import type { Logger } from '../log';
import { trackPool, untrackPool } from '../metrics';
import { guardPool, type PgBreakerOptions } from './pg-breaker';
import { createPool, type PoolOptions } from './pools';

export interface ReadinessLike {
  name: string;
  /** A replica that fails does not make the instance unready (the primary serves). */
  optional?: boolean;
  check(): Promise<unknown>;
}

interface Replica {
  name: string;
  pool: pg.Pool;
  downUntil: number;
  backoffMs: number;
}

const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 30_000;

/** SQLSTATEs / errors after which the same query is retried elsewhere. */
export function replicaCannotServe(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  if (!e) return false;
  const code = e.code ?? '';
  const network = ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH'];
  if ([...network, 'EPGFROZEN'].includes(code)) return true; // EPGFROZEN: its breaker is open (pg-breaker.ts)
  // 08: connection exception; 57P01-03: shutdown / cannot connect now; 53300: too many connections;
  // 40001: canceling statement due to conflict with recovery; 25006: read-only transaction (a function that writes);
  // 3D000: database missing on that server; 28xxx: authentication.
  if (/^(08|28)/.test(code) || ['57P01', '57P02', '57P03', '53300', '40001', '25006', '3D000'].includes(code))
    return true;
  return /Query read timeout|timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED/i.test(
    e.message ?? '',
  );
}

function describe(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return 'replica';
  }
}

export class ReadRoutingPool extends pg.Pool {
  private readonly replicas: Replica[];
  private next = 0;

  constructor(
    readonly primary: pg.Pool,
    readUrls: string[],
    options: PoolOptions,
    private readonly logger: Logger,
    breaker: Pick<PgBreakerOptions, 'silenceMs' | 'probeMs'> = {},
  ) {
    super({ max: 1 }); // never used: every call is routed
    this.replicas = readUrls.map((url, i) => {
      const name = `replica:${i + 1}`;
      const pool = createPool(url, { ...options, applicationName: `${options.applicationName}-read` });
      trackPool(name, pool);
      // A frozen replica: its waiting queries fail over to the next one or the primary within ~2 s.
      guardPool(pool, { probeUrl: url, name, logger, ...breaker });
      return { name: `${name} ${describe(url)}`, pool, downUntil: 0, backoffMs: MIN_BACKOFF_MS };
    });
  }

  /** Replicas to try now, starting with the next in turn. */
  private candidates(): Replica[] {
    const now = Date.now();
    const n = this.replicas.length;
    if (!n) return [];
    const start = this.next++ % n;
    const out: Replica[] = [];
    for (let i = 0; i < n; i++) {
      const r = this.replicas[(start + i) % n]!;
      if (r.downUntil <= now) out.push(r);
    }
    return out;
  }

  private failed(r: Replica, err: unknown): void {
    r.downUntil = Date.now() + r.backoffMs;
    this.logger.warn(
      {
        replica: r.name,
        retryInMs: r.backoffMs,
        err: { message: (err as Error).message, code: (err as { code?: string }).code },
      },
      'read replica skipped; trying the next one or the primary',
    );
    r.backoffMs = Math.min(r.backoffMs * 2, MAX_BACKOFF_MS);
  }

  private succeeded(r: Replica): void {
    if (r.backoffMs !== MIN_BACKOFF_MS) this.logger.info({ replica: r.name }, 'read replica serving again');
    r.backoffMs = MIN_BACKOFF_MS;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override query(...args: any[]): any {
    if (typeof args[args.length - 1] === 'function' || typeof args[0] !== 'string') {
      // callback or config-object forms: not used by the routes; served by the primary
      return (this.primary.query as (...a: unknown[]) => unknown)(...args);
    }
    return this.routedQuery(args[0] as string, args[1] as unknown[] | undefined);
  }

  private async routedQuery(text: string, values?: unknown[]): Promise<pg.QueryResult> {
    for (const r of this.candidates()) {
      try {
        const result = await r.pool.query(text, values);
        this.succeeded(r);
        return result;
      } catch (err) {
        if (!replicaCannotServe(err)) throw err;
        this.failed(r, err);
      }
    }
    return this.primary.query(text, values);
  }

  /** A client for a multi-statement read (e.g. a cursor): a replica when one connects, else the primary. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override connect(...args: any[]): any {
    if (typeof args[0] === 'function') return (this.primary.connect as (...a: unknown[]) => unknown)(...args);
    return (async () => {
      for (const r of this.candidates()) {
        try {
          const client = await r.pool.connect();
          this.succeeded(r);
          return client;
        } catch (err) {
          this.failed(r, err);
        }
      }
      return this.primary.connect();
    })();
  }

  /** /readyz: one optional check per replica (a failing replica is reported; the primary serves). */
  checks(): ReadinessLike[] {
    return this.replicas.map((r) => ({
      name: r.name.split(' ')[0]!,
      optional: true,
      check: () => r.pool.query('select pg_is_in_recovery() as standby'),
    }));
  }

  get replicaCount(): number {
    return this.replicas.length;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  override async end(): Promise<any> {
    await Promise.all(
      this.replicas.map((r) => {
        untrackPool(r.name.split(' ')[0]!);
        return r.pool.end().catch(() => undefined);
      }),
    );
    await super.end().catch(() => undefined);
  }
}

/** The partner routes' pool: the primary itself without read URLs, else a routing pool. */
export function createReadPool(
  primary: pg.Pool,
  readUrls: string[],
  options: PoolOptions,
  logger: Logger,
  breaker: Pick<PgBreakerOptions, 'silenceMs' | 'probeMs'> = {},
): ReadRoutingPool | pg.Pool {
  return readUrls.length ? new ReadRoutingPool(primary, readUrls, options, logger, breaker) : primary;
}
