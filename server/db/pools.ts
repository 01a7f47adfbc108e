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
}

export function createPool(connectionString: string, options: PoolOptions): pg.Pool {
  const settings = [
    options.role ? `-c role=${options.role}` : '',
    options.statementTimeoutMs ? `-c statement_timeout=${options.statementTimeoutMs}` : '',
  ].filter(Boolean).join(' ');
  const pool = new pg.Pool({
    connectionString,
    max: options.max,
    application_name: options.applicationName,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30000,
    ...(settings ? { options: settings } : {}),
  });
  // An idle client's error (the server went away) must not crash the process;
  // the next checkout reconnects.
  pool.on('error', () => undefined);
  return pool;
}
