/**
 * Issue 22: `webhook rotate-secret`: a new secret signs at once, the replaced
 * one keeps signing beside it (two signatures, Standard Webhooks) for 24 h,
 * then only the new one signs. Both verify with the standardwebhooks package.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JobHelpers } from 'graphile-worker';
import { Webhook } from 'standardwebhooks';
import { runCommand } from '../../server/admin/cli';
import { setWebhookEndpoint } from '../../server/webhooks/endpoints';
import { webhookSettings } from '../../server/webhooks/settings';
import { deliverTask } from '../../server/webhooks/task';
import { createTestDatabase, type TestDatabase } from '../support/db';

const open = webhookSettings({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true' });

describe('webhook secret rotation', () => {
  let db: TestDatabase;
  let server: http.Server;
  let url: string;
  const seen: { headers: http.IncomingHttpHeaders; body: string }[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ headers: req.headers, body });
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await db.drop();
  });

  const subscriber = async () => {
    const { rows } = await db.owner.query<{ id: string }>(
      `select id from admin.create_subscriber('rot-' || gen_random_uuid())`,
    );
    const sid = rows[0]!.id;
    const key = await db.owner.query<{ id: string }>('select id from admin.issue_key($1)', [sid]);
    return { sid, keyId: key.rows[0]!.id };
  };
  /** One event delivered by the task itself (no worker needed); returns what the receiver got. */
  const deliverOne = async (keyId: string, sid: string) => {
    await db.owner.query(
      `select api.record_usage_alert($1, 'day', date_trunc('day', now()) + make_interval(secs => $2), 'warning', 80, 100)`,
      [
        keyId,
        seen.length, // a distinct window per event
      ],
    );
    const { rows } = await db.owner.query<{ id: string }>(
      `select id from admin.webhook_deliveries where subscriber_id = $1 and status = 'pending' order by created_at desc limit 1`,
      [sid],
    );
    const before = seen.length;
    const helpers = { job: { attempts: 1, max_attempts: 14 } } as unknown as JobHelpers;
    await deliverTask(db.owner, open)({ event_id: rows[0]!.id }, helpers);
    expect(seen.length).toBe(before + 1);
    return seen[seen.length - 1]!;
  };
  const verifies = (secret: string, got: { headers: http.IncomingHttpHeaders; body: string }) => {
    try {
      new Webhook(secret).verify(got.body, got.headers as Record<string, string>);
      return true;
    } catch {
      return false;
    }
  };

  test('old and new secret both verify for 24 h; then only the new one', async () => {
    const { sid, keyId } = await subscriber();
    const { secret: oldSecret } = await setWebhookEndpoint(db.owner, open, sid, url);
    const rotated = (await runCommand(db.owner, ['webhook', 'rotate-secret', sid])) as Record<string, string>;
    expect(rotated).toEqual({
      subscriber_id: sid,
      url,
      secret: expect.stringMatching(/^whsec_/),
      previous_secret_valid_until: expect.any(String),
    });
    // real time: the old secret's overlap is counted from the database's real now()
    const hours = (Date.parse(rotated.previous_secret_valid_until!) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThanOrEqual(24);
    const newSecret = rotated.secret!;
    expect(newSecret).not.toBe(oldSecret);

    const during = await deliverOne(keyId, sid);
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifies(oldSecret, during)).toBe(true);
    expect(verifies(newSecret, during)).toBe(true);

    // the overlap is over
    await db.owner.query(
      `update admin.webhook_endpoints set previous_secret_expires_at = now() - interval '1 second' where subscriber_id = $1`,
      [sid],
    );
    const after = await deliverOne(keyId, sid);
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifies(newSecret, after)).toBe(true);
    expect(verifies(oldSecret, after)).toBe(false);
  });

  test('webhook set (a new endpoint) forgets a previous secret; rotate without an endpoint is an error', async () => {
    const { sid } = await subscriber();
    await expect(runCommand(db.owner, ['webhook', 'rotate-secret', sid])).rejects.toThrow(/no webhook endpoint/);
    await expect(runCommand(db.owner, ['webhook', 'rotate-secret', 'nope'])).rejects.toThrow(/must be a UUID/);
    await setWebhookEndpoint(db.owner, open, sid, url);
    await runCommand(db.owner, ['webhook', 'rotate-secret', sid]);
    const secrets = async () =>
      (await db.owner.query<{ s: string[] }>('select admin.webhook_signing_secrets($1) as s', [sid])).rows[0]!.s;
    expect(await secrets()).toHaveLength(2);
    await setWebhookEndpoint(db.owner, open, sid, url);
    expect(await secrets()).toHaveLength(1);
  });
});
