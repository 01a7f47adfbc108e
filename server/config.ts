import os from 'node:os';
import path from 'node:path';
import { parseTestClock } from './clock';
import { emailConfig, type EmailConfig } from './email/settings';

/** Everything the process reads from its environment, parsed once. */
export interface Config {
  env: 'production' | 'development' | 'test';
  host: string;
  port: number;
  /** TLS_CERT_FILE + TLS_KEY_FILE (PEM): the partner listener speaks HTTPS itself. */
  tls: { certFile: string; keyFile: string } | undefined;
  /** express 'trust proxy' (TRUST_PROXY): false, true, a hop count, or comma-separated addresses/subnets. */
  trustProxy: boolean | number | string;
  /** The operator GraphQL listener (loopback unless ADMIN_HOST says otherwise). */
  adminHost: string;
  adminPort: number;
  /** Unset: the embedded PostgreSQL under embedded.dataDir is used. */
  databaseUrl: string | undefined;
  /** Unset: rate limits and caches are in-process only. */
  redisUrl: string | undefined;
  /** REDIS_CLUSTER_NODES (host:port,...): a Redis Cluster instead of REDIS_URL. */
  redisClusterNodes: string[];
  /** Per-request Redis budget and circuit-breaker probe interval (REDIS_BUDGET_MS, REDIS_PROBE_MS). */
  redisBudgetMs: number;
  redisProbeMs: number;
  /** DATABASE_READ_URLS: streaming replicas for partner endpoint queries (empty: the primary serves them). */
  databaseReadUrls: string[];
  /** DATABASE_READ_MAX_LAG_MS (default 5000): a replica whose replay lag exceeds it is skipped until it catches up. */
  databaseReadMaxLagMs: number;
  /** Client-side query deadline (PG_QUERY_DEADLINE_MS, default PG_STATEMENT_TIMEOUT_MS + 1000): a frozen server → 503. */
  pgQueryDeadlineMs: number;
  pgPoolMax: number;
  /** The partner calls as named prepared statements (PG_PREPARED_STATEMENTS, default on; db/prepared-statements.ts). */
  pgPreparedStatements: boolean;
  /** Partner queries running longer are cancelled (503): one pathological request cannot hold a pool connection. */
  pgStatementTimeoutMs: number;
  /** Seed demo data when the database has no bars (default: only for the embedded server). */
  seedDemo: boolean;
  demoBars: number;
  logLevel: string;
  /** SIGTERM/SIGINT: in-flight answers, usage flush and pending work finish within this (then exit). */
  shutdownTimeoutMs: number;
  /** A partner socket with no traffic either way for this long is destroyed (slow readers). */
  httpIdleTimeoutMs: number;
  /** Worker processes sharing the partner port (WEB_CONCURRENCY: a number, or 'auto' = one per core). */
  webConcurrency: number;
  embedded: { dataDir: string; port: number; startTimeoutMs: number };
  /**
   * A refused key's (or blocked address's) further 429s held before they are written (http/refusal-hold.ts):
   * RATE_LIMIT_REFUSAL_HOLD_MS (default 1000, at most 60000; 0: at once) and, per process,
   * RATE_LIMIT_REFUSAL_HOLD_MAX held at once (default 1000; beyond it, written at once).
   */
  refusalHold: { ms: number; max: number };
  /** REQUEST_LOG: which answers the request log keeps (errors = 4xx/5xx, the default; all; off). */
  requestLog: 'all' | 'errors' | 'off';
  /** Usage-alert e-mails: SMTP_URL, MAIL_FROM, PUBLIC_BASE_URL, EMAIL_LINK_KEY, EMAIL_OUTBOX_DIR (server/email/settings.ts). */
  email: EmailConfig;
  /** TEST_CLOCK: the fixed instant answers are computed at (tests only; production refuses it). Unset: the system clock. */
  testClock: Date | undefined;
}

/** Refused keys' and addresses' 429s held (http/refusal-hold.ts) when RATE_LIMIT_REFUSAL_HOLD_MS and _MAX are unset. */
export const DEFAULT_REFUSAL_HOLD = { ms: 1000, max: 1000 } as const;

export const projectRoot = path.resolve(__dirname, __dirname.includes(`${path.sep}dist${path.sep}`) ? '../..' : '..');

function int(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
}

/** An integer from `min` to `max` (ms), else an error naming the variable. */
function ms(name: string, fallback: number, min: number, max: number, env: NodeJS.ProcessEnv): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new Error(`${name} must be a whole number of milliseconds from ${min} to ${max}, got "${raw}"`);
  return n;
}

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function bool(name: string, fallback: boolean, env: NodeJS.ProcessEnv): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

function tls(env: NodeJS.ProcessEnv): Config['tls'] {
  const certFile = env.TLS_CERT_FILE || undefined;
  const keyFile = env.TLS_KEY_FILE || undefined;
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) throw new Error('TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  return { certFile, keyFile };
}

function trustProxy(env: NodeJS.ProcessEnv): Config['trustProxy'] {
  const raw = env.TRUST_PROXY;
  if (raw === undefined || raw === '') return false;
  if (/^\d+$/.test(raw)) return Number(raw);
  if (/^(true|yes|on)$/i.test(raw)) return true;
  if (/^(false|no|off)$/i.test(raw)) return false;
  return raw;
}

function webConcurrency(env: NodeJS.ProcessEnv): number {
  const raw = env.WEB_CONCURRENCY;
  if (raw === undefined || raw === '') return 1;
  if (/^auto$/i.test(raw)) return Math.max(1, os.availableParallelism());
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`WEB_CONCURRENCY must be a positive integer or auto, got "${raw}"`);
  return n;
}

function requestLogMode(env: NodeJS.ProcessEnv): Config['requestLog'] {
  const raw = (env.REQUEST_LOG || 'errors').toLowerCase();
  if (raw !== 'all' && raw !== 'errors' && raw !== 'off')
    throw new Error(`REQUEST_LOG must be all, errors or off, got "${env.REQUEST_LOG}"`);
  return raw;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const nodeEnv = env.NODE_ENV === 'production' ? 'production' : env.NODE_ENV === 'test' ? 'test' : 'development';
  const databaseUrl = env.DATABASE_URL || undefined;
  return {
    env: nodeEnv,
    host: env.HOST || '0.0.0.0',
    port: int('PORT', 3000, env),
    tls: tls(env),
    trustProxy: trustProxy(env),
    adminHost: env.ADMIN_HOST || '127.0.0.1',
    adminPort: int('ADMIN_PORT', 3001, env),
    databaseUrl,
    redisUrl: env.REDIS_URL || undefined,
    redisClusterNodes: list(env.REDIS_CLUSTER_NODES),
    redisBudgetMs: int('REDIS_BUDGET_MS', 50, env) || 50,
    redisProbeMs: int('REDIS_PROBE_MS', 1000, env) || 1000,
    databaseReadUrls: list(env.DATABASE_READ_URLS),
    databaseReadMaxLagMs: ms('DATABASE_READ_MAX_LAG_MS', 5000, 100, 3_600_000, env),
    pgQueryDeadlineMs: int('PG_QUERY_DEADLINE_MS', int('PG_STATEMENT_TIMEOUT_MS', 10000, env) + 1000, env),
    pgPoolMax: int('PG_POOL_MAX', 10, env),
    pgPreparedStatements: bool('PG_PREPARED_STATEMENTS', true, env),
    pgStatementTimeoutMs: int('PG_STATEMENT_TIMEOUT_MS', 10000, env),
    seedDemo: bool('SEED_DEMO_DATA', databaseUrl === undefined, env),
    demoBars: int('DEMO_BARS', 5000, env),
    logLevel: env.LOG_LEVEL || (nodeEnv === 'test' ? 'silent' : 'info'),
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 10000, env),
    httpIdleTimeoutMs: int('HTTP_IDLE_TIMEOUT_MS', 30000, env),
    webConcurrency: webConcurrency(env),
    embedded: {
      dataDir: path.resolve(projectRoot, env.EMBEDDED_PG_DIR || '.data/postgres'),
      port: int('EMBEDDED_PG_PORT', 54329, env),
      startTimeoutMs: int('EMBEDDED_PG_START_TIMEOUT_MS', 30000, env),
    },
    refusalHold: {
      ms: ms('RATE_LIMIT_REFUSAL_HOLD_MS', DEFAULT_REFUSAL_HOLD.ms, 0, 60_000, env),
      max: int('RATE_LIMIT_REFUSAL_HOLD_MAX', DEFAULT_REFUSAL_HOLD.max, env),
    },
    requestLog: requestLogMode(env),
    email: emailConfig(env, nodeEnv === 'production', projectRoot, int('PORT', 3000, env)),
    testClock: parseTestClock(env.TEST_CLOCK),
  };
}
