/**
 * The wiring of one instance (main.ts calls these in order): the database
 * (located or started, migrated, seeded on a first embedded start), the
 * partner listener of this process (pools, guard, REST app with the GraphQL
 * endpoint), and the per-instance services (operator listener, webhook and
 * e-mail runner). Every resource registers its shutdown step (shutdown.ts).
 */
import cluster from 'node:cluster';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { firstKeyHint } from './admin/hint';
import { answerClock } from './clock';
import type { Config } from './config';
import { createPartnerGuard } from './credentials/guard';
import { locateDatabase, type DatabaseLocation } from './db/database';
import { migrateDatabase } from '../db/tools/migrate';
import { guardPool } from './db/pg-breaker';
import { createPool } from './db/pools';
import { partnerStatements } from './db/prepared-statements';
import { createReadPool, ReadRoutingPool } from './db/read-pool';
import { createEmailSender } from './email/sender';
import { graphqlRoutes } from './graphql/endpoint';
import { createGraphqlPool } from './graphql/pool';
import { createPartnerApp } from './http/app';
import { postgresCheck } from './http/health';
import { RedisExportSlots } from './http/routes/export';
import { createPartnerServer } from './http/server';
import type { Logger } from './log';
import { maintenanceCrontab, maintenanceTasks } from './maintenance/tasks';
import { trackPool } from './metrics';
import { clusterMetricsText } from './metrics-cluster';
import { startOperatorServer } from './operator/server';
import { createRedisClient, redisTarget } from './redis';
import { fail, listener, onShutdown, runCleanups, type Role } from './shutdown';
import { RequestLog } from './usage/request-log';
import { startWebhookRunner } from './webhooks/runner';

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

/** The primary's database: located (or the embedded server started), migrated, demo data on a first start. */
export async function prepareDatabase(config: Config, logger: Logger): Promise<DatabaseLocation> {
  let db: DatabaseLocation;
  try {
    db = await locateDatabase(config);
  } catch (e) {
    fail(`cannot start the embedded PostgreSQL: ${(e as Error).message}`);
  }
  onShutdown('database', () => db.stop());
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
    await seedDemoData(db.url, {
      bars: config.demoBars,
      now: answerClock(config)(),
      onProgress: (m) => process.stderr.write(`${m}\n`),
    });
  }
  return db;
}

/** The partner pool, guard, app and listener of this process. */
export async function servePartner(config: Config, dbUrl: string, logger: Logger): Promise<number> {
  partnerStatements.enabled = config.pgPreparedStatements; // off behind a pooler that cannot keep them
  const pool = createPool(dbUrl, {
    max: config.pgPoolMax,
    role: 'bar_partner',
    applicationName: 'partner-api',
    statementTimeoutMs: config.pgStatementTimeoutMs,
    queryTimeoutMs: config.pgQueryDeadlineMs,
  });
  onShutdown('partner pool', () => pool.end());
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
    {},
    { maxLagMs: config.databaseReadMaxLagMs }, // a replica further behind is skipped (measured every second)
  );
  if (reads !== pool) onShutdown('read replica pools', () => reads.end());
  const guard = await createPartnerGuard({
    pool,
    databaseUrl: dbUrl,
    redisUrl: redisTarget(config.redisUrl, config.redisClusterNodes.join(',')),
    redisBudgetMs: config.redisBudgetMs,
    redisProbeMs: config.redisProbeMs,
    logger,
  });
  onShutdown('usage and alerts', () => guard.close()); // writes pending usage counts
  // 4xx/5xx answers (REQUEST_LOG), batched to the primary; its buffer is written at shutdown (before the pool ends)
  const requestLog = new RequestLog({ pool, logger, mode: config.requestLog });
  onShutdown('request log', () => requestLog.close());
  // Concurrent exports per key are counted across instances in Redis when configured (else in process).
  const exportRedisTarget = redisTarget(config.redisUrl, config.redisClusterNodes.join(','));
  const exportRedis = exportRedisTarget ? createRedisClient(exportRedisTarget, logger) : undefined;
  if (exportRedis) onShutdown('export slots', async () => void (await exportRedis.quit()));
  const graphqlPool = createGraphqlPool(dbUrl, config);
  onShutdown('GraphQL pool', () => graphqlPool.end());
  trackPool('graphql', graphqlPool);
  const exportStop = new AbortController(); // running exports end cleanly before the drain's deadline
  const clock = answerClock(config);
  const app = createPartnerApp({
    config,
    logger,
    pool: reads,
    guard: guard.handlers,
    knownRefusal: guard.knownRefusal,
    clock,
    graphql: graphqlRoutes({ pool: graphqlPool, guard, logger, clock }),
    // exports read the primary: the watermark needs the writers' pg_stat_activity, a replica may lag
    export: {
      pool,
      slots: exportRedis ? new RedisExportSlots(exportRedis, { logger }) : undefined,
      stop: exportStop.signal,
    },
    email: { linkKey: config.email.linkKey, pool }, // unsubscribe links: a write, on the primary
    requestLog,
    health: {
      draining: () => listener.draining,
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
  listener.stopAccepting = () => server.stopAccepting();
  listener.drain = (deadlineMs) => {
    const cut = setTimeout(() => exportStop.abort(), Math.max(deadlineMs / 2, deadlineMs - 1000));
    return server.drain(deadlineMs).finally(() => clearTimeout(cut)) as Promise<unknown> as Promise<
      Record<string, unknown>
    >;
  };
  if (cluster.isWorker) logger.info({ port: config.port }, 'worker listening');
  return (server.address() as AddressInfo).port;
}

/** The instance's operator listener (GraphQL, /metrics) and its webhook, e-mail and maintenance runner. */
export async function startInstanceServices(
  config: Config,
  dbUrl: string,
  logger: Logger,
  role: Exclude<Role, 'worker'>,
): Promise<void> {
  // Operator GraphQL endpoint and /metrics: one listener per instance (ADMIN_HOST:ADMIN_PORT, loopback by default).
  // ApiKey.bucketsNow reads the shared rate-limit counters (Redis), when there are any.
  const bucketsTarget = redisTarget(config.redisUrl, config.redisClusterNodes.join(','));
  const bucketsRedis = bucketsTarget ? createRedisClient(bucketsTarget, logger) : undefined;
  if (bucketsRedis) onShutdown('operator Redis', async () => void (await bucketsRedis.quit()));
  const operatorGraphql = await startOperatorServer({
    databaseUrl: dbUrl,
    config,
    logger,
    buckets: bucketsRedis ? { redis: bucketsRedis } : undefined,
    ...(role === 'primary' ? { metrics: clusterMetricsText } : {}),
  }).catch(async (e: NodeJS.ErrnoException) => {
    await runCleanups(undefined);
    return fail(
      e.code === 'EADDRINUSE'
        ? `port ${config.adminPort} is already in use; set ADMIN_PORT`
        : `operator GraphQL: ${e.message}`,
    );
  });
  onShutdown('operator listener', () => operatorGraphql.close());

  // Webhook deliveries (graphile-worker queue, server/webhooks): one runner per instance.
  let webhookRunner;
  const email = createEmailSender(config.email, logger); // usage-alert e-mails: a task of the same runner
  onShutdown('e-mail transport', async () => email.close());
  try {
    webhookRunner = await startWebhookRunner({
      databaseUrl: dbUrl,
      logger,
      tasks: (pool) => ({ ...email.tasks(pool), ...maintenanceTasks(pool) }),
      crontab: maintenanceCrontab,
      // On SIGTERM a webhook request or e-mail attempt still running after this is abandoned
      // (retried later), so the shutdown ends in time whatever a receiver or mail server does.
      abortAfterMs: Math.min(5000, Math.floor(config.shutdownTimeoutMs * 0.2)),
    });
  } catch (e) {
    await runCleanups(undefined);
    return fail(`webhooks: ${(e as Error).message}`);
  }
  onShutdown('webhook runner', () => webhookRunner.stop());
  logger.info({ url: `${operatorGraphql.url}/graphql` }, 'operator GraphQL listening');
}

/** The start-up lines: where the partner API listens, and on a first embedded start how to get a key. */
export function announceListening(
  config: Config,
  logger: Logger,
  o: { port: number; embedded: boolean; role: Exclude<Role, 'worker'> },
): void {
  logger.info(
    { port: o.port, embeddedDatabase: o.embedded, workers: o.role === 'primary' ? config.webConcurrency : 1 },
    'partner API listening',
  );
  if (o.embedded) {
    const base = `${config.tls ? 'https' : 'http'}://localhost:${config.port}`;
    process.stderr.write(`\nPartner API on ${base}/api/v1/partner (embedded PostgreSQL, demo data)\n`);
    process.stderr.write(`${firstKeyHint(base)}\n`);
  }
}
