/**
 * Usage-alert e-mails end to end: alert recorded → delivery rows and jobs in
 * the same transaction → the shared graphile-worker runner → nodemailer's SMTP
 * pool → a real SMTP server in this process (smtp-server + mailparser).
 */
import request from 'supertest';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { awaitRoomInMinute, bearer, createPlan, startPartner } from '../support/partner';
import { registry } from '../../server/metrics';
import { verifyUnsubscribeToken } from '../../server/email/token';
import {
  LINK_KEY,
  TestSmtp,
  deliveries,
  startEmailRunner,
  subscriberWithContacts,
  testEmailConfig,
  waitFor,
} from './support';

async function counter(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = await registry.getSingleMetric(name)?.get();
  return (metric?.values ?? [])
    .filter((v) => Object.entries(labels).every(([k, l]) => (v.labels as Record<string, string>)[k] === l))
    .reduce((sum, v) => sum + v.value, 0);
}

describe('usage-alert e-mails over SMTP', () => {
  let db: TestDatabase;
  let smtp: TestSmtp;
  const running: { stop(): Promise<void> }[] = [];
  const start = async (retryForMs?: number) => {
    const r = await startEmailRunner(db, testEmailConfig({ smtpUrl: smtp.url }), retryForMs);
    running.push(r);
    return r;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    smtp = await TestSmtp.start();
  });
  afterEach(async () => {
    for (const r of running.splice(0)) await r.stop();
  });
  afterAll(async () => {
    await smtp?.stop();
    await db?.drop();
  });

  const alert = (keyId: string, bucket: string, level: string, used: number, limit: number, windowStart: string) =>
    db.owner.query('select api.record_usage_alert($1, $2, $3, $4, $5, $6) as created', [
      keyId,
      bucket,
      windowStart,
      level,
      used,
      limit,
    ]);
  const allSettled = (sid: string, n: number) => async () => {
    const rows = await deliveries(db, sid);
    return rows.length === n && rows.every((r) => r.status !== 'pending') ? rows : undefined;
  };

  test('one mail per active contact with text and HTML parts, the headers and the numbers', async () => {
    const s = await subscriberWithContacts(db, ['Ops@Acme.example', 'cto@acme.example', 'gone@acme.example']);
    await db.owner.query(`select api.unsubscribe_alert_contact($1, 'gone@acme.example')`, [s.subscriberId]);
    const sentBefore = await counter('partner_emails_sent_total');
    await start();
    await alert(s.keyId, 'day', 'limit_reached', 5000, 5000, '2026-11-24T00:00:00Z');
    const rows = await waitFor(allSettled(s.subscriberId, 2));
    expect(rows.map((r) => [r.email, r.status, r.attempts, r.alert_count])).toEqual([
      ['cto@acme.example', 'sent', 1, 1],
      ['ops@acme.example', 'sent', 1, 1],
    ]);
    expect(smtp.to('gone@acme.example')).toEqual([]);
    const [got] = smtp.to('ops@acme.example');
    expect(smtp.to('ops@acme.example')).toHaveLength(1);
    const mail = got!.mail;
    expect(mail.subject).toBe('[Bar Data API] Limit reached: 100% of your day limit used');
    expect(mail.from?.value).toEqual([{ name: 'Bar Data API', address: 'alerts@bars.example' }]);
    expect(mail.messageId).toBe(`<${rows[1]!.id}@bars.example>`);
    expect(mail.headers.get('auto-submitted')).toBe('auto-generated');
    for (const part of [mail.text!, mail.html as string]) {
      expect(part).toContain(s.keyPrefix);
      expect(part).not.toContain(s.apiKey);
      expect(part).toContain('2026-11-24T00:00:00Z'); // window start, UTC ISO 8601
      expect(part).toContain('2026-11-25T00:00:00Z'); // reset
      expect(part).toMatch(/5000 requests/);
      expect(part).toMatch(/Acme/);
    }
    expect(mail.text).toMatch(/Limit:\s+5000 requests/);
    expect(mail.html).toMatch(/<td>day<\/td>/);
    // RFC 8058: one https URL and the one-click header
    const unsubscribe = /^List-Unsubscribe:\s+<([^>]+)>/m.exec(got!.raw)![1]!;
    expect(got!.raw).toMatch(/^List-Unsubscribe:\s+<https:\/\/api\.bars\.example\/email\/unsubscribe\?token=v1\./m);
    expect(got!.raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/m);
    const token = new URL(unsubscribe).searchParams.get('token');
    expect(verifyUnsubscribeToken(LINK_KEY, token)).toEqual({
      subscriberId: s.subscriberId,
      email: 'ops@acme.example',
    });
    expect(await counter('partner_emails_sent_total')).toBe(sentBefore + 2);
  });

  test('end to end: partner requests exhaust a small plan, the contact gets the 80, 90 and 100 % e-mails', async () => {
    await awaitRoomInMinute(10_000);
    const plan = await createPlan(db.owner, 5);
    const s = await subscriberWithContacts(db, ['e2e@acme.example']);
    await db.owner.query('select admin.set_subscriber_plan($1, $2)', [s.subscriberId, plan]);
    const partner = await startPartner(db);
    await start();
    try {
      for (let i = 0; i < 5; i++)
        await request(partner.app).get('/api/v1/partner/test_endpoint').set(bearer(s.apiKey)).expect(200);
      await request(partner.app).get('/api/v1/partner/test_endpoint').set(bearer(s.apiKey)).expect(429);
      await partner.guard.alerts.settle();
    } finally {
      await partner.close();
    }
    await waitFor(allSettled(s.subscriberId, 3));
    expect(
      smtp
        .to('e2e@acme.example')
        .map((m) => m.mail.subject)
        .sort(),
    ).toEqual([
      '[Bar Data API] High usage warning: 90% of your minute limit used',
      '[Bar Data API] Limit reached: 100% of your minute limit used',
      '[Bar Data API] Warning: 80% of your minute limit used',
    ]);
  });

  test('an SMTP 421 is retried with backoff, then the mail is delivered once', async () => {
    const s = await subscriberWithContacts(db, ['busy@acme.example']);
    smtp.replies.set('busy@acme.example', [421]);
    const temporaryBefore = await counter('partner_emails_failed_total', { reason: 'temporary' });
    await start();
    await alert(s.keyId, 'month', 'warning', 800, 1000, '2026-11-01T00:00:00Z');
    const rows = await waitFor(allSettled(s.subscriberId, 1));
    expect(rows[0]).toMatchObject({ status: 'sent', attempts: 2 });
    expect(smtp.to('busy@acme.example')).toHaveLength(1);
    expect(smtp.to('busy@acme.example')[0]!.mail.subject).toBe('[Bar Data API] Warning: 80% of your month limit used');
    expect(await counter('partner_emails_failed_total', { reason: 'temporary' })).toBe(temporaryBefore + 1);
  });

  test('a 550 marks the contact bouncing and nothing more is sent to it until an operator clears it', async () => {
    const s = await subscriberWithContacts(db, ['nobody@acme.example', 'ops2@acme.example']);
    smtp.refused.add('nobody@acme.example');
    await start();
    await alert(s.keyId, 'day', 'warning', 80, 100, '2026-11-20T00:00:00Z');
    let rows = await waitFor(allSettled(s.subscriberId, 2));
    expect(rows.find((r) => r.email === 'nobody@acme.example')).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_response_code: 550,
    });
    const contact = await db.owner.query(`select state, state_reason from admin.alert_contacts where email = $1`, [
      'nobody@acme.example',
    ]);
    expect(contact.rows[0]).toMatchObject({ state: 'bouncing', state_reason: expect.stringMatching(/550/) });
    // the next alert: a mail to the other contact only
    await alert(s.keyId, 'day', 'high_warning', 90, 100, '2026-11-20T00:00:00Z');
    rows = await waitFor(allSettled(s.subscriberId, 3));
    expect(rows.filter((r) => r.email === 'nobody@acme.example')).toHaveLength(1);
    expect(smtp.to('ops2@acme.example')).toHaveLength(2);
    // cleared: mail again
    smtp.refused.delete('nobody@acme.example');
    await db.owner.query(`select admin.clear_contact_bounce($1, 'nobody@acme.example')`, [s.subscriberId]);
    await alert(s.keyId, 'day', 'limit_reached', 100, 100, '2026-11-20T00:00:00Z');
    await waitFor(allSettled(s.subscriberId, 5));
    expect(smtp.to('nobody@acme.example')).toHaveLength(1);
  });

  test('a mail due while its contact unsubscribed is not sent (failed, with the reason)', async () => {
    const s = await subscriberWithContacts(db, ['late@acme.example']);
    await alert(s.keyId, 'day', 'warning', 80, 100, '2026-11-19T00:00:00Z'); // queued, no runner yet
    await db.owner.query(`select api.unsubscribe_alert_contact($1, 'late@acme.example')`, [s.subscriberId]);
    await start();
    const rows = await waitFor(allSettled(s.subscriberId, 1));
    expect(rows[0]).toMatchObject({
      status: 'failed',
      attempts: 0,
      last_result: 'not sent: the contact is unsubscribed',
    });
    expect(smtp.to('late@acme.example')).toEqual([]);
  });

  test('two runners and a restart in the middle: one mail per alert and address', async () => {
    const s = await subscriberWithContacts(db, ['a@twice.example', 'b@twice.example']);
    const first = await start();
    await start();
    for (let day = 1; day <= 10; day++) {
      await alert(s.keyId, 'day', 'warning', 80, 100, `2026-10-${String(day).padStart(2, '0')}T00:00:00Z`);
      if (day === 4) {
        // one instance stops (a deploy) and another starts while mails are being sent
        await waitFor(() => (smtp.to('a@twice.example').length > 0 ? true : undefined));
        await first.stop();
        running.splice(running.indexOf(first), 1);
        await start();
      }
    }
    const rows = await waitFor(allSettled(s.subscriberId, 20));
    expect(rows.every((r) => r.status === 'sent' && r.attempts === 1)).toBe(true);
    await new Promise((r) => setTimeout(r, 500)); // nothing late
    for (const address of ['a@twice.example', 'b@twice.example']) {
      const ids = smtp.to(address).map((m) => m.mail.messageId);
      expect(ids).toHaveLength(10);
      expect(new Set(ids).size).toBe(10);
    }
    // the same alert recorded again (another instance) adds nothing
    const again = await alert(s.keyId, 'day', 'warning', 80, 100, '2026-10-01T00:00:00Z');
    expect(again.rows[0].created).toBe(false);
    expect(await deliveries(db, s.subscriberId)).toHaveLength(20);
  });

  test('connection refused is a temporary failure; past 24 h it fails for good', async () => {
    const s = await subscriberWithContacts(db, ['down@acme.example']);
    const closed = await TestSmtp.start();
    const url = closed.url;
    await closed.stop(); // nothing listens there now
    const r = await startEmailRunner(db, testEmailConfig({ smtpUrl: url }));
    running.push(r);
    await alert(s.keyId, 'day', 'warning', 80, 100, '2026-11-18T00:00:00Z');
    const rows = await waitFor(async () => {
      const d = await deliveries(db, s.subscriberId);
      return d[0] && d[0].attempts >= 1 ? d : undefined;
    });
    expect(rows[0]).toMatchObject({ status: 'pending', last_response_code: null });
    expect(rows[0]!.last_result).toMatch(/ECONNREFUSED|connect/i);
    await r.stop();
    running.splice(0);
    // due more than 24 h ago: the next failure is the last
    await db.owner.query(`update admin.email_deliveries set send_after = now() - interval '25 hours' where id = $1`, [
      rows[0]!.id,
    ]);
    await db.owner.query(`update graphile_worker._private_jobs set run_at = now() where key = $1`, [
      `email:${rows[0]!.id}`,
    ]);
    const expiredBefore = await counter('partner_emails_failed_total', { reason: 'expired' });
    const again = await startEmailRunner(db, testEmailConfig({ smtpUrl: url }));
    running.push(again);
    const done = await waitFor(allSettled(s.subscriberId, 1));
    expect(done[0]).toMatchObject({ status: 'failed', attempts: 2 });
    expect(await counter('partner_emails_failed_total', { reason: 'expired' })).toBe(expiredBefore + 1);
  });
});
