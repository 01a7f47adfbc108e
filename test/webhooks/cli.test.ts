import { runCommand, UsageError, helpText, COMMANDS } from '../../server/admin/cli';
import { createTestDatabase, type TestDatabase } from '../support/db';

describe('admin CLI: webhook set / remove / deliveries', () => {
  let db: TestDatabase;
  let sid: string;
  const run = (...argv: string[]) => runCommand(db.owner, argv);
  const saved = { ...process.env };

  beforeAll(async () => {
    db = await createTestDatabase();
    sid = (await db.owner.query<{ id: string }>(`select id from admin.create_subscriber('cli-wh')`)).rows[0]!.id;
  });
  afterEach(() => {
    process.env.WEBHOOK_ALLOW_HTTP = saved.WEBHOOK_ALLOW_HTTP;
    process.env.WEBHOOK_ALLOW_PRIVATE = saved.WEBHOOK_ALLOW_PRIVATE;
    if (saved.WEBHOOK_ALLOW_HTTP === undefined) delete process.env.WEBHOOK_ALLOW_HTTP;
    if (saved.WEBHOOK_ALLOW_PRIVATE === undefined) delete process.env.WEBHOOK_ALLOW_PRIVATE;
  });
  afterAll(() => db.drop());

  test('set prints the secret once; the database holds it encrypted; bar_operator cannot read it', async () => {
    delete process.env.WEBHOOK_ALLOW_HTTP;
    process.env.WEBHOOK_ALLOW_PRIVATE = 'true';
    const out = (await run('webhook', 'set', sid, 'https://127.0.0.1:9/hook')) as Record<string, string>;
    expect(out).toEqual({
      subscriber_id: sid,
      url: 'https://127.0.0.1:9/hook',
      secret: expect.stringMatching(/^whsec_/),
    });
    const stored = (
      await db.owner.query('select secret_encrypted from admin.webhook_endpoints where subscriber_id = $1', [sid])
    ).rows[0] as { secret_encrypted: string };
    expect(stored.secret_encrypted).toMatch(/^v1:/);
    expect(stored.secret_encrypted).not.toContain(out.secret!.slice(6));
    const client = await db.owner.connect();
    try {
      await client.query('begin; set local role bar_operator');
      const visible = await client.query('select subscriber_id, url from admin.webhook_endpoints');
      expect(visible.rows).toEqual([{ subscriber_id: sid, url: 'https://127.0.0.1:9/hook' }]);
      await expect(client.query('select secret_encrypted from admin.webhook_endpoints')).rejects.toThrow(
        /permission denied/,
      );
    } finally {
      await client.query('rollback');
      client.release();
    }
  });

  test('URL rules and bad arguments are usage errors', async () => {
    delete process.env.WEBHOOK_ALLOW_HTTP;
    delete process.env.WEBHOOK_ALLOW_PRIVATE;
    await expect(run('webhook', 'set', sid, 'http://example.com/h')).rejects.toThrow(/URL refused: URL must use https/);
    await expect(run('webhook', 'set', sid, 'https://localhost/h')).rejects.toThrow(/non-public/);
    await expect(run('webhook', 'set', sid, 'https://10.1.2.3/h')).rejects.toThrow(UsageError);
    await expect(run('webhook', 'set', 'nope', 'https://example.com/h')).rejects.toThrow(
      /SUBSCRIBER_ID must be a UUID/,
    );
    await expect(run('webhook', 'set', sid)).rejects.toThrow(UsageError);
    await expect(run('webhook', 'deliveries', '--status', 'lost')).rejects.toThrow(/--status must be/);
  });

  test('deliveries newest first with filters; remove', async () => {
    await db.owner.query('select admin.suspend_subscriber($1)', [sid]);
    await db.owner.query('select admin.activate_subscriber($1)', [sid]);
    const all = (await run('webhook', 'deliveries', '--subscriber', sid)) as { type: string; status: string }[];
    expect(all.map((d) => d.type)).toEqual(['subscriber.activated', 'subscriber.suspended']);
    expect(await run('webhook', 'deliveries', '--status', 'delivered')).toEqual([]);
    expect(((await run('webhook', 'deliveries', '--status', 'pending')) as unknown[]).length).toBe(2);
    expect(await run('webhook', 'remove', sid)).toEqual({ subscriber_id: sid, removed: true });
    expect(await run('webhook', 'remove', sid)).toEqual({ subscriber_id: sid, removed: false });
  });

  test('help lists the webhook commands', () => {
    expect(helpText()).toMatch(/webhook set SUBSCRIBER_ID URL/);
    expect(helpText(COMMANDS.find((c) => c.name === 'webhook deliveries'))).toMatch(/newest first/);
  });
});
