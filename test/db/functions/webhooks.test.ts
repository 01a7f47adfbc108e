/**
 * 45-webhooks.sql: the endpoint functions as the owner (the admin CLI, the only caller), and the
 * triggers that write one delivery row and one graphile-worker job in the transaction of their cause,
 * each cause made as the role that makes it in production (bar_operator for revocations and
 * subscriber status, bar_partner for usage alerts). Signing, the queue and delivery end to end:
 * test/webhooks/.
 */
import { errorOf, familyDatabase, type Tx } from './sql';

const sql = familyDatabase();

const SECRET = 'v1:c2VjcmV0';

async function subscriber(tx: Tx, endpoint: string | null = 'https://hooks.example.com/in') {
  const [s] = await tx.query<{ id: string }>("select id from admin.create_subscriber('Acme', 'standard')");
  if (endpoint) await tx.query('select admin.set_webhook_endpoint($1, $2, $3)', [s!.id, endpoint, SECRET]);
  return s!.id;
}
async function key(tx: Tx, subscriberId: string) {
  const [k] = await tx.query<{ id: string; key_prefix: string }>('select id, key_prefix from admin.issue_key($1)', [
    subscriberId,
  ]);
  return k!;
}

interface Delivery {
  id: string;
  subscriber_id: string;
  type: string;
  payload: Record<string, unknown>;
  url: string;
  status: string;
  attempts: number;
}
/** Every delivery row with its graphile-worker job (null when none points at it), oldest first. */
const queued = (tx: Tx) =>
  tx.query<Delivery & { job: { task: string; max_attempts: number } | null }>(
    `select d.id, d.subscriber_id, d.type, d.payload, d.url, d.status, d.attempts,
            (select json_build_object('task', j.task_identifier, 'max_attempts', j.max_attempts)
               from graphile_worker.jobs j join graphile_worker._private_jobs pj using (id)
              where pj.payload ->> 'event_id' = d.id::text) as job
       from admin.webhook_deliveries d order by d.created_at, d.type`,
  );
const jobs = async (tx: Tx) =>
  Number(
    (
      await tx.query<{ n: string }>(
        "select count(*) as n from graphile_worker.jobs where task_identifier = 'webhook_deliver'",
      )
    )[0]!.n,
  );

describe('admin.set_webhook_endpoint and admin.remove_webhook_endpoint', () => {
  test('set inserts, then replaces url and secret (created_at kept); remove is true once, then false', async () => {
    await sql.run(async (tx) => {
      const id = await subscriber(tx, null);
      const set = (url: string, secret: string) =>
        tx.as('owner', 'select * from admin.set_webhook_endpoint($1, $2, $3)', [id, url, secret]);
      expect(await set('https://a.example.com/', SECRET)).toEqual([
        { subscriber_id: id, url: 'https://a.example.com/' },
      ]);
      await tx.query(
        "update admin.webhook_endpoints set created_at = '2026-01-01Z', updated_at = '2026-01-01Z' where subscriber_id = $1",
        [id],
      );
      expect(await set('http://b.example.com/hook', 'v1:b3RoZXI=')).toEqual([
        { subscriber_id: id, url: 'http://b.example.com/hook' },
      ]);
      const rows = await tx.query(
        `select url, secret_encrypted, created_at = '2026-01-01Z' as created_kept, updated_at = now() as updated_now
           from admin.webhook_endpoints`,
      );
      expect(rows).toEqual([
        { url: 'http://b.example.com/hook', secret_encrypted: 'v1:b3RoZXI=', created_kept: true, updated_now: true },
      ]);
      const remove = (s: string) => tx.call<boolean>('owner', 'select admin.remove_webhook_endpoint($1)', [s]);
      expect(await remove(id)).toBe(true);
      expect(await remove(id)).toBe(false);
      expect(await remove('00000000-0000-0000-0000-000000000000')).toBe(false);
    });
  });

  test.each([
    ["gen_random_uuid(), 'https://a.example.com/', 'v1:x'", 'P0002', 'unknown subscriber'],
    ["$1, 'ftp://a.example.com/', 'v1:x'", '23514', 'webhook_endpoints_url_check'],
    ["$1, 'a.example.com', 'v1:x'", '23514', 'webhook_endpoints_url_check'],
    ["$1, 'https://a.example.com/', 'whsec_plain'", '23514', 'webhook_endpoints_secret_encrypted_check'],
    ["$1, null, 'v1:x'", '23502', 'null value in column "url"'],
  ])('set_webhook_endpoint(%s) is %s', async (args, code, message) => {
    await sql.run(async (tx) => {
      const id = await subscriber(tx, null);
      const uses = args.includes('$1');
      const e = await errorOf(tx, 'owner', `select admin.set_webhook_endpoint(${args})`, uses ? [id] : []);
      expect(e.code).toBe(code);
      expect(e.message).toContain(message);
      expect(await tx.query('select 1 from admin.webhook_endpoints')).toEqual([]);
    });
  });
});

describe('private.enqueue_webhook', () => {
  test('with an endpoint: one pending delivery (the URL of that moment) and one job for it, 14 attempts', async () => {
    await sql.run(async (tx) => {
      const id = await subscriber(tx);
      const eventId = await tx.call<string>(
        'owner',
        "select private.enqueue_webhook($1, 'key.revoked', '{\"k\": 1}')",
        [id],
      );
      await tx.query("select admin.set_webhook_endpoint($1, 'https://moved.example.com/', $2)", [id, SECRET]);
      expect(await queued(tx)).toEqual([
        {
          id: eventId,
          subscriber_id: id,
          type: 'key.revoked',
          payload: { k: 1 },
          url: 'https://hooks.example.com/in',
          status: 'pending',
          attempts: 0,
          job: { task: 'webhook_deliver', max_attempts: 14 },
        },
      ]);
    });
  });

  test('without an endpoint: null and nothing written; an unknown type writes neither row nor job', async () => {
    await sql.run(async (tx) => {
      const bare = await subscriber(tx, null);
      expect(await tx.call('owner', "select private.enqueue_webhook($1, 'key.revoked', '{}')", [bare])).toBeNull();
      const id = await subscriber(tx);
      const e = await errorOf(tx, 'owner', "select private.enqueue_webhook($1, 'key.created', '{}')", [id]);
      expect(e.code).toBe('23514');
      expect(await queued(tx)).toEqual([]);
      expect(await jobs(tx)).toBe(0);
    });
  });
});

describe('triggers', () => {
  test('webhook_on_key_revoked: a revocation by bar_operator enqueues key.revoked once; revoking again nothing', async () => {
    await sql.run(async (tx) => {
      const id = await subscriber(tx);
      const k = await key(tx, id);
      const [revoked] = await tx.as<{ revoked_at: Date }>(
        'bar_operator',
        'select revoked_at from admin.revoke_key($1)',
        [k.id],
      );
      await tx.as('bar_operator', 'select admin.revoke_key($1)', [k.id]);
      const rows = await queued(tx);
      expect(rows).toEqual([
        expect.objectContaining({
          type: 'key.revoked',
          payload: {
            subscriber_id: id,
            key_id: k.id,
            key_prefix: k.key_prefix,
            revoked_at: expect.any(String),
          },
          job: { task: 'webhook_deliver', max_attempts: 14 },
        }),
      ]);
      expect(new Date(rows[0]!.payload.revoked_at as string).getTime()).toBe(revoked!.revoked_at.getTime());
      expect(await jobs(tx)).toBe(1);
    });
  });

  test('webhook_on_subscriber_status: suspended, then activated; the same status again or a plan change nothing', async () => {
    await sql.run(async (tx) => {
      const id = await subscriber(tx);
      await tx.as('bar_operator', "select admin.create_plan('silver', 1, 2, 3)");
      await tx.as('bar_operator', 'select admin.activate_subscriber($1)', [id]); // already active
      await tx.as('bar_operator', 'select admin.suspend_subscriber($1)', [id]);
      await tx.as('bar_operator', 'select admin.suspend_subscriber($1)', [id]);
      await tx.as('bar_operator', "select admin.set_subscriber_plan($1, 'silver')", [id]);
      await tx.as('bar_operator', 'select admin.activate_subscriber($1)', [id]);
      const rows = await tx.query<{ type: string; payload: unknown }>(
        'select type, payload from admin.webhook_deliveries order by type desc',
      );
      expect(rows).toEqual([
        { type: 'subscriber.suspended', payload: { subscriber_id: id, status: 'suspended' } },
        { type: 'subscriber.activated', payload: { subscriber_id: id, status: 'active' } },
      ]);
      expect(await jobs(tx)).toBe(2);
    });
  });

  test('webhook_on_usage_alert: a new alert recorded by bar_partner enqueues usage.<level>; a repeated one nothing', async () => {
    await sql.run(async (tx) => {
      const id = await subscriber(tx);
      const k = await key(tx, id);
      const alert = () =>
        tx.call<boolean>(
          'bar_partner',
          "select api.record_usage_alert($1, 'minute', '2026-11-23T10:00Z', 'high_warning', 90, 100)",
          [k.id],
        );
      expect(await alert()).toBe(true);
      expect(await alert()).toBe(false);
      const rows = await queued(tx);
      expect(rows).toEqual([
        expect.objectContaining({
          type: 'usage.high_warning',
          payload: {
            subscriber_id: id,
            key_id: k.id,
            bucket: 'minute',
            window_start: expect.any(String),
            level: 'high_warning',
            used: 90,
            limit: 100,
          },
          job: { task: 'webhook_deliver', max_attempts: 14 },
        }),
      ]);
      expect(new Date(rows[0]!.payload.window_start as string).toISOString()).toBe('2026-11-23T10:00:00.000Z');
    });
  });

  test('a subscriber without an endpoint: every cause happens, nothing is written', async () => {
    await sql.run(async (tx) => {
      const id = await subscriber(tx, null);
      const k = await key(tx, id);
      await tx.as('bar_partner', "select api.record_usage_alert($1, 'day', now(), 'warning', 80, 100)", [k.id]);
      await tx.as('bar_operator', 'select admin.revoke_key($1)', [k.id]);
      await tx.as('bar_operator', 'select admin.suspend_subscriber($1)', [id]);
      expect(await tx.query('select status from admin.subscribers where id = $1', [id])).toEqual([
        { status: 'suspended' },
      ]);
      expect(await queued(tx)).toEqual([]);
      expect(await jobs(tx)).toBe(0);
    });
  });

  test('the delivery and its job belong to the transaction of their cause: rolled back with it', async () => {
    await sql.run(async (tx) => {
      const id = await subscriber(tx);
      await tx.query('savepoint cause');
      await tx.as('bar_operator', 'select admin.suspend_subscriber($1)', [id]);
      expect(await queued(tx)).toHaveLength(1);
      expect(await jobs(tx)).toBe(1);
      await tx.query('rollback to savepoint cause');
      expect(await queued(tx)).toEqual([]);
      expect(await jobs(tx)).toBe(0);
    });
  });
});

describe('privileges', () => {
  test.each([
    ['bar_partner', "select admin.set_webhook_endpoint(gen_random_uuid(), 'https://a.example.com/', 'v1:x')"],
    ['bar_partner', 'select admin.remove_webhook_endpoint(gen_random_uuid())'],
    ['bar_partner', "select private.enqueue_webhook(gen_random_uuid(), 'key.revoked', '{}')"],
    ['bar_partner', 'select * from admin.webhook_deliveries'],
    ['bar_partner', 'select url from admin.webhook_endpoints'],
    ['bar_operator', "select admin.set_webhook_endpoint(gen_random_uuid(), 'https://a.example.com/', 'v1:x')"],
    ['bar_operator', 'select admin.remove_webhook_endpoint(gen_random_uuid())'],
    ['bar_operator', "select private.enqueue_webhook(gen_random_uuid(), 'key.revoked', '{}')"],
    ['bar_operator', 'select secret_encrypted from admin.webhook_endpoints'],
    ['bar_operator', "update admin.webhook_deliveries set status = 'delivered'"],
    ['bar_operator', 'delete from admin.webhook_endpoints'],
    ['bar_operator', "select graphile_worker.add_job('webhook_deliver', '{}')"],
  ] as const)('%s may not: %s', async (role, query) => {
    await sql.run(async (tx) => {
      expect((await errorOf(tx, role, query)).code).toBe('42501');
    });
  });

  test('EXECUTE on the endpoint functions and enqueue_webhook: the owner only (the CLI; triggers run as the owner)', async () => {
    await sql.run(async (tx) => {
      const rows = await tx.query(
        `select f::text as fn, has_function_privilege('bar_partner', f, 'execute') as partner,
                has_function_privilege('bar_operator', f, 'execute') as operator
           from unnest(array['admin.set_webhook_endpoint(uuid,text,text)', 'admin.remove_webhook_endpoint(uuid)',
                             'private.enqueue_webhook(uuid,text,jsonb)']::regprocedure[]) f`,
      );
      expect(rows).toEqual([
        { fn: 'admin.set_webhook_endpoint(uuid,text,text)', partner: false, operator: false },
        { fn: 'admin.remove_webhook_endpoint(uuid)', partner: false, operator: false },
        { fn: 'private.enqueue_webhook(uuid,text,jsonb)', partner: false, operator: false },
      ]);
    });
  });

  test('bar_operator reads the endpoints without their secret, and the delivery log', async () => {
    await sql.run(async (tx) => {
      const id = await subscriber(tx);
      await tx.query('select admin.suspend_subscriber($1)', [id]);
      expect(await tx.as('bar_operator', 'select subscriber_id, url from admin.webhook_endpoints')).toEqual([
        { subscriber_id: id, url: 'https://hooks.example.com/in' },
      ]);
      expect(await tx.as('bar_operator', 'select type from admin.webhook_deliveries')).toEqual([
        { type: 'subscriber.suspended' },
      ]);
    });
  });
});
