/**
 * The one table of `api.*` calls: every statement the server (REST routes,
 * GraphQL resolvers, usage writers) and the bench send to an api function.
 * Parameters are named here once, in the function's order; a call site gives
 * an object of named arguments and `apiSql` builds the statement with bind
 * parameters (named notation, `p_x => $n`). An argument left undefined is not
 * passed, so the function's SQL default applies (e.g. p_now => now() in the
 * bench); pass null for an explicit NULL.
 *
 * A partner endpoint's entry takes its parameter names from the endpoint's
 * declaration (endpoints.ts: path parameters and each query parameter's SQL
 * arguments) plus the extras the server supplies (`now`, `subscriber_id`):
 * a parameter added to the declaration is in the call without a change here.
 */

import type { QueryResult } from 'pg';
import { E, type Endpoint, type EndpointArgs } from './endpoints';
import { pathNames } from './declared-params';

interface CallOptions<A extends string = string> {
  /** Prefix of the SQL parameter names (default 'p_'). */
  prefix?: string;
  /** Casts of bind parameters, by name (e.g. buckets: 'json'). */
  casts?: Record<string, string>;
  /** Result column: `::text as body` (the default: the json text sent as-is) or ` as <as>`. */
  as?: A;
}

export interface ApiCall<P extends string = string, A extends string = string> {
  readonly fn: string;
  readonly params: readonly P[];
  readonly options: CallOptions<A>;
}

const call = <const P extends string, const A extends string = 'body'>(
  fn: string,
  params: readonly P[],
  options: CallOptions<A> = {},
): ApiCall<P, A> => ({ fn, params, options });

/** A partner endpoint's call: `extras` are the arguments the server supplies (not read from the request). */
export type PartnerCall<P extends string = string, X extends string = string> = ApiCall<P, 'body'> & {
  readonly endpoint: Endpoint;
  readonly extras: readonly X[];
};

/** The call of a declared partner endpoint: the declaration's arguments, then `extras`. */
export const partner = <const En extends Endpoint, const X extends string = never>(
  fn: string,
  e: En,
  extras: readonly X[] = [],
): PartnerCall<EndpointArgs<En> | X, X> => ({
  ...call(fn, [...pathNames(e.path), ...e.query.flatMap((declared) => declared.args), ...extras] as (
    EndpointArgs<En> | X
  )[]),
  endpoint: e,
  extras,
});

const BATCH = { prefix: '', casts: { batch: 'jsonb' } };

export const CALLS = {
  // partner endpoints (REST and GraphQL)
  testEndpoint: partner('test_endpoint', E.testEndpoint, ['subscriber_id', 'plan', 'now']),
  bars: partner('bars', E.bars, ['now']),
  bar: partner('bar', E.bar, ['now']),
  barsByCity: partner('bars_by_city', E.barsByCity, ['now']),
  events: partner('events', E.events, ['now']),
  posts: partner('posts', E.posts, ['now']),
  feed: partner('feed', E.feed, ['now']),
  search: partner('search', E.search),
  categories: partner('categories', E.categories),
  cities: partner('cities', E.cities),
  groups: partner('groups', E.groups),
  // GraphQL's own reads
  graphqlBarPosts: call('graphql_bar_posts', ['bar_id', 'limit', 'offset']),
  graphqlEvents: call('graphql_events', ['ids']),
  cityHighlights: call('graphql_city_highlights', ['state', 'city', 'now', 'events_today_limit']),
  // usage endpoints
  usage: call('usage', ['subscriber_id', 'plan', 'buckets'], { casts: { buckets: 'json' } }),
  deprecatedCalls: call('deprecated_calls', ['subscriber_id', 'now'], { as: 'calls' }),
  usageHistory: call('usage_history', ['subscriber_id', 'granularity', 'start', 'end', 'endpoint']),
  usageRequests: call('usage_requests', [
    ...['subscriber_id', 'status_min', 'status_max', 'endpoint', 'request_id'],
    ...['since', 'until', 'limit', 'cursor_at', 'cursor_id'],
  ] as const),
  // exports (opened as a cursor inside a repeatable-read transaction)
  exportWatermark: call('export_watermark', [], { as: 'w' }),
  exportBars: call('export_bars', ['cursor', 'state', 'city', 'updated_since', 'now'], { as: 'c' }),
  exportEvents: call('export_events', ['cursor', 'state', 'city', 'start_date', 'end_date', 'updated_since'], {
    as: 'c',
  }),
  // usage and request-log writers, alerts, e-mail
  recordUsage: call('record_usage', ['batch'], { ...BATCH, as: 'done' }),
  recordHourlyUsage: call('record_hourly_usage', ['batch'], { ...BATCH, as: 'done' }),
  recordDeprecatedCalls: call('record_deprecated_calls', ['batch'], { ...BATCH, as: 'done' }),
  recordSharedUsage: call('record_shared_usage', ['batch'], { ...BATCH, as: 'n' }),
  recordRequests: call('record_requests', ['batch'], { ...BATCH, as: 'n' }),
  usageKeyIds: call('usage_key_ids', [], { as: 'id' }),
  requestLogPartitions: call('request_log_partitions', [], { as: 'partitions' }),
  recordUsageAlert: call('record_usage_alert', ['api_key_id', 'bucket', 'window_start', 'level', 'used', 'limit'], {
    prefix: '',
    as: 'created',
  }),
  unsubscribeAlertContact: call('unsubscribe_alert_contact', ['subscriber_id', 'email'], { as: 'result' }),
} as const;

export type CallArgs<C> = C extends ApiCall<infer P, string> ? { readonly [K in P]?: unknown } : never;
/** A call's result row: `body` (the json text, NULL when not found) or its named column. */
export type CallRow<C> =
  C extends ApiCall<string, infer A> ? (A extends 'body' ? { body: string | null } : { [K in A]: unknown }) : never;

/** What can run a statement (a pool, a pool client). */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<QueryResult>;
}

/**
 * A query's rows taken out of pg's result, so that nothing old points at them.
 *
 * pg creates a query's Result, with its `rows` array, when the query is queued. A request that
 * waits for a connection across V8's scavenges gets that Result promoted to the old generation.
 * The rows pg adds later are young objects referenced from an old array, and V8's scavenger keeps
 * every young object that an old one references, dead or alive, until the next mark-compact: each
 * answer's text (58 KB for a radius page) was kept, copied and promoted. Moved into a young array,
 * with pg's emptied, they die young. Under the radius load the full server promoted 58–64 MB/s
 * before and 15–16 MB/s after (docs/performance/2026-12-07-v1.3.md, machine AW).
 */
export function takeRows<R>(result: { rows: R[] }): R[] {
  const rows = result.rows.slice();
  result.rows.length = 0;
  return rows;
}

/** Runs one call on `db`. */
export async function apiQuery<C extends ApiCall>(db: Queryable, c: C, args: CallArgs<C>): Promise<CallRow<C>[]> {
  const { text, values } = apiSql(c, args);
  return takeRows(await db.query(text, values)) as CallRow<C>[];
}

export interface Statement {
  text: string;
  values: unknown[];
}

const quoted = (name: string) => (name === 'limit' || name === 'offset' ? `"${name}"` : name);

/**
 * The statement of one call: named arguments in the declared order, bind
 * parameters only. `placeholder` writes the n-th parameter (pgbench scripts use `:name`).
 */
export function apiSql<C extends ApiCall>(
  c: C,
  args: CallArgs<C>,
  placeholder: (n: number, name: string) => string = (n) => `$${n}`,
): Statement {
  const { prefix = 'p_', casts = {}, as } = c.options;
  const given = c.params.filter((p) => (args as Record<string, unknown>)[p] !== undefined);
  const list = given.map((p, i) => {
    const cast = casts[p] ? `::${casts[p]}` : '';
    return `${quoted(prefix + p)} => ${placeholder(i + 1, p)}${cast}`;
  });
  const result = as ? ` as ${as}` : '::text as body';
  return {
    text: 'select api.' + `${c.fn}(${list.join(', ')})${result}`,
    values: given.map((p) => (args as Record<string, unknown>)[p]),
  };
}

/**
 * GraphQL's batched bar details: GET bars/:id's call for many ids in one
 * statement ($1: the ids, $2: the instant), one row per id in order.
 */
export const BAR_DETAILS_SQL =
  'select api.bar(p_id => x.id, p_now => $2)::text as body from unnest($1::text[]) with ordinality x(id, n) order by x.n';
