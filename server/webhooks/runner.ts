/**
 * The webhook delivery runner inside the server process: graphile-worker's
 * queue (jobs taken with FOR UPDATE SKIP LOCKED, so several instances share
 * it and each job runs once at a time), the task of task.ts, and the queue
 * depth gauge. stop() waits for running deliveries (at most the 10 s timeout).
 * Other queued work runs here too (options.tasks: the alert e-mails' email_send).
 */
import pg from 'pg';
import { Logger as WorkerLogger, run, type Runner, type TaskList } from 'graphile-worker';
import { webhookQueueDepth } from '../metrics';
import type { Logger } from '../log';
import { webhookSettings, type WebhookSettings } from './settings';
import { deliverTask } from './task';

export interface WebhookRunner {
  stop(): Promise<void>;
}

export interface WebhookRunnerOptions {
  databaseUrl: string;
  logger?: Logger;
  settings?: WebhookSettings;
  concurrency?: number;
  pollInterval?: number;
  timeoutMs?: number;
  /** Other tasks run by the same queue (e.g. email_send, server/email), given the runner's pool. */
  tasks?: (pool: pg.Pool) => TaskList;
  /** graphile-worker crontab lines for those tasks (e.g. server/maintenance). */
  crontab?: string;
  /**
   * stop(): jobs still running this long after it began are abandoned (graphile-worker's abort
   * signal: a webhook request or an e-mail attempt is cut off, recorded as a temporary failure
   * and retried later), so that stop() ends within about this plus a few ms. Default 5000.
   */
  abortAfterMs?: number;
}

export async function startWebhookRunner(options: WebhookRunnerOptions): Promise<WebhookRunner> {
  const settings = options.settings ?? webhookSettings();
  if (settings.warning) options.logger?.warn(settings.warning);
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 4, application_name: 'webhooks' });
  pool.on('error', (e) => options.logger?.warn({ err: e.message }, 'webhook pool connection error'));
  pool.on('connect', (client) => client.on('error', () => undefined)); // reported by the pool handler
  const logger = new WorkerLogger(() => (level, message) => {
    if (level === 'error') options.logger?.error(message);
    else if (level === 'warning') options.logger?.warn(message);
  });
  let runner: Runner;
  try {
    runner = await run({
      pgPool: pool,
      concurrency: options.concurrency ?? 4,
      pollInterval: options.pollInterval ?? 2000,
      noHandleSignals: true,
      gracefulShutdownAbortTimeout: options.abortAfterMs ?? 5000,
      // Completions and failures through graphile-worker's batcher (delay 0: written at once), because
      // stop() waits for the batcher: unbatched, a job that ended during stop() was marked done or failed
      // by a query nobody awaited, cut off by pool.end() below, and the job (and its named queue) stayed
      // locked for 4 hours.
      preset: { worker: { completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
      logger,
      ...(options.crontab ? { crontab: options.crontab } : {}),
      taskList: { webhook_deliver: deliverTask(pool, settings, options.timeoutMs), ...options.tasks?.(pool) },
    });
  } catch (e) {
    await pool.end();
    throw e;
  }
  const depth = setInterval(() => {
    pool
      .query<{ n: number }>(`select count(*)::int as n from admin.webhook_deliveries where status = 'pending'`)
      .then((r) => webhookQueueDepth.set(r.rows[0]?.n ?? 0))
      .catch(() => undefined);
  }, 15_000);
  depth.unref();
  return {
    async stop() {
      clearInterval(depth);
      await runner.stop();
      await pool.end();
    },
  };
}
