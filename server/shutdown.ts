/**
 * The two-phase shutdown (see main.ts): named cleanup steps run last-registered
 * first, the partner listener's drain, and the cluster IPC commands between
 * the primary and its workers. `installShutdown` wires the signals (and, in a
 * worker, the primary's messages) to one `shutdown`.
 */
import cluster from 'node:cluster';
import type { Config } from './config';
import type { Logger } from './log';

/** A named step of the shutdown: run last-registered first. */
export interface Cleanup {
  name: string;
  run: () => Promise<unknown>;
}
const cleanups: Cleanup[] = [];

/** Registers a step of the shutdown (run in reverse order of registration). */
export function onShutdown(name: string, run: () => Promise<unknown>): void {
  cleanups.push({ name, run });
}
/** Set by the partner listener: `drain` (first step of the shutdown), `stopAccepting` (a worker's first phase); `draining`: readiness 503. */
export const listener: {
  drain?: (deadlineMs: number) => Promise<Record<string, unknown>>;
  stopAccepting?: () => void;
  draining: boolean;
} = { draining: false };

/** Cluster IPC between the primary and its workers (two-phase shutdown). */
export const STOP_ACCEPTING = 'partner:stop-accepting'; // primary → worker: close your listener
export const STOPPED_ACCEPTING = 'partner:stopped-accepting'; // worker → primary: closed
export const SHUT_DOWN = 'partner:shutdown'; // primary → worker: drain and exit
/** How long the primary waits for every worker's STOPPED_ACCEPTING before going on. */
export const STOP_ACCEPTING_WAIT_MS = 1000;
/** A worker signalled directly waits this long for the primary's messages, then drains on its own. */
export const WORKER_SIGNAL_WAIT_MS = 2000;

/** The partner listener's drain ends at 60 % of the shutdown timeout (docs/OPERATIONS.md › Shutdown). */
export function drainDeadlineMs(shutdownTimeoutMs: number): number {
  return Math.floor(shutdownTimeoutMs * 0.6);
}

export function isCommand(message: unknown, cmd: string): boolean {
  return isRecord(message) && message.cmd === cmd;
}

export async function runCleanups(logger: Logger | undefined): Promise<void> {
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

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export type Role = 'single' | 'primary' | 'worker';

/** What the shutdown needs: the deadline, the log, the process's role and (in a primary) its workers. */
export interface ShutdownOptions {
  config: Pick<Config, 'shutdownTimeoutMs'>;
  logger: Logger;
  role: Role;
  workers: () => { stop(deadlineMs: number): Promise<Record<string, unknown>> } | undefined;
}

/** Installs SIGINT/SIGTERM (and a worker's IPC) handlers; `stopping()` is true once the shutdown began. */
export function installShutdown(o: ShutdownOptions): { stopping: () => boolean } {
  const { config, logger, role } = o;
  let shuttingDown = false;

  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    listener.draining = true;
    const started = Date.now();
    logger.info({ signal, timeoutMs: config.shutdownTimeoutMs }, 'shutting down');
    // The hard deadline: whatever is still running then is abandoned.
    setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown deadline passed; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    if (listener.drain) {
      const drained = await listener.drain(drainDeadlineMs(config.shutdownTimeoutMs));
      logger.info({ ms: Date.now() - started, ...drained }, 'partner listener closed');
    }
    const workers = o.workers();
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
        listener.draining = true; // readiness 503
        listener.stopAccepting?.(); // sends node's internal close message to the primary first...
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

  return { stopping: () => shuttingDown };
}

export function fail(reason: string): never {
  process.stderr.write(`error: ${reason}\n`);
  process.exit(1);
}
