/** Command line of `npm run bench -- [options]`. */
import { parseArgs } from 'node:util';

export interface BenchArgs {
  databaseUrl: string;
  redisUrl: string;
  /** Seed this many bars when the database has none. */
  bars: number;
  /** Seconds per autocannon run. */
  duration: number;
  connections: number;
  /** Constant-rate runs: requests/s; 0 = half of the measured maximum of that endpoint. */
  rate: number;
  /** Sequential SQL calls per endpoint for the database-time table. */
  dbSamples: number;
  /** Only these endpoints (names as in workload.ts). */
  only: string[] | undefined;
  /** Phases to run. */
  explain: boolean;
  db: boolean;
  http: boolean;
  ratio: boolean;
  explainDir: string;
  seed: number;
  /** Each load phase this many times: median and min–max are printed. */
  runs: number;
  /** pg_prewarm of the hot relations before measuring. */
  warm: boolean;
  /** pgbench of api.bar (with the database phase). */
  pgbench: boolean;
  /** The HTTP phase runs each endpoint also with `Accept-Encoding: gzip, br` (as partners send it), in turn. */
  compressed: boolean;
  /** The 429-flood phase: one key flooding at `floodRate` req/s while other keys are measured. */
  flood: boolean;
  floodRate: number;
  /** --flood-connections: the flood's connections (default 50; a held 429 keeps its connection a second). */
  floodConnections: number;
  /** --flood-only: the flood phase and nothing else. */
  floodOnly: boolean;
  /** --flood-address: the flood sends made-up keys (an address over the failed-auth limit), not a refused key. */
  floodAddress: boolean;
  /**
   * The 4xx-flood phase (bench/log-flood.ts, off unless asked): one key's 400s at `logFloodRate`
   * req/s for two whole UTC minutes (2–3 min), entries stored per minute, another key measured.
   */
  logFlood: boolean;
  logFloodRate: number;
  /** --log-flood-only: that phase and nothing else. */
  logFloodOnly: boolean;
  /** --log-flood-request-log: the server's REQUEST_LOG in that phase (default errors; off: the control run). */
  logFloodRequestLog: 'errors' | 'all' | 'off';
}

export const usage = `usage: npm run bench -- [--bars N] [--duration S] [--connections N] [--rate R] [--db-samples N]
                       [--only bar,search,...] [--explain] [--explain-only] [--explain-dir D] [--no-db] [--no-http] [--no-ratio] [--seed S]
                       [--runs N] [--no-warm] [--no-pgbench] [--no-compressed] [--no-flood] [--flood-only] [--flood-rate R] [--flood-connections N] [--flood-address]
                       [--log-flood] [--log-flood-only] [--log-flood-rate R] [--log-flood-request-log errors|all|off]
  --flood-address: the 429 flood comes from an address over the failed-authentication limit (made-up keys) instead
               of a key whose plan is used up
  --log-flood: a 4xx flood (one key's 400s at --log-flood-rate req/s, default 2,000) for two whole UTC minutes
               (2–3 min): the request log's entries stored per minute (at most 1,000) and another key's req/s and p99;
               --log-flood-request-log off runs the same flood without the log (what the flood alone costs)
  full vs bare (--no-ratio: without) ends with what hourly usage and the request log cost per answered
               bars/12345 in CPU, at the full server's rate and against its CPU per request (bench/usage-path-cost.ts)
env: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bars_bench), BENCH_REDIS_URL (default redis://127.0.0.1:6379),
     either through a Unix socket: postgres://postgres@%2Fvar%2Frun%2Fpostgresql/bars_bench, /run/redis/redis-server.sock,
     PG_POOL_MAX (both servers' pools, default 10), BENCH_SERVER_NODE_OPTIONS (NODE_OPTIONS of the full server),
     BENCH_SERVER_NODE_ARGS (node flags of the full server after server/node-flags.ts's, e.g. --cpu-prof --cpu-prof-dir=D;
       --allocation-site-pretenuring undoes the server's default; --trace-gc --trace-gc-nvp, then
       node dist/bench/gc-trace.js <os tmpdir>/bench-full-server.log: promoted bytes and pauses per second),
     BENCH_NAMED=1 (bare server uses pg named statements)`;

function requestLogMode(raw: string | undefined): BenchArgs['logFloodRequestLog'] {
  if (raw === undefined) return 'errors';
  if (raw === 'errors' || raw === 'all' || raw === 'off') return raw;
  throw new Error(`--log-flood-request-log must be errors, all or off (got ${raw})`);
}

function positive(name: string, raw: string | undefined, fallback: number, allowZero = false): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || (!allowZero && n === 0))
    throw new Error(`--${name} must be a positive number, got "${raw}"`);
  return n;
}

export function parseBenchArgs(argv: string[], env: NodeJS.ProcessEnv): BenchArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      bars: { type: 'string' },
      duration: { type: 'string' },
      connections: { type: 'string' },
      rate: { type: 'string' },
      'db-samples': { type: 'string' },
      only: { type: 'string' },
      explain: { type: 'boolean' },
      'explain-only': { type: 'boolean' },
      'no-db': { type: 'boolean' },
      'no-http': { type: 'boolean' },
      'no-ratio': { type: 'boolean' },
      'explain-dir': { type: 'string' },
      seed: { type: 'string' },
      runs: { type: 'string' },
      'no-warm': { type: 'boolean' },
      'no-pgbench': { type: 'boolean' },
      'no-compressed': { type: 'boolean' },
      'no-flood': { type: 'boolean' },
      'flood-only': { type: 'boolean' },
      'flood-rate': { type: 'string' },
      'flood-connections': { type: 'string' },
      'flood-address': { type: 'boolean' },
      'log-flood': { type: 'boolean' },
      'log-flood-only': { type: 'boolean' },
      'log-flood-rate': { type: 'string' },
      'log-flood-request-log': { type: 'string' },
    },
    strict: true,
  });
  const explainOnly = values['explain-only'] ?? false;
  const floodOnly = values['flood-only'] ?? false;
  const logFloodOnly = values['log-flood-only'] ?? false;
  const only = floodOnly || logFloodOnly; // one flood phase (or both) and nothing else
  return {
    databaseUrl: env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/bars_bench',
    redisUrl: env.BENCH_REDIS_URL || 'redis://127.0.0.1:6379',
    bars: positive('bars', values.bars, 1_000_000),
    duration: positive('duration', values.duration, 5),
    connections: positive('connections', values.connections, 50),
    rate: positive('rate', values.rate, 0, true),
    dbSamples: positive('db-samples', values['db-samples'], 200),
    only: values.only
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    explain: !only && (explainOnly || (values.explain ?? false)),
    db: !only && !explainOnly && !values['no-db'],
    http: !only && !explainOnly && !values['no-http'],
    ratio: !only && !explainOnly && !values['no-ratio'],
    explainDir: values['explain-dir'] ?? 'docs/explain',
    seed: positive('seed', values.seed, 1),
    runs: Math.round(positive('runs', values.runs, 3)),
    warm: !values['no-warm'],
    pgbench: !only && !explainOnly && !values['no-db'] && !values['no-pgbench'],
    compressed: !values['no-compressed'],
    flood: floodOnly || (!only && !explainOnly && !values['no-flood']),
    floodRate: positive('flood-rate', values['flood-rate'], 10_000),
    floodConnections: Math.round(positive('flood-connections', values['flood-connections'], 50)),
    floodOnly,
    floodAddress: values['flood-address'] ?? false,
    logFlood: logFloodOnly || (!only && !explainOnly && (values['log-flood'] ?? false)),
    logFloodRate: positive('log-flood-rate', values['log-flood-rate'], 2_000),
    logFloodOnly,
    logFloodRequestLog: requestLogMode(values['log-flood-request-log']),
  };
}
