/**
 * `npm start`: find (or start) the database, migrate it, seed demo data on a
 * first embedded start, then serve the partner API until SIGINT/SIGTERM.
 *
 * WEB_CONCURRENCY > 1 (or `auto`): this process becomes the primary. It owns
 * the database preparation (embedded server, migrations, demo data), the
 * operator listener (GraphQL and /metrics aggregated over the workers) and
 * forks the workers, which share the partner port (node:cluster) and each run
 * the partner app with their own pool, identity cache, change listener
 * (LISTEN) and usage recorder. A worker that dies is replaced; SIGTERM to the
 * primary drains every worker within SHUTDOWN_TIMEOUT_MS (then kills what is
 * left) and stops the database last.
 *
 * Shutdown (one process, or each worker): readiness turns 503, the listener
 * stops accepting, in-flight answers go out with Connection: close, sockets
 * still open at 60 % of SHUTDOWN_TIMEOUT_MS are destroyed, then pending usage
 * and alerts are written; whatever is still running when SHUTDOWN_TIMEOUT_MS
 * is over is abandoned and the process exits 1.
 */
import cluster, { type Worker } from 'node:cluster';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { loadConfig, type Config } from './config';
import { locateDatabase, type DatabaseLocation } from './db/database';
import { migrateDatabase } from './db/migrate';
import { createPool } from './db/pools';
import { guardPool } from './db/pg-breaker';
import { createReadPool, ReadRoutingPool } from './db/read-pool';
import { postgresCheck } from './http/health';
import { createRedisClient, redisTarget } from './redis';
import { createPartnerGuard } from './credentials/guard';
import { createPartnerApp } from './http/app';
import { createGraphqlPool } from './graphql/pool';
import { graphqlRoutes } from './graphql/endpoint';
import { RedisExportSlots } from './http/routes/export';
import { createPartnerServer } from './http/server';
import { createLogger, type Logger } from './log';
import { firstKeyHint } from './admin/hint';
import { startOperatorServer } from './operator/server';
import { trackPool } from './metrics';
import { clusterMetricsText } from './metrics-cluster';
import { startWebhookRunner } from './webhooks/runner';
import { createEmailSender } from './email/sender';
import { maintenanceCrontab, maintenanceTasks } from './maintenance/tasks';
import { startupConfigProblem } from './startup-check';

/** The demo generator only seeds an empty database: no cities, bars, categories or users. */
async function hasBarData(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{
      any: boolean;
    }>(`select exists (select 1 from private.cities) or exists (select 1 from private.bars)
      or exists (select 1 from private.categories) or exists (select 1 from private.users) as any`);
    return rows[0]?.any ?? false;
  } finally {
    await client.end();
  }
}

/** A named step of the shutdown: run last-registered first. */
interface Cleanup {
  name: string;
  run: () => Promise<unknown>;
}
const cleanups: Cleanup[] = [];
/** Set by the partner listener: drains it (first step of the shutdown). */
let drainListener: ((deadlineMs: number) => Promise<Record<string, unknown>>) | undefined;
let draining = false;

async function runCleanups(logger: Logger | undefined): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) {
    const started = Date.now();
    try {
      const result = await cleanup.run();
      logger?.info(
        { step: cleanup.name, ms: Date.now() - started, ...(isRecord(result) ? result : {}) },
        'shutdown step done',
      );
    } catch (err) {
      logger?.error({ step: cleanup.name, err }, 'shutdown step failed');
    }
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

type Role = 'single' | 'primary' | 'worker';

async function main(): Promise<void> {
  const config = loadConfig();
  const problem = cluster.isWorker ? undefined : startupConfigProblem(config);
  if (problem) fail(problem);
  const role: Role = cluster.isWorker ? 'worker' : config.webConcurrency > 1 ? 'primary' : 'single';
  const logger = createLogger(config.logLevel).child(role === 'worker' ? { worker: cluster.worker?.id } : {});
  let shuttingDown = false;
  let workers: ClusterWorkers | undefined;

  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    draining = true;
    const started = Date.now();
    logger.info({ signal, timeoutMs: config.shutdownTimeoutMs }, 'shutting down');
    // The hard deadline: whatever is still running then is abandoned.
    setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown deadline passed; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    if (drainListener) {
      const drained = await drainListener(Math.floor(config.shutdownTimeoutMs * 0.6));
      logger.info({ ms: Date.now() - started, ...drained }, 'partner listener closed');
    }
    if (workers) {
      const stopped = await workers.stop(config.shutdownTimeoutMs - (Date.now() - started) - 250);
      logger.info({ ms: Date.now() - started, ...stopped }, 'workers stopped');
    }
    await runCleanups(logger);
    logger.info({ ms: Date.now() - started }, 'shutdown complete');
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  let dbUrl: string;
  let embedded = false;
  let port = config.port;
  if (role === 'worker') {
    dbUrl = config.databaseUrl!; // the primary passes the database it prepared
  } else {
    let db: DatabaseLocation;
    try {
      db = await locateDatabase(config);
    } catch (e) {
      fail(`cannot start the embedded PostgreSQL: ${(e as Error).message}`);
    }
    dbUrl = db.url;
    embedded = db.embedded;
    cleanups.push({ name: 'database', run: () => db.stop() });
    try {
      await migrateDatabase(db.url);
    } catch (e) {
      await db.stop();
      fail(`migration failed: ${(e as Error).message}`);
    }

    if (config.seedDemo && !(await hasBarData(db.url))) {
      logger.info({ bars: config.demoBars }, 'seeding demo data (first start)');
      // Loaded only to seed: the generator's city tables hold ~100 MB a serving process never needs.
      const { seedDemoData } = await import('../db/seed/index.js');
      await seedDemoData(db.url, { bars: config.demoBars, onProgress: (m) => process.stderr.write(`${m}\n`) });
    }
  }

  if (role === 'primary') {
    workers = startWorkers(config, dbUrl, logger, () => shuttingDown);
    await workers.listening;
  } else {
    port = await servePartner(config, dbUrl, logger);
  }

  if (role !== 'worker') {
    // Operator GraphQL endpoint and /metrics: one listener per instance (ADMIN_HOST:ADMIN_PORT, loopback by default).
    const operatorGraphql = await startOperatorServer({
      databaseUrl: dbUrl,
      config,
      logger,
      ...(role === 'primary' ? { metrics: clusterMetricsText } : {}),
    }).catch(async (e: NodeJS.ErrnoException) => {
      await runCleanups(undefined);
      return fail(
        e.code === 'EADDRINUSE'
          ? `port ${config.adminPort} is already in use; set ADMIN_PORT`
          : `operator GraphQL: ${e.message}`,
      );
    });
    cleanups.push({ name: 'operator listener', run: () => operatorGraphql.close() });

    // Webhook deliveries (graphile-worker queue, server/webhooks): one runner per instance.
    let webhookRunner;
    const email = createEmailSender(config.email, logger); // usage-alert e-mails: a task of the same runner
    cleanups.push({ name: 'e-mail transport', run: async () => email.close() });
    try {
      webhookRunner = await startWebhookRunner({
        databaseUrl: dbUrl,
        logger,
        tasks: (pool) => ({ ...email.tasks(pool), ...maintenanceTasks(pool) }),
        crontab: maintenanceCrontab,
      });
    } catch (e) {
      await runCleanups(undefined);
      return fail(`webhooks: ${(e as Error).message}`);
    }
    cleanups.push({ name: 'webhook runner', run: () => webhookRunner.stop() });
    logger.info({ url: `${operatorGraphql.url}/graphql` }, 'operator GraphQL listening');

    logger.info(
      { port, embeddedDatabase: embedded, workers: role === 'primary' ? config.webConcurrency : 1 },
      'partner API listening',
    );
    if (embedded) {
      const base = `${config.tls ? 'https' : 'http'}://localhost:${config.port}`;
      process.stderr.write(`\nPartner API on ${base}/api/v1/partner (embedded PostgreSQL, demo data)\n`);
      process.stderr.write(`${firstKeyHint(base)}\n`);
    }
  }
}

/** The partner pool, guard, app and listener of this process. */
async function servePartner(config: Config, dbUrl: string, logger: Logger): Promise<number> {
  const pool = createPool(dbUrl, {
    max: config.pgPoolMax,
    role: 'bar_partner',
    applicationName: 'partner-api',
    statementTimeoutMs: config.pgStatementTimeoutMs,
    queryTimeoutMs: config.pgQueryDeadlineMs,
  });
  cleanups.push({ name: 'partner pool', run: () => pool.end() });
  // A frozen primary: partner requests get 503 + Retry-After after ~2 s of silence, not the 11 s deadline.
  guardPool(pool, { probeUrl: dbUrl, name: 'primary', logger });
  trackPool('partner', pool); // partner_db_pool_connections{pool="partner"}

  // Partner endpoint functions on the read replicas (DATABASE_READ_URLS), the primary when none answers;
  // credentials, usage, alerts and LISTEN stay on the primary (`pool`).
  const reads = createReadPool(
    pool,
    config.databaseReadUrls,
    {
      max: config.pgPoolMax,
      role: 'bar_partner',
      applicationName: 'partner-api',
      statementTimeoutMs: config.pgStatementTimeoutMs,
      queryTimeoutMs: config.pgQueryDeadlineMs,
    },
    logger,
  );
  if (reads !== pool) cleanups.push({ name: 'read replica pools', run: () => reads.end() });
  const guard = await createPartnerGuard({
    pool,
    databaseUrl: dbUrl,
    redisUrl: redisTarget(config.redisUrl, config.redisClusterNodes.join(',')),
    redisBudgetMs: config.redisBudgetMs,
    redisProbeMs: config.redisProbeMs,
    logger,
  });
  cleanups.push({ name: 'usage and alerts', run: () => guard.close() }); // writes pending usage counts
  // Concurrent exports per key are counted across instances in Redis when configured (else in process).
  const exportRedisTarget = redisTarget(config.redisUrl, config.redisClusterNodes.join(','));
  const exportRedis = exportRedisTarget ? createRedisClient(exportRedisTarget, logger) : undefined;
  if (exportRedis) cleanups.push({ name: 'export slots', run: async () => void (await exportRedis.quit()) });
  const graphqlPool = createGraphqlPool(dbUrl, config);
  cleanups.push({ name: 'GraphQL pool', run: () => graphqlPool.end() });
  trackPool('graphql', graphqlPool);
  const exportStop = new AbortController(); // running exports end cleanly before the drain's deadline
  const app = createPartnerApp({
    config,
    logger,
    pool: reads,
    guard: guard.handlers,
    graphql: graphqlRoutes({ pool: graphqlPool, guard, logger }),
    // exports read the primary: the watermark needs the writers' pg_stat_activity, a replica may lag
    export: {
      pool,
      slots: exportRedis ? new RedisExportSlots(exportRedis, { logger }) : undefined,
      stop: exportStop.signal,
    },
    email: { linkKey: config.email.linkKey, pool }, // unsubscribe links: a write, on the primary
    health: {
      draining: () => draining,
      checks: [postgresCheck(pool), ...(reads instanceof ReadRoutingPool ? reads.checks() : [])],
    },
  });
  // HTTPS when TLS_CERT_FILE + TLS_KEY_FILE are set
  const server = createPartnerServer(config, app, { idleTimeoutMs: config.httpIdleTimeoutMs });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  }).catch(async (e: NodeJS.ErrnoException) => {
    await runCleanups(undefined);
    fail(e.code === 'EADDRINUSE' ? `port ${config.port} is already in use; set PORT` : e.message);
  });
  drainListener = (deadlineMs) => {
    const cut = setTimeout(() => exportStop.abort(), Math.max(deadlineMs / 2, deadlineMs - 1000));
    return server.drain(deadlineMs).finally(() => clearTimeout(cut)) as Promise<unknown> as Promise<
      Record<string, unknown>
    >;
  };
  if (cluster.isWorker) logger.info({ port: config.port }, 'worker listening');
  return (server.address() as AddressInfo).port;
}

interface ClusterWorkers {
  /** Resolves once every first-generation worker listens (rejects if one exits first). */
  listening: Promise<void>;
  stop(deadlineMs: number): Promise<{ stopped: number; killed: number }>;
}

function startWorkers(config: Config, dbUrl: string, logger: Logger, stopping: () => boolean): ClusterWorkers {
  const env = { DATABASE_URL: dbUrl, SEED_DEMO_DATA: 'false' };
  const live = new Set<Worker>();
  let restarts = 0;
  const fork = () => {
    const worker = cluster.fork(env);
    live.add(worker);
    worker.once('exit', (code, signal) => {
      live.delete(worker);
      if (stopping()) return;
      logger.error({ worker: worker.id, code, signal }, 'worker exited; starting another');
      // Back off when workers die in a loop (e.g. the database is gone).
      setTimeout(fork, Math.min(250 * 2 ** Math.min(restarts++, 5), 5000)).unref();
    });
    return worker;
  };
  const first = Array.from({ length: config.webConcurrency }, fork);
  const listening = Promise.all(
    first.map(
      (w) =>
        new Promise<void>((resolve, reject) => {
          w.once('listening', () => resolve());
          w.once('exit', (code) => reject(new Error(`worker ${w.id} exited with code ${code} before listening`)));
        }),
    ),
  ).then(() => {
    restarts = 0;
  });
  return {
    listening,
    stop: (deadlineMs) =>
      new Promise((resolve) => {
        const total = live.size;
        if (total === 0) return resolve({ stopped: 0, killed: 0 });
        let killed = 0;
        const timer = setTimeout(
          () => {
            for (const w of live) {
              killed++;
              w.process.kill('SIGKILL');
            }
          },
          Math.max(0, deadlineMs),
        );
        for (const w of live) {
          w.once('exit', () => {
            if (live.size === 0) {
              clearTimeout(timer);
              resolve({ stopped: total - killed, killed });
            }
          });
          w.process.kill('SIGTERM');
        }
      }),
  };
}

function fail(reason: string): never {
  process.stderr.write(`error: ${reason}\n`);
  process.exit(1);
}

// A failure after the embedded database started must not leave it running.
main().catch(async (e) => {
  await runCleanups(undefined);
  fail((e as Error).message ?? String(e));
});
