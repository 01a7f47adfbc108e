/**
 * Periodic database upkeep, run by the shared graphile-worker queue (its cron
 * schedules each minute once across all instances).
 *
 * bar_next_events_refresh: a bar's stored next-events fragment is valid until
 * its first listed event ends; readers outside that window rebuild the list per
 * request (correct, but slower). Renewing the expired fragments every minute
 * keeps the detail form a concatenation of stored texts.
 *
 * request_log_partitions (hourly): the request log's daily partitions a week
 * ahead, and those older than 30 days dropped whole.
 */
import type pg from 'pg';
import type { TaskList } from 'graphile-worker';

export const maintenanceCrontab = [
  '* * * * * bar_next_events_refresh ?max=1',
  // request log partitions: a week ahead, dropped after 30 days (51-usage-history.sql)
  '17 * * * * request_log_partitions ?max=1',
].join('\n');

export function maintenanceTasks(pool: pg.Pool): TaskList {
  return {
    bar_next_events_refresh: async () => {
      await pool.query('select private.bar_next_events_refresh_expired()');
    },
    request_log_partitions: async () => {
      await pool.query('select private.request_log_maintain()');
    },
  };
}
