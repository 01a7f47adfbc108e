import pg from 'pg';

// int8 ids and counts arrive as JSON built by the database; anything else
// numeric that reaches JavaScript is parsed, not left as a string.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Pool = pg.Pool;

export interface PoolOptions {
  max: number;
  /** Run every query as this role (SET at connection start, no extra round trip). */
  role?: string;
  applicationName: string;
  statementTimeoutMs?: number;
  /**
   * Client-side deadline (pg's query_timeout): a query with no answer by then is
   * abandoned and its connection discarded, so a frozen server cannot hold a
   * request (answered 503 + Retry-After). Set slightly above statementTimeoutMs,
   * which the server enforces itself while it runs.
   */
  queryTimeoutMs?: number;
}

export function createPool(connectionString: string, options: PoolOptions): pg.Pool {
  const settings = [
    options.role ? `-c role=${options.role}` : '',
    options.statementTimeoutMs ? `-c statement_timeout=${options.statementTimeoutMs}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  const pool = new pg.Pool({
    connectionString,
    max: options.max,
    application_name: options.applicationName,
    // Waiting for a connection (a new one, or a free one from the pool) is bounded by the deadline too.
    connectionTimeoutMillis: Math.min(5000, options.queryTimeoutMs || 5000),
    idleTimeoutMillis: 30000,
    ...(options.queryTimeoutMs ? { query_timeout: options.queryTimeoutMs } : {}),
    ...(settings ? { options: settings } : {}),
  });
  // An idle client's error (the server went away) must not crash the process;
  // the next checkout reconnects.
  pool.on('error', () => undefined);
  return pool;
}
