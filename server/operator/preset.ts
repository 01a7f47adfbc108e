/**
 * The PostGraphile preset of the operator endpoint: Amber + pg-aggregates
 * over the admin schema, introspected as bar_operator so that only what that
 * role is granted becomes schema (PgRBACPlugin, part of the default preset).
 */
import type { IncomingMessage } from 'node:http';
import { PgAggregatesPreset } from '@graphile/pg-aggregates';
import { makePgService } from 'postgraphile/adaptors/pg';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';
import type { Pool } from '../db/pools';
import type { Logger } from '../log';
import type { OperatorIdentity } from './auth';
import { bucketsPlugin, type BucketsSource } from './buckets';
import { makeMaskError } from './errors';
import { DEFAULT_QUERY_LIMITS, queryLimitsRule, type QueryLimits } from './limits';

export const OPERATOR_ROLE = 'bar_operator';
export const GRAPHQL_PATH = '/graphql';
export const GRAPHIQL_PATH = '/graphiql';

export interface OperatorPresetOptions {
  /** A pool whose connections already run as bar_operator (defence in depth). */
  pool: Pool;
  logger: Logger;
  production: boolean;
  /** Who sent the request (set by the auth step before GraphQL runs). */
  operatorOf(req: IncomingMessage): OperatorIdentity | undefined;
  statementTimeoutMs: number;
  limits?: QueryLimits;
  maxRequestBytes?: number;
  /** Shared rate-limit counters for ApiKey.bucketsNow (operator/buckets.ts); unset: the field is null. */
  buckets?: BucketsSource;
}

const QueryLimitsPlugin = (limits: QueryLimits): GraphileConfig.Plugin => ({
  name: 'OperatorQueryLimitsPlugin',
  version: '1.0.0',
  grafserv: {
    middleware: {
      setPreset(next, event) {
        event.validationRules.push(queryLimitsRule(limits));
        return next();
      },
    },
  },
});

/**
 * A column the role may not SELECT (e.g. api_keys.key_hash) appears nowhere:
 * PgRBACPlugin already drops it as a field, filter and order; this also
 * drops it from aggregates, group-by and unique lookups (apiKeyByKeyHash).
 */
const HIDDEN_COLUMN = [
  '-select',
  '-filterBy',
  '-orderBy',
  '-aggregate',
  '-groupBy',
  '-havingBy',
] as GraphileBuild.BehaviorString[];
const HIDDEN_UNIQUE = ['-single', '-update', '-delete'] as GraphileBuild.BehaviorString[];
const UnselectableColumnsPlugin: GraphileConfig.Plugin = {
  name: 'OperatorUnselectableColumnsPlugin',
  version: '1.0.0',
  after: ['PgRBACPlugin'],
  schema: {
    entityBehavior: {
      pgCodecAttribute: {
        inferred: {
          after: ['postInferred'],
          callback(behavior, [codec, attributeName]) {
            return codec.attributes[attributeName]?.extensions?.canSelect === false
              ? [behavior, ...HIDDEN_COLUMN]
              : behavior;
          },
        },
      },
      pgResourceUnique: {
        inferred: {
          after: ['postInferred'],
          callback(behavior, [resource, unique]) {
            const attributes = resource.codec.attributes as
              Record<string, { extensions?: { canSelect?: boolean } }> | undefined;
            const hidden = unique.attributes.some((name) => attributes?.[name]?.extensions?.canSelect === false);
            return hidden ? [behavior, ...HIDDEN_UNIQUE] : behavior;
          },
        },
      },
    },
  },
};

export function makeOperatorPreset(options: OperatorPresetOptions): GraphileConfig.Preset {
  return {
    extends: [PostGraphileAmberPreset, PgAggregatesPreset],
    plugins: [
      UnselectableColumnsPlugin,
      QueryLimitsPlugin(options.limits ?? DEFAULT_QUERY_LIMITS),
      bucketsPlugin(options.buckets, options.pool),
    ],
    pgServices: [
      makePgService({
        pool: options.pool,
        schemas: ['admin'],
        pubsub: false,
        // Introspection is one trusted query at start: not bound by the per-request statement
        // timeout (on a loaded machine it can take longer than a short one).
        pgSettingsForIntrospection: { role: OPERATOR_ROLE, statement_timeout: '60000' },
        pgSettings(requestContext) {
          const operator = requestContext.node ? options.operatorOf(requestContext.node.req) : undefined;
          // The HTTP layer refuses unauthenticated requests; this is the second lock.
          if (!operator) throw new Error('operator GraphQL request without an authenticated operator');
          return {
            role: OPERATOR_ROLE,
            'operator.id': operator.id,
            statement_timeout: String(options.statementTimeoutMs),
          };
        },
      }),
    ],
    schema: {
      // Reads, plus mutations from the granted admin.* functions; never
      // generic create/update/delete on tables, whatever the grants say.
      defaultBehavior: '-insert -update -delete',
    },
    grafserv: {
      graphqlPath: GRAPHQL_PATH,
      graphiql: !options.production,
      graphiqlPath: GRAPHIQL_PATH,
      graphiqlOnGraphQLGET: false,
      graphqlOverGET: false,
      websockets: false,
      maxRequestLength: options.maxRequestBytes ?? 50_000,
      maskError: makeMaskError({ production: options.production, logger: options.logger }),
    },
  };
}
