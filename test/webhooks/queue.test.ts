import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startWebhookRunner, type WebhookRunner } from '../../server/webhooks/runner';
import { webhookSettings } from '../../server/webhooks/settings';
import { setWebhookEndpoint } from '../../server/webhooks/endpoints';
import { WebhookUrlError } from '../../server/webhooks/address';

const open = webhookSettings({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true' });

interface Seen {
  id: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

describe('webhook events through graphile-worker to a local receiver', () => {
  let db: TestDatabase;
  let server: http.Server;
  let url: string;
  const seen: Seen[] = [];
  let answers: number[] = [];
  const runners: WebhookRunner[] = [];

  const start = async (settings = open) => {
    const r = await startWebhookRunner({ databaseUrl: db.url, settings, pollInterval: 100 });
    runners.push(r);
    return r;
  };
  const stopAll = async () => {
    for (const r of runners.splice(0)) await r.stop();
  };
  const subscriber = async () => {
    const { rows } = await db.owner.query<{ id: string }>(
      `select id from admin.create_subscriber('wh-' || gen_random_uuid())`,
    );
    const sid = rows[0]!.id;
    const key = await db.owner.query<{ id: string }>('select id from admin.issue_key($1)', [sid]);
    return { sid, keyId: key.rows[0]!.id };
  };
  const waitFor = async <T>(check: () => Promise<T | undefined>, ms = 15_000): Promise<T> => {
    const until = Date.now() + ms;
    for (;;) {
      const v = await check();
      if (v !== undefined) return v;
      if (Date.now() > until) throw new Error('timed out waiting');
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const statuses = async (sid: string) =>
    (
      await db.owner.query<{ id: string; type: string; status: string; attempts: number; last_error: string | null }>(
        'select id, type, status, attempts, last_error from admin.webhook_deliveries where subscriber_id = $1 order by created_at, id',
        [sid],
      )
    ).rows;
  const allDelivered = (sid: string, n: number) => async () => {
    const rows = await statuses(sid);
    return rows.length === n && rows.every((r) => r.status === 'delivered') ? rows : undefined;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ id: String(req.headers['webhook-id']), headers: req.headers, body });
        res.statusCode = answers.shift() ?? 204;
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterEach(stopAll);
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await db.drop();
  });

  test('alerts crossing 80/90/100% deliver three events with valid Standard Webhooks signatures', async () => {
    const { sid, keyId } = await subscriber();
    const { secret } = await setWebhookEndpoint(db.owner, open, sid, url);
    expect(secret).toMatch(/^whsec_/);
    await start();
    for (const [level, used] of [
      ['warning', 80],
      ['high_warning', 90],
      ['limit_reached', 100],
    ] as const) {
      await db.owner.query(`select api.record_usage_alert($1, 'day', date_trunc('day', now()), $2, $3, 100)`, [
        keyId,
        level,
        used,
      ]);
    }
    const rows = await waitFor(allDelivered(sid, 3));
    const wh = new Webhook(secret);
    const mine = seen.filter((s) => rows.some((r) => r.id === s.id));
    expect(mine).toHaveLength(3);
    const events = mine.map((s) => wh.verify(s.body, s.headers as Record<string, string>) as Record<string, unknown>);
    expect(events.map((e) => e.type).sort()).toEqual(['usage.high_warning', 'usage.limit_reached', 'usage.warning']);
    for (const e of events) {
      expect(e).toMatchObject({ data: { key_id: keyId, subscriber_id: sid, bucket: 'day', limit: 100 } });
      expect(rows.map((r) => r.id)).toContain(e.id);
    }
    // a wrong secret does not verify
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(
        mine[0]!.body,
        mine[0]!.headers as Record<string, string>,
      ),
    ).toThrow();
  });

  test('500 then 200: the same webhook-id twice, then delivered', async () => {
    const { sid } = await subscriber();
    await setWebhookEndpoint(db.owner, open, sid, url);
    seen.length = 0;
    answers = [500];
    await start();
    await db.owner.query('select admin.suspend_subscriber($1)', [sid]);
    // graphile-worker waits e^1 s after the first failure
    const rows = await waitFor(allDelivered(sid, 1));
    expect(rows[0]).toMatchObject({ type: 'subscriber.suspended', attempts: 2 });
    expect(seen.map((s) => s.id)).toEqual([rows[0]!.id, rows[0]!.id]);
  });

  test('a delivery pending while no runner runs is delivered after a runner starts', async () => {
    const { sid, keyId } = await subscriber();
    await setWebhookEndpoint(db.owner, open, sid, url);
    const r = await start();
    await r.stop();
    runners.splice(0);
    await db.owner.query('select admin.revoke_key($1)', [keyId]);
    await new Promise((res) => setTimeout(res, 300));
    expect((await statuses(sid)).map((x) => x.status)).toEqual(['pending']);
    await start();
    const rows = await waitFor(allDelivered(sid, 1));
    expect(rows[0]!.type).toBe('key.revoked');
  });

  test('two runners deliver each event once', async () => {
    const { sid } = await subscriber();
    await setWebhookEndpoint(db.owner, open, sid, url);
    seen.length = 0;
    await Promise.all([start(), start()]);
    for (let i = 0; i < 5; i++) {
      await db.owner.query('select admin.suspend_subscriber($1)', [sid]);
      await db.owner.query('select admin.activate_subscriber($1)', [sid]);
    }
    const rows = await waitFor(allDelivered(sid, 10));
    await new Promise((res) => setTimeout(res, 500));
    const ids = seen.map((s) => s.id);
    expect(ids.sort()).toEqual(rows.map((r) => r.id).sort());
  });

  test('a loopback URL is refused when private addresses are not allowed', async () => {
    const { sid } = await subscriber();
    await setWebhookEndpoint(db.owner, open, sid, url);
    seen.length = 0;
    await start({ ...open, allowPrivate: false });
    await db.owner.query('select admin.suspend_subscriber($1)', [sid]);
    const rows = await waitFor(async () => {
      const r = await statuses(sid);
      return r[0] && r[0].attempts >= 1 ? r : undefined;
    });
    expect(rows[0]).toMatchObject({ status: 'pending' });
    expect(rows[0]!.last_error).toMatch(/refused: .*non-public/);
    expect(seen).toHaveLength(0);
  });

  test('webhook set URL rules: https only, no loopback, unknown subscriber', async () => {
    const { sid } = await subscriber();
    const strict = { ...open, allowHttp: false, allowPrivate: false };
    await expect(setWebhookEndpoint(db.owner, strict, sid, 'http://example.com/h')).rejects.toThrow(WebhookUrlError);
    await expect(setWebhookEndpoint(db.owner, strict, sid, 'https://127.0.0.1/h')).rejects.toThrow(/non-public/);
    await expect(setWebhookEndpoint(db.owner, strict, sid, 'https://[::1]/h')).rejects.toThrow(/non-public/);
    await expect(setWebhookEndpoint(db.owner, strict, sid, 'not a url')).rejects.toThrow(/not a valid URL/);
    await expect(setWebhookEndpoint(db.owner, open, '00000000-0000-0000-0000-000000000000', url)).rejects.toThrow(
      /unknown subscriber/,
    );
    // no endpoint, no event
    await db.owner.query('select admin.suspend_subscriber($1)', [sid]);
    expect(await statuses(sid)).toEqual([]);
  });
});
