import { createTestDatabase, type TestDatabase } from '../support/db';
import { createSubscriberWithKey, startOperatorHarness, type OperatorHarness } from '../operator/support';
import { setWebhookEndpoint } from '../../server/webhooks/endpoints';
import { webhookSettings } from '../../server/webhooks/settings';

describe('operator GraphQL: webhook endpoints (without the secret) and deliveries', () => {
  let db: TestDatabase;
  let ops: OperatorHarness;

  beforeAll(async () => {
    db = await createTestDatabase();
    ops = await startOperatorHarness(db);
  });
  afterAll(async () => {
    await ops.close();
    await db.drop();
  });

  test('a revoke through GraphQL writes key.revoked in the same transaction; the log is readable, the secret is not', async () => {
    const { subscriberId, keyId } = await createSubscriberWithKey(db, 'Hooked');
    const settings = webhookSettings({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true' });
    await setWebhookEndpoint(db.owner, settings, subscriberId, 'http://127.0.0.1:9/hook');
    const revoke = await ops.gql('mutation ($id: UUID!) { revokeKey(input: { keyId: $id }) { clientMutationId } }', {
      id: keyId,
    });
    expect(revoke.body.errors).toBeUndefined();
    const res = await ops.gql(
      `{ allWebhookEndpoints { nodes { subscriberId url } }
         allWebhookDeliveries(orderBy: CREATED_AT_DESC) { nodes { subscriberId type status attempts payload } } }`,
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.allWebhookEndpoints.nodes).toEqual([{ subscriberId, url: 'http://127.0.0.1:9/hook' }]);
    expect(res.body.data!.allWebhookDeliveries.nodes).toEqual([
      expect.objectContaining({ subscriberId, type: 'key.revoked', status: 'pending', attempts: 0 }),
    ]);
    expect(res.body.data!.allWebhookDeliveries.nodes[0].payload).toMatchObject({ key_id: keyId });
    const secret = await ops.gql('{ allWebhookEndpoints { nodes { secretEncrypted } } }');
    expect(secret.body.errors?.[0]?.message).toMatch(/secretEncrypted/);
  });
});
