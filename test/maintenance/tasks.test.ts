import { parseCrontab } from 'graphile-worker';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { startWebhookRunner, type WebhookRunner } from '../../server/webhooks/runner';
import { maintenanceCrontab, maintenanceTasks } from '../../server/maintenance/tasks';
import { waitFor } from '../support/wait';

describe('maintenance tasks on the shared queue', () => {
  let db: TestDatabase;
  let runner: WebhookRunner | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await runner?.stop();
    await db.drop();
  });

  test('the crontab schedules each maintenance task every minute, and names no other task', () => {
    const items = parseCrontab(maintenanceCrontab);
    const tasks = Object.keys(maintenanceTasks(db.owner));
    expect(items.map((i) => i.task).sort()).toEqual(tasks.sort());
    for (const item of items) expect(item.match).toBeDefined();
  });

  test('bar_next_events_refresh renews an expired fragment from the events table', async () => {
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    const bar = await f.bar(city, { name: 'Refresh Bar' });
    // real time: stored next-events fragments are built and expire by the database's real now()
    const soon = new Date(Date.now() + 3600_000).toISOString();
    const later = new Date(Date.now() + 7200_000).toISOString();
    await f.event(bar, { title: 'First', start_at: soon, end_at: later });
    const fresh = await db.owner.query<{ body: string }>('select body from private.bar_next_events where bar_id = $1', [
      bar,
    ]);
    expect(fresh.rows[0]!.body).toContain('"First"');

    // As if its first event had ended: expired, and its text out of date.
    await db.owner.query(
      `update private.bar_next_events set body = '[]', valid_until = now() - interval '1 second' where bar_id = $1`,
      [bar],
    );
    runner = await startWebhookRunner({ databaseUrl: db.url, pollInterval: 100, tasks: maintenanceTasks });
    await db.owner.query(`select graphile_worker.add_job('bar_next_events_refresh')`);
    let body = '';
    const refreshed = async () => {
      const { rows } = await db.owner.query<{ body: string }>(
        'select body from private.bar_next_events where bar_id = $1',
        [bar],
      );
      body = rows[0]!.body;
      return body === fresh.rows[0]!.body;
    };
    await waitFor(refreshed, 15_000, 100);
    expect(body).toBe(fresh.rows[0]!.body);
  });
});
