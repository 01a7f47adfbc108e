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
 *
 * Replay lag (DATABASE_READ_MAX_LAG_MS, default 5000): a replica may lack the
 * primary's recent changes (replay paused, a long conflicting query, a slow
 * disk, its WAL receiver cut off). Every `intervalMs` (1 s) the primary's WAL
 * position (`pg_current_wal_lsn()`) is sampled, then each replica's replay
 * position: a replica that has replayed a sample's position has every change
 * committed before that sample was taken, so it is "fresh as of" the latest
 * such sample. A replica whose freshness is older than the bound at the time
 * of a query is skipped (the next replica or the primary serves) until a
 * later measurement finds it caught up. The bound holds between measurements
 * too (freshness only ages), and an idle primary (no writes, an old
 * pg_last_xact_replay_timestamp) does not count as lag: the positions are
 * equal. Two small queries per interval, none per request. When the primary
 * cannot be sampled, the replica's own view serves: no lag when everything it
 * received is replayed, else the age of its last replayed transaction. A
 * server that is not in recovery (a promoted replica, or the primary itself)
 * counts as current.
 */
import pg from 'pg';
import type { Logger } from '../log';
import { dbReplicaLag, trackPool, untrackPool } from '../metrics';
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
  /** replica:<n>, the label of its metrics. */
  label: string;
  pool: pg.Pool;
  downUntil: number;
  backoffMs: number;
  /** Every change committed on the primary before this time (ms) has been replayed (0: not measured yet). */
  freshAsOf: number;
  /** Lag at the last measurement (ms); undefined before the first. */
  lagMs: number | undefined;
  /** Over the bound at the last measurement (logged once per change). */
  lagging: boolean;
  measuring: boolean;
}

export interface ReplicaLagOptions {
  /** A replica whose replay lag exceeds this (ms) is skipped until it catches up (default 5000). */
  maxLagMs?: number;
  /** How often the lag is measured (default 1000 ms, at most a quarter of maxLagMs). */
  intervalMs?: number;
}

/** A pg_lsn ('16/B374D848') as a number of bytes. */
export function parseLsn(lsn: string): bigint {
  const [hi, lo] = lsn.split('/');
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
}

const REPLICA_POSITION_SQL = `select pg_is_in_recovery() as standby, pg_last_wal_replay_lsn()::text as replayed,
  coalesce(pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn(), false) as all_replayed,
  extract(epoch from now() - pg_last_xact_replay_timestamp()) * 1000 as since_replay_ms`;

const MIN_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 30_000;

/** A plain query config (text, values, name), not a Submittable (which has `submit`). */
function isQueryConfig(x: unknown): x is pg.QueryConfig {
  return typeof x === 'object' && x !== null && typeof (x as { text?: unknown }).text === 'string' && !('submit' in x);
}

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
  readonly maxLagMs: number;
  private readonly lagIntervalMs: number;
  /** The primary's WAL position over time (oldest first), kept while a replica may still need it. */
  private samples: { at: number; lsn: bigint }[] = [];
  private lagTimer: NodeJS.Timeout | undefined;
  private lagStopped = false;

  constructor(
    readonly primary: pg.Pool,
    readUrls: string[],
    options: PoolOptions,
    private readonly logger: Logger,
    breaker: Pick<PgBreakerOptions, 'silenceMs' | 'probeMs'> = {},
    lag: ReplicaLagOptions = {},
  ) {
    super({ max: 1 }); // never used: every call is routed
    this.maxLagMs = lag.maxLagMs ?? 5000;
    this.lagIntervalMs = lag.intervalMs ?? Math.max(50, Math.min(1000, Math.floor(this.maxLagMs / 4)));
    this.replicas = readUrls.map((url, i) => {
      const name = `replica:${i + 1}`;
      const pool = createPool(url, { ...options, applicationName: `${options.applicationName}-read` });
      trackPool(name, pool);
      // A frozen replica: its waiting queries fail over to the next one or the primary within ~2 s.
      guardPool(pool, { probeUrl: url, name, logger, ...breaker });
      return {
        name: `${name} ${describe(url)}`,
        label: name,
        pool,
        downUntil: 0,
        backoffMs: MIN_BACKOFF_MS,
        freshAsOf: 0,
        lagMs: undefined,
        lagging: false,
        measuring: false,
      };
    });
    if (this.replicas.length) void this.measureLag();
  }

  /**
   * One tick: samples the primary's position, starts a measurement of each replica (one at a
   * time per replica: a frozen one does not hold the others back) and schedules the next tick.
   */
  private async measureLag(): Promise<void> {
    const at = Date.now();
    let sampled = false;
    let timer: NodeJS.Timeout | undefined;
    try {
      const { rows } = await Promise.race([
        this.primary.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn'),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('no answer')), this.lagIntervalMs);
        }),
      ]);
      this.samples.push({ at, lsn: parseLsn(rows[0]!.lsn) });
      sampled = true;
    } catch {
      /* the primary is down or frozen: the replicas' own view serves (measureReplica) */
    } finally {
      clearTimeout(timer);
    }
    if (this.lagStopped) return;
    for (const r of this.replicas) {
      if (!r.measuring) void this.measureReplica(r, sampled ? at : undefined).then(() => this.judgeLag(r, Date.now()));
      else this.judgeLag(r, Date.now()); // still waiting for its answer: its lag grows
    }
    // Samples older than the freshest one every replica has replayed are never needed again.
    const oldestNeeded = Math.min(...this.replicas.map((r) => r.freshAsOf));
    let drop = 0;
    while (drop < this.samples.length - 1 && this.samples[drop + 1]!.at <= oldestNeeded) drop++;
    if (drop) this.samples = this.samples.slice(drop);
    if (this.samples.length > 10_000) this.samples = this.samples.slice(-10_000);
    this.lagTimer = setTimeout(() => void this.measureLag(), Math.max(0, this.lagIntervalMs - (Date.now() - at)));
    this.lagTimer.unref();
  }

  private async measureReplica(r: Replica, sampledAt: number | undefined): Promise<void> {
    r.measuring = true;
    const started = Date.now();
    try {
      const { rows } = await r.pool.query<{
        standby: boolean;
        replayed: string | null;
        all_replayed: boolean;
        since_replay_ms: number | null;
      }>(REPLICA_POSITION_SQL);
      const row = rows[0]!;
      if (!row.standby) {
        r.freshAsOf = Math.max(r.freshAsOf, started); // not a replica (promoted, or the primary itself): current
      } else if (sampledAt !== undefined && row.replayed) {
        const replayed = parseLsn(row.replayed);
        for (let i = this.samples.length - 1; i >= 0; i--) {
          const s = this.samples[i]!;
          if (s.lsn <= replayed) {
            r.freshAsOf = Math.max(r.freshAsOf, s.at);
            break;
          }
        }
      } else if (row.all_replayed) {
        r.freshAsOf = Math.max(r.freshAsOf, started);
      } else if (row.since_replay_ms !== null) {
        r.freshAsOf = Math.max(r.freshAsOf, started - Number(row.since_replay_ms));
      }
    } catch {
      /* unreachable or frozen: its freshness ages (and queries skip it through the backoff or the breaker) */
    } finally {
      r.measuring = false;
    }
  }

  /** Updates the gauge and logs a replica crossing the bound either way. */
  private judgeLag(r: Replica, now: number): void {
    if (this.lagStopped) return;
    r.lagMs = r.freshAsOf ? Math.max(0, now - r.freshAsOf) : undefined;
    if (r.lagMs !== undefined) dbReplicaLag.set({ replica: r.label }, r.lagMs / 1000);
    if (r.lagMs === undefined) return; // not measured yet (skipped until it is)
    const lagging = r.lagMs > this.maxLagMs;
    if (lagging && !r.lagging)
      this.logger.warn(
        { replica: r.name, lagMs: r.lagMs, maxLagMs: this.maxLagMs },
        'read replica lagging; skipped until it catches up',
      );
    else if (!lagging && r.lagging)
      this.logger.info(
        { replica: r.name, lagMs: r.lagMs, maxLagMs: this.maxLagMs },
        'read replica caught up; serving again',
      );
    r.lagging = lagging;
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
      // Skipped while down (backoff), or while its data may be older than the lag bound.
      if (r.downUntil <= now && now - r.freshAsOf <= this.maxLagMs) out.push(r);
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
    if (typeof args[args.length - 1] === 'function' || !(typeof args[0] === 'string' || isQueryConfig(args[0]))) {
      // the callback form (and a Submittable such as a cursor): not used by the routes; served by the primary
      return (this.primary.query as (...a: unknown[]) => unknown)(...args);
    }
    // the text with its values, or a config ({ name, text, values }: the routes' prepared statements)
    const query: pg.QueryConfig =
      typeof args[0] === 'string' ? { text: args[0], values: args[1] as unknown[] } : args[0];
    return this.routedQuery(query);
  }

  private async routedQuery(query: pg.QueryConfig): Promise<pg.QueryResult> {
    for (const r of this.candidates()) {
      try {
        const result = await r.pool.query(query);
        this.succeeded(r);
        return result;
      } catch (err) {
        if (!replicaCannotServe(err)) throw err;
        this.failed(r, err);
      }
    }
    return this.primary.query(query);
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
    this.lagStopped = true;
    clearTimeout(this.lagTimer);
    await Promise.all(
      this.replicas.map((r) => {
        untrackPool(r.label);
        dbReplicaLag.remove({ replica: r.label });
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
  lag: ReplicaLagOptions = {},
): ReadRoutingPool | pg.Pool {
  return readUrls.length ? new ReadRoutingPool(primary, readUrls, options, logger, breaker, lag) : primary;
}
