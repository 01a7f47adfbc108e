/**
 * Minute-bucket alerts fold (decisions.md v1.2): a burst that crosses 80, 90
 * and 100 % of the minute limit every minute for 10 simulated minutes gives
 * at most one e-mail per contact, key and level an hour, each saying how many
 * alerts it covers. Time is simulated through the alerts' created_at (the
 * trigger schedules by it), not by waiting.
 */
import { createTestDatabase, type TestDatabase } from '../support/db';
import { TestSmtp, deliveries, startEmailRunner, subscriberWithContacts, testEmailConfig, waitFor } from './support';

const LEVELS = ['warning', 'high_warning', 'limit_reached'] as const;
const HOUR = 3600_000;

describe('minute-bucket alerts: at most one e-mail per contact, key and level an hour', () => {
  let db: TestDatabase;
  let smtp: TestSmtp;
  const running: { stop(): Promise<void> }[] = [];
  const start = async () => {
    const r = await startEmailRunner(db, testEmailConfig({ smtpUrl: smtp.url }));
    running.push(r);
    return r;
  };
  const stopAll = async () => {
    for (const r of running.splice(0)) await r.stop();
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    smtp = await TestSmtp.start();
  });
  afterEach(stopAll);
  afterAll(async () => {
    await smtp?.stop();
    await db?.drop();
  });

  /** The three alerts of simulated minute `minute` after `base` (80 %, 90 %, 100 % of 10 a minute). */
  const burstMinute = (s: { keyId: string; subscriberId: string }, base: Date, minute: number) =>
    Promise.all(
      LEVELS.map((level, i) =>
        db.owner.query(
          `insert into admin.usage_alerts (api_key_id, subscriber_id, bucket, window_start, level, used, "limit", created_at)
           values ($1, $2, 'minute', date_trunc('minute', $3::timestamptz) + $4 * interval '1 minute', $5, $6, 10,
                   $3::timestamptz + $4 * interval '1 minute' + $7 * interval '1 second')`,
          [s.keyId, s.subscriberId, base, minute, level, [8, 9, 10][i], i],
        ),
      ),
    );

  test('10 minutes of bursts three hours ago: two e-mails per contact and level, an hour apart, covering 1 and 9', async () => {
    const s = await subscriberWithContacts(db, ['a@fold.example', 'b@fold.example']);
    // real time: alert e-mails are folded and scheduled by the job queue's real clock
    const base = new Date(Date.now() - 3 * HOUR);
    await start();
    await burstMinute(s, base, 0);
    await waitFor(() => (smtp.to('a@fold.example').length + smtp.to('b@fold.example').length === 6 ? true : undefined));
    await stopAll(); // minutes 1-9 arrive while no runner runs: they fold into the next e-mail
    for (let m = 1; m < 10; m++) await burstMinute(s, base, m);
    const rows = await deliveries(db, s.subscriberId);
    expect(rows).toHaveLength(12);
    for (const email of ['a@fold.example', 'b@fold.example']) {
      for (const level of LEVELS) {
        const mine = rows.filter((r) => r.email === email && r.level === level);
        expect(mine.map((r) => r.alert_count)).toEqual([1, 9]);
        expect(mine[1]!.send_after.getTime() - mine[0]!.send_after.getTime()).toBe(HOUR);
      }
    }
    await start();
    await waitFor(async () => {
      const d = await deliveries(db, s.subscriberId);
      return d.every((r) => r.status === 'sent') ? d : undefined;
    });
    for (const email of ['a@fold.example', 'b@fold.example']) {
      const mails = smtp.to(email);
      expect(mails).toHaveLength(6);
      for (const level of ['Warning: 80%', 'High usage warning: 90%', 'Limit reached: 100%']) {
        const texts = mails.filter((m) => m.mail.subject!.includes(level)).map((m) => m.mail.text!);
        expect(texts).toHaveLength(2);
        expect(texts.filter((t) => t.includes('This e-mail covers 1 alert.'))).toHaveLength(1);
        expect(texts.filter((t) => /This e-mail covers 9 alerts at this level between/.test(t))).toHaveLength(1);
      }
    }
  });

  test('a burst happening now: the first e-mails go at once, the rest wait an hour (concurrent alerts fold into one)', async () => {
    const s = await subscriberWithContacts(db, ['now@fold.example']);
    // real time: alert e-mails are folded and scheduled by the job queue's real clock
    const base = new Date();
    await start();
    await burstMinute(s, base, 0);
    await waitFor(() => (smtp.to('now@fold.example').length === 3 ? true : undefined));
    // minutes 1-9 recorded concurrently (several instances): the advisory lock and the unique index keep one open e-mail
    await Promise.all(Array.from({ length: 9 }, (_, m) => burstMinute(s, base, m + 1)));
    const rows = await deliveries(db, s.subscriberId);
    for (const level of LEVELS) {
      const mine = rows.filter((r) => r.level === level);
      expect(mine.map((r) => [r.status, r.alert_count])).toEqual([
        ['sent', 1],
        ['pending', 9],
      ]);
      expect(mine[1]!.send_after.getTime() - mine[0]!.send_after.getTime()).toBe(HOUR);
    }
    await new Promise((r) => setTimeout(r, 1000));
    expect(smtp.to('now@fold.example')).toHaveLength(3);
    const jobs = await db.owner.query<{ n: number }>(
      `select count(*)::int as n from graphile_worker._private_jobs j
        where j.key = any (select 'email:' || d.id from admin.email_deliveries d
                            where d.subscriber_id = $1 and d.status = 'pending')
          and j.run_at > now() + interval '50 minutes'`,
      [s.subscriberId],
    );
    expect(jobs.rows[0]!.n).toBe(3);
  });

  test('day and month alerts are not folded: one e-mail per alert', async () => {
    const s = await subscriberWithContacts(db, ['day@fold.example']);
    for (const level of LEVELS) {
      await db.owner.query(`select api.record_usage_alert($1, 'day', '2026-11-01T00:00:00Z', $2, 1, 1)`, [
        s.keyId,
        level,
      ]);
    }
    const rows = await deliveries(db, s.subscriberId);
    expect(rows.map((r) => [r.bucket, r.alert_count])).toEqual([
      ['day', 1],
      ['day', 1],
      ['day', 1],
    ]);
  });
});
