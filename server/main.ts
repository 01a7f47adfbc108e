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
import cluster from 'node:cluster';
import { startWorkers, type ClusterWorkers } from './cluster';
import { loadConfig } from './config';
import { createLogger } from './log';
import { fail, installShutdown, runCleanups, type Role } from './shutdown';
import { startupConfigProblem } from './startup-check';
import { announceListening, prepareDatabase, servePartner, startInstanceServices } from './wiring';

async function main(): Promise<void> {
  const config = loadConfig();
  const problem = cluster.isWorker ? undefined : startupConfigProblem(config);
  if (problem) fail(problem);
  const role: Role = cluster.isWorker ? 'worker' : config.webConcurrency > 1 ? 'primary' : 'single';
  const logger = createLogger(config.logLevel).child(role === 'worker' ? { worker: cluster.worker?.id } : {});
  let workers: ClusterWorkers | undefined;
  const { stopping } = installShutdown({ config, logger, role, workers: () => workers });

  if (role === 'worker') {
    await servePartner(config, config.databaseUrl!, logger); // the primary passes the database it prepared
    return;
  }
  const db = await prepareDatabase(config, logger);
  let port = config.port;
  if (role === 'primary') {
    workers = startWorkers(config, db.url, logger, stopping);
    await workers.listening;
  } else {
    port = await servePartner(config, db.url, logger);
  }
  await startInstanceServices(config, db.url, logger, role);
  announceListening(config, logger, { port, embedded: db.embedded, role });
}

// A failure after the embedded database started must not leave it running.
main().catch(async (e) => {
  await runCleanups(undefined);
  fail((e as Error).message ?? String(e));
});
