/**
 * The GraphQL endpoint's connections: role bar_partner_graphql (it may execute
 * only the api functions the schema serves), with the partner statement
 * timeout and query deadline. (On the primary: the beta does not use
 * DATABASE_READ_URLS yet.)
 */
import type { Config } from '../config';
import { createPool, type Pool } from '../db/pools';
import { GRAPHQL_ROLE } from './endpoint';

export function createGraphqlPool(
  dbUrl: string,
  config: Pick<Config, 'pgPoolMax' | 'pgStatementTimeoutMs' | 'pgQueryDeadlineMs'>,
): Pool {
  return createPool(dbUrl, {
    max: config.pgPoolMax,
    role: GRAPHQL_ROLE,
    applicationName: 'partner-graphql',
    statementTimeoutMs: config.pgStatementTimeoutMs,
    queryTimeoutMs: config.pgQueryDeadlineMs,
  });
}
