/**
 * The List-Unsubscribe target (RFC 8058) on the partner listener: POST
 * one-click → 200 and no more alerts to that address; GET → a page with a
 * button; no API key; a forged or altered token → 400; limited per client
 * address. Tokens and settings are unit-tested here too.
 */
import request from 'supertest';
import { createPartnerApp } from '../../server/http/app';
import { signUnsubscribeToken, verifyUnsubscribeToken } from '../../server/email/token';
import { emailConfig, parseLinkKey } from '../../server/email/settings';
import { unsubscribeUrl } from '../../server/email/task';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { silentLogger } from '../support/partner';
import { LINK_KEY, deliveries, subscriberWithContacts, testEmailConfig } from './support';

const PATH = '/email/unsubscribe';

describe('unsubscribe links', () => {
  let db: TestDatabase;
  let app: ReturnType<typeof createPartnerApp>;

  beforeAll(async () => {
    db = await createTestDatabase();
    const pool = db.partnerPool();
    app = createPartnerApp({
      config: { env: 'test', trustProxy: true },
      logger: silentLogger,
      pool,
      guard: [(_req, res) => void res.status(401).end()], // partner paths need a key; this one must not
      email: { linkKey: LINK_KEY, pool },
    });
  });
  afterAll(() => db?.drop());

  const tokenFor = (subscriberId: string, email: string) =>
    new URL(unsubscribeUrl(testEmailConfig(), subscriberId, email)).searchParams.get('token')!;
  const state = async (subscriberId: string, email: string) =>
    (
      await db.owner.query<{ state: string }>(
        'select state from admin.alert_contacts where subscriber_id = $1 and email = $2',
        [subscriberId, email],
      )
    ).rows[0]?.state;

  test('one-click POST (RFC 8058 body, no key): 200, unsubscribed, no more e-mails to that address', async () => {
    const s = await subscriberWithContacts(db, ['ops@unsub.example', 'keep@unsub.example']);
    const token = tokenFor(s.subscriberId, 'ops@unsub.example');
    const res = await request(app)
      .post(`${PATH}?token=${token}`)
      .set('Content-Type', 'application/x-www-form-urlencoded')
      .send('List-Unsubscribe=One-Click')
      .expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('<strong>ops@unsub.example</strong> will receive no more');
    expect(await state(s.subscriberId, 'ops@unsub.example')).toBe('unsubscribed');
    expect(await state(s.subscriberId, 'keep@unsub.example')).toBe('active');
    // the next alert is queued for the other address only
    await db.owner.query(`select api.record_usage_alert($1, 'day', '2026-11-24T00:00:00Z', 'warning', 8, 10)`, [
      s.keyId,
    ]);
    expect((await deliveries(db, s.subscriberId)).map((d) => d.email)).toEqual(['keep@unsub.example']);
    // again: still 200 (idempotent); a multipart body or none is accepted too
    await request(app).post(`${PATH}?token=${token}`).expect(200);
    await request(app).post(`${PATH}?token=${token}`).field('List-Unsubscribe', 'One-Click').expect(200);
  });

  test('GET shows a page with a button that POSTs; it changes nothing by itself', async () => {
    const s = await subscriberWithContacts(db, ['look@unsub.example']);
    const token = tokenFor(s.subscriberId, 'look@unsub.example');
    const res = await request(app).get(`${PATH}?token=${token}`).set('Accept', 'text/html').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).toContain('<strong>look@unsub.example</strong>');
    expect(res.text).toMatch(/<form method="post" action="\/email\/unsubscribe\?token=v1\.[^"]+">/);
    expect(res.text).toMatch(/<button type="submit"[^>]*>Unsubscribe<\/button>/);
    expect(await state(s.subscriberId, 'look@unsub.example')).toBe('active');
  });

  test('forged, altered or missing tokens are a 400; nothing changes', async () => {
    const s = await subscriberWithContacts(db, ['victim@unsub.example']);
    const token = tokenFor(s.subscriberId, 'victim@unsub.example');
    const [v, payload, mac] = token.split('.') as [string, string, string];
    const flip = (x: string) => x.slice(0, 5) + (x[5] === 'A' ? 'B' : 'A') + x.slice(6);
    const bad = [
      `${v}.${flip(payload)}.${mac}`, // altered payload
      `${v}.${payload}.${flip(mac)}`, // altered signature
      signUnsubscribeToken(Buffer.alloc(32, 9), { subscriberId: s.subscriberId, email: 'victim@unsub.example' }), // forged
      `v2.${payload}.${mac}`,
      'garbage',
    ];
    for (const t of bad) {
      const post = await request(app)
        .post(`${PATH}?token=${encodeURIComponent(t)}`)
        .expect(400);
      expect(post.body.error).toMatch(/Invalid or altered unsubscribe link/);
      await request(app)
        .get(`${PATH}?token=${encodeURIComponent(t)}`)
        .expect(400);
    }
    await request(app).post(PATH).expect(400);
    await request(app).post(`${PATH}?token=a&token=b`).expect(400);
    expect(await state(s.subscriberId, 'victim@unsub.example')).toBe('active');
    // other methods: 405 naming what is allowed
    const put = await request(app).put(`${PATH}?token=${token}`).expect(405);
    expect(put.headers.allow).toBe('GET, HEAD, POST');
    // a body too large for a one-click POST
    await request(app)
      .post(`${PATH}?token=${token}`)
      .set('Content-Type', 'application/x-www-form-urlencoded')
      .send(`x=${'a'.repeat(5000)}`)
      .expect(413);
  });

  test('a valid token for an address that is no longer a contact: 200, nothing to stop', async () => {
    const s = await subscriberWithContacts(db, ['old@unsub.example']);
    const token = tokenFor(s.subscriberId, 'old@unsub.example');
    await db.owner.query('select admin.set_alert_contacts($1, $2)', [s.subscriberId, ['new@unsub.example']]);
    await request(app).post(`${PATH}?token=${token}`).expect(200);
    expect(await state(s.subscriberId, 'new@unsub.example')).toBe('active');
  });

  test('limited per client address, not per key: the 31st request in a minute from one address is a 429', async () => {
    const from = (ip: string) => request(app).get(`${PATH}?token=bad`).set('X-Forwarded-For', ip);
    for (let i = 0; i < 30; i++) await from('198.51.100.7').expect(400);
    const limited = await from('198.51.100.7').expect(429);
    expect(limited.headers['retry-after']).toBe('60');
    await from('198.51.100.8').expect(400); // another address is not affected
  });
});

describe('unsubscribe tokens and e-mail settings', () => {
  const ref = { subscriberId: '3f2a9c1e-0b4d-4e5f-8a6b-7c8d9e0f1a2b', email: 'ops@acme.example' };

  test('a token round-trips and names exactly the contact; another key does not verify it', () => {
    const token = signUnsubscribeToken(LINK_KEY, ref);
    expect(token).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(verifyUnsubscribeToken(LINK_KEY, token)).toEqual(ref);
    expect(verifyUnsubscribeToken(Buffer.alloc(32, 1), token)).toBeUndefined();
    expect(verifyUnsubscribeToken(LINK_KEY, undefined)).toBeUndefined();
    expect(verifyUnsubscribeToken(LINK_KEY, ['x'])).toBeUndefined();
    expect(verifyUnsubscribeToken(LINK_KEY, 'v1.' + 'a'.repeat(2000))).toBeUndefined();
  });

  test('production lists what is missing; malformed values are errors; development has defaults', () => {
    expect(emailConfig({}, true, '/app', 3000).missing).toEqual([
      'SMTP_URL',
      'MAIL_FROM',
      'PUBLIC_BASE_URL',
      'EMAIL_LINK_KEY',
    ]);
    const full = emailConfig(
      {
        SMTP_URL: 'smtps://u:p@mail.example:465',
        MAIL_FROM: 'Alerts <a@example.com>',
        PUBLIC_BASE_URL: 'https://api.example.com/',
        EMAIL_LINK_KEY: Buffer.alloc(32, 3).toString('base64'),
      },
      true,
      '/app',
      3000,
    );
    expect(full).toMatchObject({
      missing: [],
      publicBaseUrl: 'https://api.example.com',
      outboxDir: '/app/.data/outbox',
    });
    expect(() => emailConfig({ SMTP_URL: 'http://mail.example' }, false, '/app', 3000)).toThrow(
      /smtp:\/\/ or smtps:\/\//,
    );
    expect(() => emailConfig({ PUBLIC_BASE_URL: 'http://api.example.com' }, true, '/app', 3000)).toThrow(/https/);
    expect(() => emailConfig({ PUBLIC_BASE_URL: 'not a url' }, false, '/app', 3000)).toThrow(/PUBLIC_BASE_URL/);
    expect(() => parseLinkKey('c2hvcnQ=')).toThrow(/32 bytes/);
    const dev = emailConfig({ PORT: '4000' }, false, '/app', 4000);
    expect(dev).toMatchObject({ missing: [], publicBaseUrl: 'http://localhost:4000', smtpUrl: undefined });
    expect(dev.linkKey).toHaveLength(32);
  });
});
