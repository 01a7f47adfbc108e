/**
 * 46-credentials.sql and 48-admin.sql: operator actions as bar_operator (the GraphQL endpoint's role;
 * the admin CLI calls the same functions as the owner), the key lookup as bar_partner, and what each
 * role must not do. Through the CLI: test/credentials/admin-cli.test.ts; through GraphQL: test/operator/.
 */
import { createHash } from 'node:crypto';
import { errorOf, familyDatabase, type Tx } from './sql';

const sql = familyDatabase();

interface Subscriber {
  id: string;
  status: string;
  plan_id: string;
  subscription_ends_at: Date | null;
  updated_at: Date;
}
interface Issued {
  id: string;
  api_key: string;
  subscriber_id: string;
  key_prefix: string;
  status: string;
}

async function subscriber(tx: Tx, plan = 'gold'): Promise<Subscriber> {
  await tx.as('bar_operator', 'select admin.create_plan($1, 10, 100, 1000)', [plan]);
  const [s] = await tx.as<Subscriber>('bar_operator', "select * from admin.create_subscriber('Acme', $1)", [plan]);
  return s!;
}
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest();

describe('plans and subscribers', () => {
  test.each([
    ["'Gold', 1, 1, 1", '22023', 'plan name must be 1-40 characters'],
    ["'-x', 1, 1, 1", '22023', 'plan name must be 1-40 characters'],
    [`'${'a'.repeat(41)}', 1, 1, 1`, '22023', 'plan name must be 1-40 characters'],
    ["'ok', 0, 1, 1", '22023', 'plan limits must be positive integers'],
    ["'ok', 1, 1, -5", '22023', 'plan limits must be positive integers'],
  ])('create_plan(%s) is %s', async (args, code, message) => {
    await sql.run(async (tx) => {
      const e = await errorOf(tx, 'bar_operator', `select admin.create_plan(${args})`);
      expect(e.code).toBe(code);
      expect(e.message).toContain(message);
    });
  });

  test('a plan name is taken once; null limits are unlimited; an unknown plan is P0002', async () => {
    await sql.run(async (tx) => {
      const [plan] = await tx.as<{ per_minute: number | null }>(
        'bar_operator',
        "select * from admin.create_plan('free', null, null, 5)",
      );
      expect(plan!.per_minute).toBeNull();
      expect(await errorOf(tx, 'bar_operator', "select admin.create_plan('free', 1, 1, 1)")).toEqual({
        code: '23505',
        message: 'plan "free" already exists',
      });
      expect(await errorOf(tx, 'bar_operator', "select admin.create_subscriber('Acme', 'platinum')")).toEqual({
        code: 'P0002',
        message: 'unknown plan "platinum"',
      });
      expect((await errorOf(tx, 'bar_operator', "select admin.create_subscriber('  ', 'free')")).code).toBe('22023');
    });
  });

  test('suspend, activate, set plan and end: each returns the updated row', async () => {
    await sql.run(async (tx) => {
      const s = await subscriber(tx);
      await tx.as('bar_operator', "select admin.create_plan('silver', 1, 2, 3)");
      const one = async (q: string, params: unknown[] = []) => (await tx.as<Subscriber>('bar_operator', q, params))[0]!;
      expect((await one('select * from admin.suspend_subscriber($1)', [s.id])).status).toBe('suspended');
      expect((await one('select * from admin.activate_subscriber($1)', [s.id])).status).toBe('active');
      const moved = await one("select * from admin.set_subscriber_plan($1, 'silver')", [s.id]);
      expect(moved.plan_id).not.toBe(s.plan_id);
      const ends = await one("select * from admin.set_subscription_ends_at($1, '2027-01-01Z')", [s.id]);
      expect(ends.subscription_ends_at!.toISOString()).toBe('2027-01-01T00:00:00.000Z');
      expect(ends.status).toBe('active'); // setting the end leaves the status alone
      expect(
        (await one('select * from admin.set_subscription_ends_at($1, null)', [s.id])).subscription_ends_at,
      ).toBeNull();
      const unknown = await errorOf(tx, 'bar_operator', 'select admin.suspend_subscriber(gen_random_uuid())');
      expect(unknown.code).toBe('P0002');
    });
  });
});

describe('keys', () => {
  test('issue_key: the key once, its prefix and hash stored; api.authenticate finds it by hash as bar_partner', async () => {
    await sql.run(async (tx) => {
      const s = await subscriber(tx);
      const [k] = await tx.as<Issued>('bar_operator', 'select * from admin.issue_key($1)', [s.id]);
      expect(k!.api_key).toMatch(/^pbk_[A-Za-z0-9_-]{43}$/);
      expect(k!.key_prefix).toBe(k!.api_key.slice(0, 12));
      const [stored] = await tx.query<{ key_hash: Buffer }>('select key_hash from admin.api_keys where id = $1', [
        k!.id,
      ]);
      expect(stored!.key_hash.equals(sha256(k!.api_key))).toBe(true);
      const found = await tx.as('bar_partner', 'select * from api.authenticate($1)', [sha256(k!.api_key)]);
      expect(found).toEqual([
        expect.objectContaining({
          key_id: k!.id,
          subscriber_id: s.id,
          key_status: 'active',
          subscriber_status: 'active',
          plan: 'gold',
          per_minute: 10,
          per_day: 100,
          per_month: 1000,
        }),
      ]);
      expect(await tx.as('bar_partner', 'select * from api.authenticate($1)', [sha256(`${k!.api_key}x`)])).toEqual([]);
      const unknown = await errorOf(tx, 'bar_operator', 'select admin.issue_key(gen_random_uuid())');
      expect(unknown.code).toBe('P0002');
    });
  });

  test('revoke_key is final: revoking again returns the key unchanged; an unknown key is P0002', async () => {
    await sql.run(async (tx) => {
      const s = await subscriber(tx);
      const [k] = await tx.as<Issued>('bar_operator', 'select * from admin.issue_key($1)', [s.id]);
      const [first] = await tx.as<{ status: string; revoked_at: Date }>(
        'bar_operator',
        'select status, revoked_at from admin.revoke_key($1)',
        [k!.id],
      );
      expect(first!.status).toBe('revoked');
      await tx.query("update admin.api_keys set revoked_at = revoked_at - interval '1 day' where id = $1", [k!.id]);
      const [again] = await tx.as<{ status: string; revoked_at: Date }>(
        'bar_operator',
        'select status, revoked_at from admin.revoke_key($1)',
        [k!.id],
      );
      expect(again!.revoked_at.getTime()).toBe(first!.revoked_at.getTime() - 86_400_000);
      expect((await errorOf(tx, 'bar_operator', 'select admin.revoke_key(gen_random_uuid())')).code).toBe('P0002');
    });
  });

  test('create_operator (owner only): a token once, stored as a hash; the lookup finds it as bar_operator', async () => {
    await sql.run(async (tx) => {
      const [op] = await tx.query<{ id: string; token: string }>("select * from admin.create_operator('alice')");
      expect(op!.token).toMatch(/^pbo_/);
      const found = await tx.as('bar_operator', 'select * from private.operator_by_token_hash($1)', [
        sha256(op!.token),
      ]);
      expect(found).toEqual([{ id: op!.id, name: 'alice' }]);
      expect((await errorOf(tx, 'bar_operator', "select admin.create_operator('  alice ')")).code).toBe('42501');
      expect(await errorOf(tx, 'owner', "select admin.create_operator(' alice ')")).toEqual({
        code: '23505',
        message: 'operator "alice" already exists',
      });
    });
  });
});

describe('privileges', () => {
  test.each([
    ['bar_operator', "select admin.create_operator('x')"],
    ['bar_operator', 'select key_hash from admin.api_keys'],
    ['bar_operator', 'select * from admin.operators'],
    ['bar_operator', "insert into admin.plans (name) values ('x')"],
    ['bar_operator', "update admin.subscribers set status = 'active'"],
    ['bar_operator', "select * from api.authenticate('\\x00')"],
    ['bar_operator', "select private.new_secret('x')"],
    ['bar_partner', 'select admin.issue_key(gen_random_uuid())'],
    ['bar_partner', "select admin.create_plan('x', 1, 1, 1)"],
    ['bar_partner', 'select * from admin.plans'],
    ['bar_partner', "select * from private.operator_by_token_hash('\\x00')"],
  ] as const)('%s may not: %s', async (role, query) => {
    await sql.run(async (tx) => {
      expect((await errorOf(tx, role, query)).code).toBe('42501');
    });
  });

  test('bar_operator reads keys without their hash', async () => {
    await sql.run(async (tx) => {
      const s = await subscriber(tx);
      await tx.as('bar_operator', 'select admin.issue_key($1)', [s.id]);
      const rows = await tx.as('bar_operator', 'select id, key_prefix, status from admin.api_keys');
      expect(rows).toHaveLength(1);
    });
  });
});
