import path from 'node:path';

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
  pgPoolMax: number;
  /** Partner queries running longer are cancelled (503): one pathological request cannot hold a pool connection. */
  pgStatementTimeoutMs: number;
  /** Seed demo data when the database has no bars (default: only for the embedded server). */
  seedDemo: boolean;
  demoBars: number;
  logLevel: string;
  embedded: { dataDir: string; port: number; startTimeoutMs: number };
}

export const projectRoot = path.resolve(__dirname, __dirname.includes(`${path.sep}dist${path.sep}`) ? '../..' : '..');

function int(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return n;
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
    pgPoolMax: int('PG_POOL_MAX', 10, env),
    pgStatementTimeoutMs: int('PG_STATEMENT_TIMEOUT_MS', 10000, env),
    seedDemo: bool('SEED_DEMO_DATA', databaseUrl === undefined, env),
    demoBars: int('DEMO_BARS', 5000, env),
    logLevel: env.LOG_LEVEL || (nodeEnv === 'test' ? 'silent' : 'info'),
    embedded: {
      dataDir: path.resolve(projectRoot, env.EMBEDDED_PG_DIR || '.data/postgres'),
      port: int('EMBEDDED_PG_PORT', 54329, env),
      startTimeoutMs: int('EMBEDDED_PG_START_TIMEOUT_MS', 30000, env),
    },
  };
}
