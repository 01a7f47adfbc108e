/**
 * An operator GraphQL server on a test database, and helpers to call it.
 * Each test file creates its own database and its own PostGraphile instance.
 */
import { createLogger } from '../../server/log';
import type { BucketsSource } from '../../server/operator/buckets';
import type { QueryLimits } from '../../server/operator/limits';
import { startOperatorServer, type OperatorServer } from '../../server/operator/server';
import type { TestDatabase } from '../support/db';

export interface GraphQLResponse<
  T = Record<string, any> /* eslint-disable-line @typescript-eslint/no-explicit-any -- GraphQL data is untyped */,
> {
  status: number;
  headers: Headers;
  body: { data?: T; errors?: { message: string; extensions?: Record<string, unknown> }[]; error?: string };
}

export interface OperatorHarness {
  server: OperatorServer;
  token: string;
  /** POST /graphql with the operator token (or `token` when given; null: no Authorization header). */
  gql<T = Record<string, any> /* eslint-disable-line @typescript-eslint/no-explicit-any -- GraphQL data is untyped */>(
    query: string,
    variables?: Record<string, unknown>,
    token?: string | null,
  ): Promise<GraphQLResponse<T>>;
  close(): Promise<void>;
}

export async function createOperatorToken(
  db: TestDatabase,
  name = `ops-${Math.random().toString(36).slice(2, 8)}`,
): Promise<string> {
  const { rows } = await db.owner.query<{ token: string }>('select token from admin.create_operator($1)', [name]);
  return rows[0]!.token;
}

export async function startOperatorHarness(
  db: TestDatabase,
  options: {
    env?: 'production' | 'development' | 'test';
    statementTimeoutMs?: number;
    limits?: QueryLimits;
    buckets?: BucketsSource;
    headersTimeoutMs?: number;
    requestTimeoutMs?: number;
  } = {},
): Promise<OperatorHarness> {
  const server = await startOperatorServer({
    databaseUrl: db.url,
    config: { env: options.env ?? 'test', adminHost: '127.0.0.1', adminPort: 0, pgPoolMax: 4 },
    logger: createLogger(process.env.OPERATOR_TEST_LOG ?? 'silent'),
    statementTimeoutMs: options.statementTimeoutMs,
    limits: options.limits,
    buckets: options.buckets,
    headersTimeoutMs: options.headersTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs,
  });
  const token = await createOperatorToken(db);
  return {
    server,
    token,
    async gql<T>(
      query: string,
      variables?: Record<string, unknown>,
      useToken?: string | null,
    ): Promise<GraphQLResponse<T>> {
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json',
      };
      const bearer = useToken === undefined ? token : useToken;
      if (bearer !== null) headers.authorization = `Bearer ${bearer}`;
      const res = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ query, variables }),
      });
      return { status: res.status, headers: res.headers, body: (await res.json()) as GraphQLResponse<T>['body'] };
    },
    close: () => server.close(),
  };
}

/** A subscriber on the standard plan with one active key, made through the shared admin functions. */
export async function createSubscriberWithKey(
  db: TestDatabase,
  name = 'Acme Data',
): Promise<{ subscriberId: string; keyId: string; apiKey: string }> {
  const sub = await db.owner.query<{ id: string }>('select id from admin.create_subscriber($1)', [name]);
  const subscriberId = sub.rows[0]!.id;
  const key = await db.owner.query<{ id: string; api_key: string }>('select id, api_key from admin.issue_key($1)', [
    subscriberId,
  ]);
  return { subscriberId, keyId: key.rows[0]!.id, apiKey: key.rows[0]!.api_key };
}
