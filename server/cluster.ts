/**
 * The cluster supervisor (WEB_CONCURRENCY > 1): forks the workers, replaces one
 * that dies (with back-off), and stops them in two phases (shutdown.ts): every
 * worker closes its listener first, then every worker drains.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Config } from './config';
import type { Logger } from './log';
import { SHUT_DOWN, STOP_ACCEPTING, STOP_ACCEPTING_WAIT_MS, STOPPED_ACCEPTING, isCommand } from './shutdown';

export interface ClusterWorkers {
  /** Resolves once every first-generation worker listens (rejects if one exits first). */
  listening: Promise<void>;
  stop(deadlineMs: number): Promise<{ stopped: number; killed: number }>;
}

export function startWorkers(config: Config, dbUrl: string, logger: Logger, stopping: () => boolean): ClusterWorkers {
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
