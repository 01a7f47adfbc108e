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
  /** The HTTP phase runs each endpoint also with `Accept-Encoding: gzip, br` (as partners send it). */
  compressed: boolean;
  /** The 429-flood phase: one key flooding at `floodRate` req/s while other keys are measured. */
  flood: boolean;
  floodRate: number;
  /** --flood-only: the flood phase and nothing else. */
  floodOnly: boolean;
}

export const usage = `usage: npm run bench -- [--bars N] [--duration S] [--connections N] [--rate R] [--db-samples N]
                       [--only bar,search,...] [--explain] [--explain-only] [--explain-dir D] [--no-db] [--no-http] [--no-ratio] [--seed S]
                       [--runs N] [--no-warm] [--no-pgbench] [--no-compressed] [--no-flood] [--flood-only] [--flood-rate R]
env: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bars_bench), BENCH_REDIS_URL (default redis://127.0.0.1:6379),
     PG_POOL_MAX (both servers' pools, default 10), BENCH_SERVER_NODE_OPTIONS (NODE_OPTIONS of the full server),
     BENCH_SERVER_NODE_ARGS (node flags of the full server, e.g. --cpu-prof --cpu-prof-dir=D),
     BENCH_NAMED=1 (bare server uses pg named statements)`;

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
    },
    strict: true,
  });
  const explainOnly = values['explain-only'] ?? false;
  const floodOnly = values['flood-only'] ?? false;
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
    explain: !floodOnly && (explainOnly || (values.explain ?? false)),
    db: !floodOnly && !explainOnly && !values['no-db'],
    http: !floodOnly && !explainOnly && !values['no-http'],
    ratio: !floodOnly && !explainOnly && !values['no-ratio'],
    explainDir: values['explain-dir'] ?? 'docs/explain',
    seed: positive('seed', values.seed, 1),
    runs: Math.round(positive('runs', values.runs, 3)),
    warm: !values['no-warm'],
    pgbench: !floodOnly && !explainOnly && !values['no-db'] && !values['no-pgbench'],
    compressed: !values['no-compressed'],
    flood: floodOnly || (!explainOnly && !values['no-flood']),
    floodRate: positive('flood-rate', values['flood-rate'], 10_000),
    floodOnly,
  };
}
