/**
 * The GraphQL endpoint's connections: role bar_partner_graphql (it may execute
 * only the api functions the schema serves), on the read replicas when
 * DATABASE_READ_URLS is set, like the REST endpoints.
 */
import type { Config } from '../config';
import { createPool, type Pool } from '../db/pools';
import { createReadPool } from '../db/read-pool';
import type { Logger } from '../log';
import { GRAPHQL_ROLE } from './endpoint';

export function createGraphqlPool(
  dbUrl: string,
  config: Pick<Config, 'pgPoolMax' | 'pgStatementTimeoutMs' | 'pgQueryDeadlineMs' | 'databaseReadUrls'>,
  logger: Logger,
): Pool & { end(): Promise<void> } {
  const options = {
    max: config.pgPoolMax,
    role: GRAPHQL_ROLE,
    applicationName: 'partner-graphql',
    statementTimeoutMs: config.pgStatementTimeoutMs,
    queryTimeoutMs: config.pgQueryDeadlineMs,
  };
  const primary = createPool(dbUrl, options);
  const reads = createReadPool(primary, config.databaseReadUrls, options, logger);
  if (reads === primary) return primary;
  return Object.assign(reads, {
    end: async () => {
      await reads.end();
      await primary.end();
    },
  });
}
