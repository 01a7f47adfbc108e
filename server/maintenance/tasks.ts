/**
 * Periodic database upkeep, run by the shared graphile-worker queue (its cron
 * schedules each minute once across all instances).
 *
 * bar_next_events_refresh: a bar's stored next-events fragment is valid until
 * its first listed event ends; readers outside that window rebuild the list per
 * request (correct, but slower). Renewing the expired fragments every minute
 * keeps the detail form a concatenation of stored texts.
 */
import type pg from 'pg';
import type { TaskList } from 'graphile-worker';

export const maintenanceCrontab = '* * * * * bar_next_events_refresh ?max=1';

export function maintenanceTasks(pool: pg.Pool): TaskList {
  return {
    bar_next_events_refresh: async () => {
      await pool.query('select private.bar_next_events_refresh_expired()');
    },
  };
}
