import request from 'supertest';
import { loadConfig } from '../../server/config';
import { createPartnerApp } from '../../server/http/app';
import { sendError } from '../../server/contract/errors';
import { createLogger } from '../../server/log';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createSubscriberWithKey, startOperatorHarness, type OperatorHarness } from './support';

describe('operator GraphQL: authentication and listener', () => {
  let db: TestDatabase;
  let ops: OperatorHarness;

  beforeAll(async () => {
    db = await createTestDatabase();
    ops = await startOperatorHarness(db);
  });
  afterAll(async () => {
    await ops?.close();
    await db?.drop();
  });

  const QUERY = '{ allPlans { nodes { name } } }';

  test('an operator token is served', async () => {
    const res = await ops.gql(QUERY);
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.allPlans.nodes).toContainEqual({ name: 'standard' });
  });

  test('no token: 401 JSON error', async () => {
    const res = await fetch(`${ops.server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: QUERY }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(await res.json()).toEqual({ error: 'Missing operator token', request_id: expect.any(String) });
  });

  test.each([
    ['a wrong token of the right shape', () => `pbo_${'A'.repeat(43)}`],
    ['a truncated operator token', () => ops.token.slice(0, -1)],
    ['a token that is not an operator token', () => 'hunter2'],
  ])('%s: 401', async (_what, token) => {
    const res = await ops.gql(QUERY, undefined, token());
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'Invalid operator token', request_id: expect.any(String) });
    expect(res.body.data).toBeUndefined();
  });

  test('a partner API key: 401', async () => {
    const { apiKey } = await createSubscriberWithKey(db);
    expect(apiKey).toMatch(/^pbk_/);
    const res = await ops.gql(QUERY, undefined, apiKey);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('Invalid operator token');
  });

  test.each([
    ['Basic credentials', (t: string) => `Basic ${Buffer.from(`ops:${t}`).toString('base64')}`],
    ['the token without "Bearer"', (t: string) => t],
    ['"Bearer" without a token', () => 'Bearer '],
  ])('a malformed Authorization header (%s): 401', async (_what, header) => {
    const res = await fetch(`${ops.server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: header(ops.token) },
      body: JSON.stringify({ query: QUERY }),
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: string }).error).toBe('Invalid operator token');
  });

  test('the token of a removed operator stops working', async () => {
    const { rows } = await db.owner.query<{ token: string }>("select token from admin.create_operator('leaver')");
    const token = rows[0]!.token;
    expect((await ops.gql(QUERY, undefined, token)).status).toBe(200);
    await db.owner.query("delete from admin.operators where name = 'leaver'");
    expect((await ops.gql(QUERY, undefined, token)).status).toBe(401);
  });

  test('introspection needs a token too', async () => {
    const res = await ops.gql('{ __schema { queryType { name } } }', undefined, null);
    expect(res.status).toBe(401);
  });

  test.each(['/', '/graphiql/x', '/api/v1/partner/bars', '/ruru', '/graphql/stream'])(
    '%s on the operator listener: 404 JSON',
    async (path) => {
      const res = await fetch(`${ops.server.url}${path}`, { headers: { authorization: `Bearer ${ops.token}` } });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: 'Not found', request_id: expect.any(String) });
    },
  );

  test('GET /graphql does not run queries (POST only)', async () => {
    const res = await fetch(`${ops.server.url}/graphql?query=${encodeURIComponent(QUERY)}`, {
      headers: { authorization: `Bearer ${ops.token}`, accept: 'application/json' },
    });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(await res.text()).not.toMatch(/standard/);
  });

  test('the listener binds to loopback unless ADMIN_HOST says otherwise', () => {
    expect(ops.server.server.address()).toMatchObject({ address: '127.0.0.1' });
    expect(loadConfig({})).toMatchObject({ adminHost: '127.0.0.1', adminPort: 3001 });
    expect(loadConfig({ ADMIN_HOST: '0.0.0.0', ADMIN_PORT: '4001' })).toMatchObject({
      adminHost: '0.0.0.0',
      adminPort: 4001,
    });
    expect(() => loadConfig({ ADMIN_PORT: 'abc' })).toThrow(/ADMIN_PORT/);
  });

  test('the partner listener does not serve /graphql or /graphiql (404)', async () => {
    const app = createPartnerApp({
      config: loadConfig({ NODE_ENV: 'test' }),
      logger: createLogger('silent'),
      pool: db.partnerPool(),
      guard: [(_req, res) => sendError(res, 401, 'Missing API key')],
    });
    for (const path of ['/graphql', '/graphiql', '/ruru-static/ruru.js']) {
      const get = await request(app).get(path).set('Authorization', `Bearer ${ops.token}`);
      expect(get.status).toBe(404);
      expect(get.body.error).toBeDefined();
      const post = await request(app).post(path).set('Authorization', `Bearer ${ops.token}`).send({ query: QUERY });
      expect(post.status).toBeGreaterThanOrEqual(404);
      expect(post.status).toBeLessThan(500);
      expect(JSON.stringify(post.body)).not.toMatch(/standard/);
    }
  });
});
