/**
 * The embedded default: without SMTP_URL, alert e-mails are written as .eml
 * files to the outbox folder and logged. Also the task's error paths and the
 * /metrics names.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { metricsText } from '../../server/metrics';
import { emailSendTask } from '../../server/email/task';
import { createMailer } from '../../server/email/transport';
import { render } from '../../server/email/render';
import { deliveries, startEmailRunner, subscriberWithContacts, testEmailConfig, waitFor } from './support';

describe('the .eml outbox (no SMTP_URL)', () => {
  let db: TestDatabase;
  let dir: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), 'outbox-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await db?.drop();
  });

  test('an alert becomes an .eml file with both parts and the unsubscribe headers', async () => {
    const s = await subscriberWithContacts(db, ['ops@outbox.example']);
    const r = await startEmailRunner(db, testEmailConfig({ outboxDir: path.join(dir, 'nested') }));
    try {
      await db.owner.query(
        `select api.record_usage_alert($1, 'minute', '2026-11-24T10:15:00Z', 'limit_reached', 10, 10)`,
        [s.keyId],
      );
      const rows = await waitFor(async () => {
        const d = await deliveries(db, s.subscriberId);
        return d[0]?.status === 'sent' ? d : undefined;
      });
      expect(rows[0]!.last_result).toMatch(/^written to .*\.eml$/);
    } finally {
      await r.stop();
    }
    const files = await readdir(path.join(dir, 'nested'));
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/\.eml$/);
    const raw = await readFile(path.join(dir, 'nested', files[0]!), 'utf8');
    const mail = await simpleParser(raw);
    expect(mail.subject).toBe('[Bar Data API] Limit reached: 100% of your minute limit used');
    expect(mail.to && !Array.isArray(mail.to) ? mail.to.text : '').toBe('ops@outbox.example');
    expect(mail.text).toContain('2026-11-24T10:16:00Z'); // the minute window's reset
    expect(mail.html).toContain('<code>' + s.keyPrefix);
    expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click$/m);
  });

  test('error paths: a job without delivery_id fails; an unknown delivery is a no-op; a template needs every value', async () => {
    const mailer = createMailer(testEmailConfig({ outboxDir: dir }));
    const task = emailSendTask({ pool: db.owner, mailer, config: testEmailConfig() });
    const helpers = { job: { attempts: 1, max_attempts: 14 } } as never;
    await expect(task({}, helpers)).rejects.toThrow(/payload without delivery_id/);
    await expect(task({ delivery_id: '00000000-0000-0000-0000-000000000000' }, helpers)).resolves.toBeUndefined();
    expect(() => render('unsubscribed-page.html', {})).toThrow(/no value for \{\{email\}\}/);
    expect(render('unsubscribed-page.html', { email: '<b>x@y.example</b>' })).toContain(
      '&lt;b&gt;x@y.example&lt;/b&gt;',
    );
    mailer.close();
  });

  test('/metrics names e-mails sent and failed', async () => {
    const { body } = await metricsText();
    expect(body).toMatch(/^# TYPE partner_emails_sent_total counter$/m);
    expect(body).toMatch(/^# TYPE partner_emails_failed_total counter$/m);
  });
});
