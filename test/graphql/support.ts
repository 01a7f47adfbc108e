/**
 * The partner app with the GraphQL endpoint, the real credentials guard and a
 * test database; every statement the GraphQL pool runs is counted.
 */
import { randomBytes } from 'node:crypto';
import type express from 'express';
import request from 'supertest';
import { createPartnerGuard, type PartnerGuard } from '../../server/credentials/guard';
import { createPool, type Pool } from '../../server/db/pools';
import { graphqlRoutes, GRAPHQL_PATH, GRAPHQL_ROLE, type GraphqlEndpointOptions } from '../../server/graphql/endpoint';
import { createPartnerApp } from '../../server/http/app';
import type { RedisClient } from '../../server/redis';
import type { TestDatabase } from '../support/db';
import { bearer, silentLogger } from '../support/partner';
import { testClock } from '../support/clock';

export interface GraphqlPartner {
  app: express.Express;
  guard: PartnerGuard;
  /** The REST pool (bar_partner) and the GraphQL pool (bar_partner_graphql). */
  pool: Pool;
  graphqlPool: Pool;
  /** SQL statements sent by either pool since the last reset. */
  statements: { graphql: string[]; partner: string[]; reset(): void };
  close(): Promise<void>;
}

function counted(pool: Pool, into: string[]): void {
  const query = pool.query.bind(pool) as (...a: unknown[]) => unknown;
  (pool as unknown as { query: (...a: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const first = args[0];
    into.push(typeof first === 'string' ? first : String((first as { text?: string })?.text));
    return query(...args);
  };
}

export async function startGraphqlPartner(
  db: TestDatabase,
  options: { redis?: RedisClient; deprecations?: GraphqlEndpointOptions['deprecations'] } = {},
): Promise<GraphqlPartner> {
  const pool = db.partnerPool();
  const graphqlPool = createPool(db.url, { max: 4, role: GRAPHQL_ROLE, applicationName: 'tests-graphql' });
  const statements = {
    graphql: [] as string[],
    partner: [] as string[],
    reset() {
      statements.graphql.length = 0;
      statements.partner.length = 0;
    },
  };
  counted(graphqlPool, statements.graphql);
  counted(pool, statements.partner);
  const guard = await createPartnerGuard({
    pool,
    databaseUrl: db.url,
    logger: silentLogger,
    redis: options.redis,
    redisPrefix: `test:${randomBytes(6).toString('hex')}:`,
    usageFlushMs: 60_000,
    redisBudgetMs: 2_000,
  });
  const app = createPartnerApp({
    config: { env: 'test' },
    logger: silentLogger,
    pool,
    guard: guard.handlers,
    clock: testClock,
    deprecations: options.deprecations,
    graphql: graphqlRoutes({
      pool: graphqlPool,
      guard,
      logger: silentLogger,
      clock: testClock,
      deprecations: options.deprecations,
    }),
  });
  return {
    app,
    guard,
    pool,
    graphqlPool,
    statements,
    close: async () => {
      await guard.close();
      await graphqlPool.end();
    },
  };
}

/** POST a query with a key. */
export function gql(app: express.Express, key: string, query: string, variables?: Record<string, unknown>) {
  return request(app)
    .post(GRAPHQL_PATH)
    .set(bearer(key))
    .send({ query, ...(variables ? { variables } : {}) });
}
