import request from 'supertest';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { bearer, createPlan, issueKey, startPartner, type PartnerInstance } from '../support/partner';
import { startOperatorHarness, type OperatorHarness } from './support';

const TEST = '/api/v1/partner/test_endpoint';

describe('operator GraphQL: operator actions (mutations)', () => {
  let db: TestDatabase;
  let ops: OperatorHarness;
  let partner: PartnerInstance;

  beforeAll(async () => {
    db = await createTestDatabase();
    ops = await startOperatorHarness(db);
    partner = await startPartner(db);
  });
  afterAll(async () => {
    await partner?.close();
    await ops?.close();
    await db?.drop();
  });

  /** Polls the partner REST API until it answers `status`; fails if that takes more than `withinMs`. */
  async function expectPartnerStatus(apiKey: string, status: number, error?: string, withinMs = 1000): Promise<void> {
    const started = Date.now();
    for (;;) {
      const res = await request(partner.app).get(TEST).set(bearer(apiKey));
      if (res.status === status) {
        if (error) expect(res.body.error).toBe(error);
        return;
      }
      if (Date.now() - started > withinMs)
        throw new Error(`partner API still answers ${res.status} after ${withinMs} ms (expected ${status})`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  const dbKey = async (id: string) =>
    (
      await db.owner.query<{ status: string; revoked_at: Date | null }>(
        'select status, revoked_at from admin.api_keys where id = $1',
        [id],
      )
    ).rows[0];
  const dbSubscriber = async (id: string) =>
    (
      await db.owner.query<{ status: string; plan: string; subscription_ends_at: Date | null }>(
        `select s.status, p.name as plan, s.subscription_ends_at from admin.subscribers s join admin.plans p on p.id = s.plan_id
        where s.id = $1`,
        [id],
      )
    ).rows[0];

  test('issueKey returns the new key once; only its hash is stored and it works on the partner API', async () => {
    const { subscriberId } = await issueKey(db.owner);
    const res = await ops.gql(
      `mutation($s: UUID!) {
      issueKey(input: { subscriberId: $s }) { result { rowId apiKey subscriberId keyPrefix status } }
    }`,
      { s: subscriberId },
    );
    expect(res.body.errors).toBeUndefined();
    const issued = res.body.data!.issueKey.result;
    expect(issued).toEqual({
      rowId: expect.any(String),
      apiKey: expect.stringMatching(/^pbk_[A-Za-z0-9_-]{43}$/),
      subscriberId,
      keyPrefix: expect.any(String),
      status: 'active',
    });
    expect(issued.apiKey.startsWith(issued.keyPrefix)).toBe(true);

    const stored = await db.owner.query<{ hashed: boolean }>(
      "select key_hash = sha256(convert_to($1, 'UTF8')) as hashed from admin.api_keys where id = $2",
      [issued.apiKey, issued.rowId],
    );
    expect(stored.rows[0]!.hashed).toBe(true);
    await expectPartnerStatus(issued.apiKey, 200);

    // Never readable again: no query result carries the key.
    const later = await ops.gql(
      '{ allApiKeys { nodes { rowId keyPrefix status } } allSubscribers { nodes { apiKeysBySubscriberId { nodes { keyPrefix } } } } }',
    );
    expect(later.body.errors).toBeUndefined();
    expect(JSON.stringify(later.body)).not.toContain(issued.apiKey);
    expect(later.body.data!.allApiKeys.nodes).toContainEqual({
      rowId: issued.rowId,
      keyPrefix: issued.keyPrefix,
      status: 'active',
    });
  });

  test('revokeKey: the key is refused by the partner API within 1 second', async () => {
    const key = await issueKey(db.owner);
    await expectPartnerStatus(key.apiKey, 200);
    const res = await ops.gql(
      'mutation($k: UUID!) { revokeKey(input: { keyId: $k }) { result { rowId status revokedAt } } }',
      { k: key.keyId },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.revokeKey.result).toEqual({
      rowId: key.keyId,
      status: 'revoked',
      revokedAt: expect.any(String),
    });
    await expectPartnerStatus(key.apiKey, 403, 'API key has been revoked');
    expect(await dbKey(key.keyId)).toEqual({ status: 'revoked', revoked_at: expect.any(Date) });
  });

  test('suspendSubscriber / activateSubscriber take effect on the partner API within 1 second', async () => {
    const key = await issueKey(db.owner);
    await expectPartnerStatus(key.apiKey, 200);
    const suspended = await ops.gql(
      'mutation($id: UUID!) { suspendSubscriber(input: { id: $id }) { result { rowId status } } }',
      { id: key.subscriberId },
    );
    expect(suspended.body.data!.suspendSubscriber.result).toEqual({ rowId: key.subscriberId, status: 'suspended' });
    await expectPartnerStatus(key.apiKey, 403, 'Subscriber account is suspended');
    expect((await dbSubscriber(key.subscriberId))!.status).toBe('suspended');

    const activated = await ops.gql(
      'mutation($id: UUID!) { activateSubscriber(input: { id: $id }) { result { status } } }',
      { id: key.subscriberId },
    );
    expect(activated.body.data!.activateSubscriber.result).toEqual({ status: 'active' });
    await expectPartnerStatus(key.apiKey, 200);
    expect((await dbSubscriber(key.subscriberId))!.status).toBe('active');
  });

  test('setSubscriptionEndsAt: a past end expires the subscription, moving it renews', async () => {
    const key = await issueKey(db.owner);
    // real time: key validity is checked against the real clock
    const past = new Date(Date.now() - 60_000).toISOString();
    const ended = await ops.gql(
      'mutation($id: UUID!, $at: Datetime) { setSubscriptionEndsAt(input: { id: $id, endsAt: $at }) { result { subscriptionEndsAt } } }',
      { id: key.subscriberId, at: past },
    );
    expect(ended.body.errors).toBeUndefined();
    expect(new Date(ended.body.data!.setSubscriptionEndsAt.result.subscriptionEndsAt).getTime()).toBe(Date.parse(past));
    await expectPartnerStatus(key.apiKey, 403, 'Subscription has expired');

    const renewed = await ops.gql(
      'mutation($id: UUID!) { setSubscriptionEndsAt(input: { id: $id, endsAt: null }) { result { subscriptionEndsAt } } }',
      { id: key.subscriberId },
    );
    expect(renewed.body.data!.setSubscriptionEndsAt.result).toEqual({ subscriptionEndsAt: null });
    await expectPartnerStatus(key.apiKey, 200);
    expect((await dbSubscriber(key.subscriberId))!.subscription_ends_at).toBeNull();
  });

  test('setSubscriberPlan moves the subscriber to another plan; its limits apply on the partner API', async () => {
    const plan = await createPlan(db.owner, 42);
    const key = await issueKey(db.owner);
    const res = await ops.gql(
      'mutation($id: UUID!, $plan: String!) { setSubscriberPlan(input: { id: $id, planName: $plan }) { result { planByPlanId { name perMinute } } } }',
      { id: key.subscriberId, plan },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.setSubscriberPlan.result).toEqual({ planByPlanId: { name: plan, perMinute: 42 } });
    expect((await dbSubscriber(key.subscriberId))!.plan).toBe(plan);
    const started = Date.now();
    for (;;) {
      const r = await request(partner.app).get(TEST).set(bearer(key.apiKey));
      if (r.headers['x-ratelimit-limit-minute'] === '42') break;
      if (Date.now() - started > 1000) throw new Error(`minute limit still ${r.headers['x-ratelimit-limit-minute']}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  });

  test.each([
    [
      'an unknown key',
      'mutation { revokeKey(input: { keyId: "00000000-0000-4000-8000-000000000000" }) { result { status } } }',
      /^unknown key 00000000-/,
      'P0002',
    ],
    [
      'an unknown subscriber',
      'mutation { suspendSubscriber(input: { id: "00000000-0000-4000-8000-000000000000" }) { result { status } } }',
      /^unknown subscriber /,
      'P0002',
    ],
    [
      'an unknown plan',
      'mutation { setSubscriberPlan(input: { id: "00000000-0000-4000-8000-000000000000", planName: "nope" }) { result { status } } }',
      /^unknown plan "nope"$/,
      'P0002',
    ],
    [
      'issuing a key for no subscriber',
      'mutation { issueKey(input: {}) { result { apiKey } } }',
      /^unknown subscriber/,
      'P0002',
    ],
  ])("%s: the admin function's own error, no partial result", async (_what, mutation, message, code) => {
    const res = await ops.gql(mutation);
    expect(res.status).toBe(200);
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors![0]).toMatchObject({ message: expect.stringMatching(message), extensions: { code } });
    expect(Object.values(res.body.data!)).toEqual([null]);
  });

  test('a malformed id is a client error, not a 500', async () => {
    const res = await ops.gql('mutation($k: UUID!) { revokeKey(input: { keyId: $k }) { result { status } } }', {
      k: 'not-a-uuid',
    });
    expect(res.status).toBeGreaterThanOrEqual(200);
    expect(res.status).toBeLessThan(500);
    expect(res.body.errors![0]!.message).toMatch(/uuid/i);
  });
});
