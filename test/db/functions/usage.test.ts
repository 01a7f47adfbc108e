/**
 * 47-usage.sql and 50-usage.sql: usage bookkeeping as bar_partner (the partner servers) and the
 * operator's time-window reads as bar_operator. End to end: test/credentials/usage.test.ts,
 * test/credentials/redis-script.test.ts, test/operator/usage.test.ts.
 */
import { errorOf, familyDatabase, type Tx } from './sql';

const sql = familyDatabase();

async function key(tx: Tx): Promise<{ keyId: string; subscriberId: string }> {
  const [s] = await tx.query<{ id: string }>("select id from admin.create_subscriber('Acme', 'standard')");
  const [k] = await tx.query<{ id: string }>('select id from admin.issue_key($1)', [s!.id]);
  return { keyId: k!.id, subscriberId: s!.id };
}
const usage = (tx: Tx, keyId: string) =>
  tx.query<{ day: string; endpoint: string; requests: number; rate_limited: number }>(
    "select to_char(day, 'YYYY-MM-DD') as day, endpoint, requests::int, rate_limited::int from admin.daily_usage where api_key_id = $1 order by 1, 2",
    [keyId],
  );

describe('api.record_usage_alert', () => {
  test('one alert per key, bucket, window and level: true the first time, false after; unknown key: false', async () => {
    await sql.run(async (tx) => {
      const { keyId, subscriberId } = await key(tx);
      const alert = (level: string, id = keyId) =>
        tx.call<boolean>(
          'bar_partner',
          "select api.record_usage_alert($1, 'minute', '2026-11-23T10:00Z', $2, 80, 100)",
          [id, level],
        );
      expect(await alert('warning')).toBe(true);
      expect(await alert('warning')).toBe(false);
      expect(await alert('high_warning')).toBe(true);
      expect(await alert('warning', '00000000-0000-0000-0000-000000000000')).toBe(false);
      const rows = await tx.query('select subscriber_id, level from admin.usage_alerts order by level');
      expect(rows).toEqual([
        { subscriber_id: subscriberId, level: 'high_warning' },
        { subscriber_id: subscriberId, level: 'warning' },
      ]);
    });
  });
});

describe('api.record_usage and api.record_shared_usage', () => {
  test('record_usage adds to the day counters; last_used_at only moves forward; unknown keys are skipped', async () => {
    await sql.run(async (tx) => {
      const { keyId } = await key(tx);
      const batch = (requests: number, at: string, id = keyId) =>
        JSON.stringify([
          { day: '2026-11-23', key_id: id, endpoint: 'bars', requests, rate_limited: 1, last_used_at: at },
        ]);
      await tx.as('bar_partner', 'select api.record_usage($1)', [batch(3, '2026-11-23T10:00:00Z')]);
      await tx.as('bar_partner', 'select api.record_usage($1)', [batch(2, '2026-11-23T09:00:00Z')]);
      await tx.as('bar_partner', 'select api.record_usage($1)', [
        batch(5, '2026-11-23T11:00:00Z', '00000000-0000-0000-0000-000000000000'),
      ]);
      expect(await usage(tx, keyId)).toEqual([{ day: '2026-11-23', endpoint: 'bars', requests: 5, rate_limited: 2 }]);
      const [k] = await tx.query<{ at: Date }>('select last_used_at as at from admin.api_keys where id = $1', [keyId]);
      expect(k!.at.toISOString()).toBe('2026-11-23T10:00:00.000Z');
    });
  });

  test('record_shared_usage: totals by version, applied once; an older version changes nothing; #429 is rate_limited', async () => {
    await sql.run(async (tx) => {
      const { keyId } = await key(tx);
      const flush = (version: number, counts: Record<string, number>) =>
        tx.call<number>('bar_partner', 'select api.record_shared_usage($1)', [
          JSON.stringify([{ day: '2026-11-23', key_id: keyId, version, counts }]),
        ]);
      expect(await flush(1, { bars: 4, '#429': 1 })).toBe(1);
      expect(await flush(3, { bars: 6, '#429': 1 })).toBe(1);
      expect(await flush(2, { bars: 100 })).toBe(0);
      expect(await flush(3, { bars: 100 })).toBe(0);
      expect(await usage(tx, keyId)).toEqual([
        { day: '2026-11-23', endpoint: '(none)', requests: 0, rate_limited: 1 },
        { day: '2026-11-23', endpoint: 'bars', requests: 6, rate_limited: 0 },
      ]);
    });
  });
});

describe('operator reads', () => {
  test('usage_alerts_since and daily_usage_since include their bound, as bar_operator', async () => {
    await sql.run(async (tx) => {
      const { keyId } = await key(tx);
      await tx.query(
        `insert into admin.daily_usage (day, subscriber_id, api_key_id, endpoint, requests, rate_limited)
         select d, k.subscriber_id, k.id, 'bars', 1, 0 from admin.api_keys k,
                unnest(array['2026-11-21', '2026-11-22', '2026-11-23']::date[]) d where k.id = $1`,
        [keyId],
      );
      const days = await tx.as<{ day: string }>(
        'bar_operator',
        "select to_char(day, 'YYYY-MM-DD') as day from admin.daily_usage_since('2026-11-22') order by day",
      );
      expect(days.map((d) => d.day)).toEqual(['2026-11-22', '2026-11-23']);
      await tx.as(
        'bar_partner',
        "select api.record_usage_alert($1, 'day', '2026-11-23T00:00Z', 'limit_reached', 1, 1)",
        [keyId],
      );
      // the exact stored instant (microseconds; a JavaScript Date would round to milliseconds)
      const [alert] = await tx.query<{ at: string }>('select created_at::text as at from admin.usage_alerts');
      const since = (q: string) => tx.as('bar_operator', `select 1 from admin.usage_alerts_since(${q})`, [alert!.at]);
      expect(await since('$1::timestamptz')).toHaveLength(1);
      expect(await since("$1::timestamptz + interval '1 microsecond'")).toHaveLength(0);
    });
  });
});

describe('privileges', () => {
  test.each([
    ['bar_operator', "select api.record_usage('[]')"],
    ['bar_operator', "select api.record_shared_usage('[]')"],
    ['bar_operator', "select api.record_usage_alert(gen_random_uuid(), 'day', now(), 'warning', 1, 1)"],
    ['bar_partner', 'select * from admin.daily_usage_since(current_date)'],
    ['bar_partner', 'select * from admin.usage_alerts_since(now())'],
    ['bar_partner', 'select * from admin.daily_usage'],
    [
      'bar_operator',
      "insert into admin.usage_alerts (api_key_id, subscriber_id, bucket, window_start, level, used, \"limit\") select id, subscriber_id, 'day', now(), 'warning', 1, 1 from admin.api_keys",
    ],
  ] as const)('%s may not: %s', async (role, query) => {
    await sql.run(async (tx) => {
      expect((await errorOf(tx, role, query)).code).toBe('42501');
    });
  });
});
