/**
 * The e-mail that tells a subscriber's alert contacts a deprecation affects them
 * (docs/COMPATIBILITY.md "How partners are told"), end to end with a deprecation declared here
 * and an injected clock: a deprecated call → the tally's flush → admin.deprecation_notices and a
 * deprecation_email job in the same statement → the shared runner → a real SMTP server. Once per
 * subscriber, deprecation and address; unsubscribed contacts get nothing.
 */
import request from 'supertest';
import { E, type Deprecation } from '../../server/contract/endpoints';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { bearer, startPartner, type PartnerInstance } from '../support/partner';
import { TestSmtp, startEmailRunner, subscriberWithContacts, testEmailConfig, waitFor } from './support';

const DEPRECATION: Deprecation = {
  endpoint: E.cities,
  parameter: 'q',
  since: '2026-01-15',
  sunset: '2026-07-15',
  replacement: 'GET search?type=city&q=',
  changelog: '/api/v1/partner/changelog#cities-q',
};

describe('deprecation e-mails to alert contacts', () => {
  let db: TestDatabase;
  let smtp: TestSmtp;
  let partner: PartnerInstance;
  let runner: { stop(): Promise<void> };
  const now = Date.parse('2026-03-10T12:00:00Z');

  beforeAll(async () => {
    db = await createTestDatabase();
    smtp = await TestSmtp.start();
    partner = await startPartner(db, { deprecations: { list: [DEPRECATION], now: () => now } });
    runner = await startEmailRunner(db, testEmailConfig({ smtpUrl: smtp.url }));
  });
  afterAll(async () => {
    await runner?.stop();
    await partner?.close();
    await smtp?.stop();
    await db?.drop();
  });

  const notices = async (subscriberId: string) =>
    (
      await db.owner.query<{ email: string; status: string; attempts: number }>(
        'select email, status, attempts from admin.deprecation_notices where subscriber_id = $1 order by email',
        [subscriberId],
      )
    ).rows;
  const call = async (apiKey: string, url = '/api/v1/partner/cities?q=aus') => {
    await request(partner.app).get(url).set(bearer(apiKey)).expect(200);
  };

  test('the first deprecated call mails each active contact once: what, sunset, replacement, unsubscribe', async () => {
    const s = await subscriberWithContacts(db, ['ops@acme.example', 'gone@acme.example']);
    await db.owner.query(`select api.unsubscribe_alert_contact($1, 'gone@acme.example')`, [s.subscriberId]);
    await call(s.apiKey, '/api/v1/partner/cities?state=TX'); // not deprecated: nothing
    await partner.guard.deprecatedCalls.flush();
    expect(await notices(s.subscriberId)).toEqual([]);

    await call(s.apiKey);
    await call(s.apiKey);
    await partner.guard.deprecatedCalls.flush();
    const rows = await waitFor(async () => {
      const r = await notices(s.subscriberId);
      return r.length === 1 && r[0]!.status !== 'pending' ? r : undefined;
    });
    expect(rows).toEqual([{ email: 'ops@acme.example', status: 'sent', attempts: 1 }]);
    expect(smtp.to('gone@acme.example')).toEqual([]);
    const mails = smtp.to('ops@acme.example');
    expect(mails).toHaveLength(1);
    const mail = mails[0]!.mail;
    expect(mail.subject).toBe('[Bar Data API] Deprecated: GET /cities parameter q stops working on 2026-07-15');
    expect(mail.text).toContain('Use instead:   GET search?type=city&q=');
    expect(mail.text).toContain('Details:       https://api.bars.example/api/v1/partner/changelog#cities-q');
    expect(mail.text).toContain('First call:    2026-03-10T12:00:00Z');
    expect(mail.html).toContain('<code>GET /cities parameter q</code>');
    expect(mails[0]!.raw).toMatch(
      /^List-Unsubscribe:\s+<https:\/\/api\.bars\.example\/email\/unsubscribe\?token=v1\./m,
    );
    expect(mails[0]!.raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/m);

    // later calls (any key of the subscriber) send nothing more
    await call(s.apiKey);
    await partner.guard.deprecatedCalls.flush();
    const { rows: jobs } = await db.owner.query<{ n: number }>(
      `select count(*)::int as n from graphile_worker.jobs where task_identifier = 'deprecation_email'`,
    );
    expect(jobs[0]!.n).toBe(0);
    expect(await notices(s.subscriberId)).toHaveLength(1);
    expect(smtp.to('ops@acme.example')).toHaveLength(1);
  }, 30_000);

  test('a subscriber without contacts: counted, no e-mail, no error', async () => {
    const s = await subscriberWithContacts(db, []);
    await call(s.apiKey);
    await partner.guard.deprecatedCalls.flush();
    expect(partner.guard.deprecatedCalls.pending).toBe(0); // written, not kept for a retry
    expect(await notices(s.subscriberId)).toEqual([]);
    const { rows } = await db.owner.query<{ calls: number }>(
      'select calls::int from admin.deprecated_calls where subscriber_id = $1',
      [s.subscriberId],
    );
    expect(rows).toEqual([{ calls: 1 }]);
  });
});
