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
 * left) and stops the database last, in two phases: first every worker closes
 * its listener and says so (the primary's shared socket closes with the last
 * one, so a reconnect is refused, never accepted and reset), then every worker
 * drains as below. A worker leaves the timing to the primary: a signal sent to
 * the worker itself (the whole process group) is acted on only if the primary
 * says nothing within WORKER_SIGNAL_WAIT_MS; a worker whose primary is gone
 * (IPC disconnect) drains on its own.
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
import { migrateDatabase } from '../db/tools/migrate';
import { createPool } from './db/pools';
import { guardPool } from './db/pg-breaker';
import { createReadPool, ReadRoutingPool } from './db/read-pool';
import { postgresCheck } from './http/health';
import { createRedisClient, redisTarget } from './redis';
import { createPartnerGuard } from './credentials/guard';
import { answerClock } from './clock';
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
import { RequestLog } from './usage/request-log';

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
/** Set by the partner listener: closes the net listener only (a worker's first shutdown phase). */
let stopListener: (() => void) | undefined;
let draining = false;

/** Cluster IPC between the primary and its workers (two-phase shutdown). */
const STOP_ACCEPTING = 'partner:stop-accepting'; // primary → worker: close your listener
const STOPPED_ACCEPTING = 'partner:stopped-accepting'; // worker → primary: closed
const SHUT_DOWN = 'partner:shutdown'; // primary → worker: drain and exit
/** How long the primary waits for every worker's STOPPED_ACCEPTING before going on. */
const STOP_ACCEPTING_WAIT_MS = 1000;
/** A worker signalled directly waits this long for the primary's messages, then drains on its own. */
const WORKER_SIGNAL_WAIT_MS = 2000;

function isCommand(message: unknown, cmd: string): boolean {
  return isRecord(message) && message.cmd === cmd;
}

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
  if (role === 'worker') {
    // The primary leads a worker's shutdown (two phases: stop accepting, then drain).
    process.on('message', (message: unknown) => {
      if (isCommand(message, STOP_ACCEPTING)) {
        draining = true; // readiness 503
        stopListener?.(); // sends node's internal close message to the primary first...
        if (process.connected) process.send?.({ cmd: STOPPED_ACCEPTING }); // ...then this, on the same channel
      } else if (isCommand(message, SHUT_DOWN)) void shutdown('primary');
    });
    // The primary is gone (killed, or it exited at its deadline): drain on our own. Node's own
    // listener (registered before this one) would exit the worker at once on an unexpected
    // disconnect; marking the disconnect as expected keeps the worker alive for its drain.
    process.prependListener('disconnect', () => {
      if (shuttingDown) return;
      if (cluster.worker) cluster.worker.exitedAfterDisconnect = true;
      void shutdown('disconnect');
    });
  }
  const onSignal = (signal: string) => {
    // A worker gets the signal sent to the whole process group (Ctrl-C, systemd
    // KillMode=control-group) too: the primary's messages decide when it stops accepting and
    // drains. Only a primary that says nothing (the signal was for this worker alone) leaves it
    // to the worker.
    if (role === 'worker' && process.connected && !shuttingDown) {
      logger.info({ signal, waitMs: WORKER_SIGNAL_WAIT_MS }, 'signal to a worker: waiting for the primary');
      setTimeout(() => void shutdown(signal), WORKER_SIGNAL_WAIT_MS).unref();
      return;
    }
    void shutdown(signal);
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));

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
      await seedDemoData(db.url, {
        bars: config.demoBars,
        now: answerClock(config)(),
        onProgress: (m) => process.stderr.write(`${m}\n`),
      });
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
    // ApiKey.bucketsNow reads the shared rate-limit counters (Redis), when there are any.
    const bucketsTarget = redisTarget(config.redisUrl, config.redisClusterNodes.join(','));
    const bucketsRedis = bucketsTarget ? createRedisClient(bucketsTarget, logger) : undefined;
    if (bucketsRedis) cleanups.push({ name: 'operator Redis', run: async () => void (await bucketsRedis.quit()) });
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
        // On SIGTERM a webhook request or e-mail attempt still running after this is abandoned
        // (retried later), so the shutdown ends in time whatever a receiver or mail server does.
        abortAfterMs: Math.min(5000, Math.floor(config.shutdownTimeoutMs * 0.2)),
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
    {},
    { maxLagMs: config.databaseReadMaxLagMs }, // a replica further behind is skipped (measured every second)
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
  // 4xx/5xx answers (REQUEST_LOG), batched to the primary; its buffer is written at shutdown (before the pool ends)
  const requestLog = new RequestLog({ pool, logger, mode: config.requestLog });
  cleanups.push({ name: 'request log', run: () => requestLog.close() });
  // Concurrent exports per key are counted across instances in Redis when configured (else in process).
  const exportRedisTarget = redisTarget(config.redisUrl, config.redisClusterNodes.join(','));
  const exportRedis = exportRedisTarget ? createRedisClient(exportRedisTarget, logger) : undefined;
  if (exportRedis) cleanups.push({ name: 'export slots', run: async () => void (await exportRedis.quit()) });
  const graphqlPool = createGraphqlPool(dbUrl, config);
  cleanups.push({ name: 'GraphQL pool', run: () => graphqlPool.end() });
  trackPool('graphql', graphqlPool);
  const exportStop = new AbortController(); // running exports end cleanly before the drain's deadline
  const clock = answerClock(config);
  const app = createPartnerApp({
    config,
    logger,
    pool: reads,
    guard: guard.handlers,
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
  stopListener = () => server.stopAccepting();
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
      setTimeout(() => stopping() || fork(), Math.min(250 * 2 ** Math.min(restarts++, 5), 5000)).unref();
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
    stop: async (deadlineMs) => {
      const total = live.size;
      if (total === 0) return { stopped: 0, killed: 0 };
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
      const exited = Promise.all([...live].map((w) => new Promise((resolve) => w.once('exit', resolve))));
      // Phase 1: every worker closes its listener (answers still keep-alive, nobody reconnects yet).
      // node:cluster (round robin) closes the shared socket when the last worker's close message
      // arrives, and that message precedes the worker's answer on its channel: once every worker
      // has answered, a client that reconnects is refused. Without this, the primary went on
      // accepting until the last worker had closed, and reset what it had queued then.
      const phase1 = await stopAccepting([...live], Math.min(STOP_ACCEPTING_WAIT_MS, deadlineMs / 4));
      logger.info(phase1, 'workers stopped accepting');
      // Phase 2: every worker drains (Connection: close, idle keep-alive closed, usage flushed).
      for (const w of live) {
        if (w.isConnected()) w.send({ cmd: SHUT_DOWN });
        else w.process.kill('SIGTERM'); // no channel: the worker drains on the signal itself
      }
      await exited;
      clearTimeout(timer);
      return { stopped: total - killed, killed };
    },
  };
}

/** Asks each worker to close its listener; resolves when all have answered (or exited), or after `waitMs`. */
function stopAccepting(workers: Worker[], waitMs: number): Promise<{ answered: number; silent: number }> {
  const waiting = new Set(workers.filter((w) => w.isConnected()));
  const asked = waiting.size;
  if (asked === 0) return Promise.resolve({ answered: 0, silent: workers.length });
  return new Promise((resolve) => {
    const offs: (() => void)[] = [];
    const done = () => {
      clearTimeout(timer);
      for (const off of offs) off();
      resolve({ answered: asked - waiting.size, silent: workers.length - asked + waiting.size });
    };
    const timer = setTimeout(done, Math.max(0, waitMs));
    for (const w of [...waiting]) {
      const settle = () => {
        waiting.delete(w);
        if (waiting.size === 0) done();
      };
      const onMessage = (message: unknown) => {
        if (isCommand(message, STOPPED_ACCEPTING)) settle();
      };
      w.on('message', onMessage);
      w.once('exit', settle);
      offs.push(() => {
        w.off('message', onMessage);
        w.off('exit', settle);
      });
      w.send({ cmd: STOP_ACCEPTING });
    }
  });
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
