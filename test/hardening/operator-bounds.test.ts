/**
 * Issue 11 defect 5 (operator GraphQL: aliases of __schema were not counted;
 * 2,400 of them asked for 239 MB) and the bounded answer size; GET /metrics
 * (operators.md §4) behind the operator token.
 */
import { getIntrospectionQuery } from 'postgraphile/graphql';
import { createLogger } from '../../server/log';
import { httpRequests } from '../../server/metrics';
import { startOperatorServer, type OperatorServer } from '../../server/operator/server';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createOperatorToken } from '../operator/support';

describe('operator listener bounds and metrics', () => {
  let db: TestDatabase;
  let server: OperatorServer;
  let token: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    server = await startOperatorServer({
      databaseUrl: db.url,
      config: { env: 'test', adminHost: '127.0.0.1', adminPort: 0, pgPoolMax: 2 },
      logger: createLogger('silent'),
      maxResponseBytes: 2_000_000,
    });
    token = await createOperatorToken(db);
  });
  afterAll(async () => {
    await server.close();
    await db.drop();
  });

  const gql = (query: string) =>
    fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query }),
    });

  test('aliased __schema selections are counted: 100 of them are refused before execution', async () => {
    const aliases = Array.from({ length: 100 }, (_, i) => `s${i}: __schema { types { name fields { name } } }`);
    const res = await gql(`{ ${aliases.join(' ')} }`);
    const text = await res.text();
    expect(text.length).toBeLessThan(10_000);
    expect(text).toMatch(/introspection field count \(__schema, __type\) 100 exceeds the maximum of 3/);
  });

  test("the IDE's own introspection query still works", async () => {
    const res = await gql(getIntrospectionQuery());
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data?: { __schema?: unknown } };
    expect(body.data?.__schema).toBeDefined();
  });

  test('an answer over the size bound is refused with a JSON 400', async () => {
    const small = await startOperatorServer({
      databaseUrl: db.url,
      config: { env: 'test', adminHost: '127.0.0.1', adminPort: 0, pgPoolMax: 2 },
      logger: createLogger('silent'),
      maxResponseBytes: 300,
    });
    try {
      const res = await fetch(`${small.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: '{ __schema { types { name } } }' }),
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: string; request_id: string };
      expect(body.error).toMatch(/exceeds the maximum of 300 bytes/);
      expect(body.request_id).toBe(res.headers.get('x-request-id'));
    } finally {
      await small.close();
    }
  });

  test('GET /metrics: Prometheus text with the operator token, 401 without', async () => {
    httpRequests.inc({ route: 'bars/:id', method: 'GET', status: '200' });
    const denied = await fetch(`${server.url}/metrics`);
    expect(denied.status).toBe(401);
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(
      /partner_http_requests_total\{route="bars\/:id",method="GET",status="200",service="partner-bar-api"\} \d+/,
    );
    for (const name of [
      'partner_http_request_duration_seconds',
      'partner_rate_limit_rejections_total',
      'partner_redis_fallback',
      'partner_db_pool_connections',
      'partner_webhook_queue_depth',
      'partner_webhook_delivery_failures_total',
      'process_resident_memory_bytes',
    ])
      expect(text).toContain(name);
  });
});
