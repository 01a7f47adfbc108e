/**
 * The one declaration of every partner endpoint: its path, its accepted query
 * parameters (as OpenAPI parameter objects) and its 200 body schema. The
 * declaration drives both the unknown-parameter check of the route
 * (`strictQuery`) and the OpenAPI document (openapi.ts builds `paths` from
 * ENDPOINTS). To add an endpoint: declare it here with `endpoint({...})`,
 * add its component schemas in openapi.ts, and mount its route with
 * `router.get(expressPath(E), strictQuery(E), handler)`.
 */
import type { RequestHandler } from 'express';
import {
  BARS_LIMIT,
  CLASSIFICATIONS,
  MAX_IDS,
  MAX_Q,
  PER_PAGE,
  RADIUS,
  USAGE_REQUESTS_LIMIT,
  badRequest,
} from './params';

export type Schema = Record<string, unknown>;

// ---------------------------------------------------------------- schema helpers (shared with openapi.ts)

export const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
export const nullable = (schema: Schema): Schema => ({ anyOf: [schema, { type: 'null' }] });
export const object = (properties: Record<string, Schema>, description?: string): Schema => ({
  type: 'object',
  ...(description ? { description } : {}),
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
});
export const array = (items: Schema, extra: Schema = {}): Schema => ({ type: 'array', items, ...extra });
export const paged = (items: Record<string, Schema>) => object({ ...items, pagination: ref('Pagination') });

export const latitude: Schema = { type: 'number', minimum: -90, maximum: 90 };
export const longitude: Schema = { type: 'number', minimum: -180, maximum: 180 };

// ---------------------------------------------------------------- parameter helpers

export const query = (name: string, schema: Schema, description: string, required = false): Schema => ({
  name,
  in: 'query',
  required,
  schema,
  description,
});
export const PAGE_PARAM = query(
  'page',
  { type: 'integer', minimum: 1, maximum: 2147483647, default: 1 },
  'page number, from 1',
);
export const PER_PAGE_PARAM = query(
  'per_page',
  { type: 'integer', minimum: PER_PAGE.min, maximum: PER_PAGE.max, default: PER_PAGE.default },
  'items per page',
);
export const GROUP = query(
  'group_slug',
  { type: 'string', minLength: 1 },
  'only bars of this group (curated set of bars of the city; see GET groups/{state}/{city}); unknown: empty result',
);
export const dateParam = (name: string, dflt: string) =>
  query(
    name,
    {
      type: 'string',
      pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,6})?)?([Zz]|[+-]\\d{2}:?\\d{2})?)?$',
    },
    `YYYY-MM-DD (a local day of the city; an end_date includes its whole day) or an ISO 8601 date-time (inclusive; without an offset it is the city's local time; send a + offset as %2B). Default: ${dflt}`,
  );
export const CITY_PATH: Schema[] = [
  {
    name: 'state',
    in: 'path',
    required: true,
    schema: { type: 'string' },
    description: 'state abbreviation, case-insensitive',
  },
  {
    name: 'city',
    in: 'path',
    required: true,
    schema: { type: 'string' },
    description: 'city name, URL-encoded, case-insensitive (see GET cities)',
  },
];
const corner = (n: 1 | 2): Schema => ({
  name: `corner${n}`,
  in: 'query',
  required: false,
  style: 'deepObject',
  explode: true,
  schema: {
    type: 'object',
    properties: { latitude, longitude },
    required: ['latitude', 'longitude'],
    additionalProperties: false,
  },
  description: `corner${n}[latitude], corner${n}[longitude]: one of two opposite corners of a bounding box (either order); all four values or none; not with radius`,
});

/** Filters of GET bars and GET bars_by_city (decisions.md v1.1 "Filters"). */
export const BAR_FILTERS: Schema[] = [
  query(
    'open_now',
    { type: 'string', enum: ['true', 'false'] },
    "open (true) or closed (false) now by the bar's hours",
  ),
  query(
    'open_at',
    { type: 'string', format: 'date-time' },
    "only bars open at this instant (ISO 8601 date-time with offset, judged in each bar's local time; send + as %2B); not with open_now",
  ),
  query(
    'price_level',
    { type: 'string', pattern: '^[1-4](,[1-4])*$' },
    'comma-separated price levels 1-4; bars with any of them',
  ),
  query('min_rating', { type: 'number', minimum: 0, maximum: 5 }, 'only bars whose google_rating is at least this'),
  query(
    'status',
    { type: 'string', pattern: '^(closed|quiet|moderate|busy|very_busy)(,(closed|quiet|moderate|busy|very_busy))*$' },
    'comma-separated current occupancy statuses (closed, quiet, moderate, busy, very_busy); bars with any of them',
  ),
];

/** Parameters and description shared by the export endpoints. */
const EXPORT_PLACE: Schema[] = [
  query('state', { type: 'string', pattern: '^[A-Za-z]{2}$' }, 'only this state (two letters, case-insensitive)'),
  query('city', { type: 'string', minLength: 1 }, 'only this city of `state` (requires state); unknown: 404'),
];
const EXPORT_SINCE = query(
  'updated_since',
  { type: 'string', format: 'date-time' },
  'only objects changed at or after this instant (ISO 8601 date-time with offset, microseconds kept), plus ' +
    "`deleted` lines for objects removed since; pass the previous export's `next_updated_since`",
);
const EXPORT_DESCRIPTION =
  'Streams `application/x-ndjson` (Accept must admit it: `*/*`, `application/*` or `application/x-ndjson`; ' +
  'otherwise 406), gzip when Accept-Encoding asks. One JSON object a line; the last line is ' +
  '`{"type":"end","count":N,"next_updated_since":ISO}` (a stream without it was cut short). Counts as one ' +
  'request; at most 2 concurrent exports per key (the third: 429 with `period` "concurrent").';

// ---------------------------------------------------------------- declarations

export interface Endpoint {
  /** OpenAPI path template below the prefix, e.g. `/bars_by_city/{state}/{city}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  /** Path parameters (OpenAPI parameter objects). */
  pathParams?: Schema[];
  /** The accepted query parameters: anything else is a 400. */
  query: Schema[];
  /** Schema of the 200 body. */
  body: Schema;
  /** Error statuses besides 400/401/403/406/429/500/503 (e.g. '404'). */
  errors?: string[];
  /** Media type of the 200 body (default application/json). */
  mediaType?: string;
}

export const ENDPOINTS: Endpoint[] = [];

/** The GraphQL endpoint (beta) below the prefix: POST and GET, usage name 'graphql'. */
export const GRAPHQL_ROUTE = '/graphql';

/** Declares an endpoint (added to ENDPOINTS, hence to the OpenAPI document). */
export function endpoint(e: Endpoint): Endpoint {
  ENDPOINTS.push(e);
  return e;
}

/** `/bars_by_city/{state}/{city}` → `/bars_by_city/:state/:city`. */
export const expressPath = (e: Endpoint): string => e.path.replace(/\{([^}]+)\}/g, ':$1');

/** The names of the query parameters an endpoint accepts. */
export const acceptedNames = (e: Endpoint): string[] => e.query.map((p) => p.name as string);

/** 400 for the first query parameter the endpoint does not declare, naming it and listing the accepted ones. */
export function strictQuery(e: Endpoint): RequestHandler {
  const names = acceptedNames(e);
  const accepted = new Set(names);
  const label = e.path.slice(1);
  const list = names.length ? `${label} accepts ${names.join(', ')}` : `${label} accepts no query parameters`;
  return (req, _res, next) => {
    for (const name of Object.keys(req.query as object)) {
      if (!accepted.has(name)) {
        const shown = name.length > 100 ? `${name.slice(0, 100)}…` : name;
        throw badRequest(`unknown parameter ${JSON.stringify(shown)}; ${list}`);
      }
    }
    next();
  };
}

export const E = {
  testEndpoint: endpoint({
    path: '/test_endpoint',
    operationId: 'testEndpoint',
    summary: 'Check an API key',
    query: [],
    body: ref('TestResponse'),
  }),

  // ---- bars
  bars: endpoint({
    path: '/bars',
    operationId: 'listBars',
    summary: 'List bars (by ids, category, radius or bounding box; with filters)',
    query: [
      query(
        'ids',
        { type: 'string' },
        `comma-separated bar ids, at most ${MAX_IDS}; order kept, duplicates once, unknown ids skipped`,
      ),
      query('category', { type: 'string', minLength: 1 }, 'category slug (see GET categories); unknown: empty result'),
      query('latitude', latitude, 'with longitude: nearest first (and the radius centre)'),
      query('longitude', longitude, 'with latitude'),
      query(
        'radius',
        { type: 'number', exclusiveMinimum: RADIUS.min, maximum: RADIUS.max },
        'miles; requires latitude and longitude',
      ),
      corner(1),
      corner(2),
      query(
        'limit',
        { type: 'integer', minimum: BARS_LIMIT.min, maximum: BARS_LIMIT.max, default: BARS_LIMIT.default },
        'maximum number of bars',
      ),
      ...BAR_FILTERS,
    ],
    body: object({ bars: array(ref('Bar')) }),
  }),
  bar: endpoint({
    path: '/bars/{id}',
    operationId: 'getBar',
    summary: 'Bar details',
    pathParams: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'bar id' }],
    query: [],
    body: object({ bar: ref('BarDetail') }),
    errors: ['404'],
  }),
  barsByCity: endpoint({
    path: '/bars_by_city/{state}/{city}',
    operationId: 'barsByCity',
    summary: "Bars of a city, today's events and the busiest open bars",
    pathParams: CITY_PATH,
    query: [GROUP, ...BAR_FILTERS, PAGE_PARAM, PER_PAGE_PARAM],
    body: paged({
      city: ref('City'),
      bars: array(ref('Bar')),
      events_today: array(ref('EventWithBar')),
      busiest_bars: array(ref('BusiestBar'), { maxItems: 5 }),
    }),
    errors: ['404'],
  }),

  // ---- city content
  events: endpoint({
    path: '/events/{state}/{city}',
    operationId: 'eventsByCity',
    summary: 'Events of a city by start time',
    pathParams: CITY_PATH,
    query: [
      dateParam('start_date', 'today'),
      dateParam('end_date', '30 days after today'),
      query('classification', { type: 'string', enum: [...CLASSIFICATIONS] }, 'event type'),
      GROUP,
      PAGE_PARAM,
      PER_PAGE_PARAM,
    ],
    body: paged({ events: array(ref('Event')) }),
    errors: ['404'],
  }),
  posts: endpoint({
    path: '/posts/{state}/{city}',
    operationId: 'postsByCity',
    summary: 'Posts of a city, newest first',
    pathParams: CITY_PATH,
    query: [dateParam('start_date', '30 days ago'), dateParam('end_date', 'today'), GROUP, PAGE_PARAM, PER_PAGE_PARAM],
    body: paged({ posts: array(ref('Post')) }),
    errors: ['404'],
  }),
  feed: endpoint({
    path: '/feed/{state}/{city}',
    operationId: 'cityFeed',
    summary: 'City feed: posts (paged) and upcoming events (first page)',
    pathParams: CITY_PATH,
    query: [PAGE_PARAM, PER_PAGE_PARAM],
    body: object({
      city: ref('City'),
      posts: array(ref('FeedPost')),
      events: array(ref('EventWithBar')),
      posts_pagination: ref('Pagination'),
      events_pagination: ref('Pagination'),
    }),
    errors: ['404'],
  }),

  // ---- discovery
  categories: endpoint({
    path: '/categories',
    operationId: 'listCategories',
    summary: 'Categories (the values of GET bars?category=) with their bar counts, by name',
    query: [],
    body: object({ categories: array(ref('CategoryCount')) }),
  }),
  cities: endpoint({
    path: '/cities',
    operationId: 'listCities',
    summary: 'Cities (the {state}/{city} of the city endpoints), most bars first, then name',
    query: [
      query('state', { type: 'string', pattern: '^[A-Za-z]{2}$' }, 'state abbreviation, case-insensitive'),
      query(
        'q',
        { type: 'string', minLength: 1, maxLength: MAX_Q },
        'city name prefix, case- and accent-insensitive (q=canon finds Cañon City)',
      ),
      PAGE_PARAM,
      PER_PAGE_PARAM,
    ],
    body: paged({ cities: array(ref('CityListItem')) }),
  }),
  groups: endpoint({
    path: '/groups/{state}/{city}',
    operationId: 'cityGroups',
    summary: 'Groups of a city (the values of group_slug) with their bar counts, by name',
    pathParams: CITY_PATH,
    query: [],
    body: object({ city: ref('City'), groups: array(ref('GroupCount')) }),
    errors: ['404'],
  }),

  // ---- search
  search: endpoint({
    path: '/search',
    operationId: 'search',
    summary: 'Search bars and cities by name',
    query: [
      query(
        'q',
        { type: 'string', minLength: 1, maxLength: MAX_Q },
        `search text (not blank, at most ${MAX_Q} characters); case-, accent- and apostrophe-insensitive ` +
          '(`canon` finds "Cañon City, CO"). Relevance: exact name, then name prefix, then a later word, ' +
          'then trigram similarity; within equal relevance nearer first (with latitude/longitude) or more popular first',
        true,
      ),
      query('latitude', latitude, 'with longitude: distances and nearer-first among equally relevant results'),
      query('longitude', longitude, 'with latitude'),
      query('type', { type: 'string', enum: ['bar', 'city'] }, 'only bars or only cities (default: both)'),
      query(
        'page',
        { type: 'integer', minimum: 1, maximum: 2147483647, default: 1 },
        'page number, from 1. Search serves the 1,000 best matches at most: a page that starts past the ' +
          '1,000th match ((page - 1) * per_page >= 1000) is a 400 ' +
          '"search results end at the 1,000th match; narrow q (or use GET bars filters)"',
      ),
      PER_PAGE_PARAM,
    ],
    body: object({
      results: array(ref('SearchResult')),
      pagination: ref('Pagination'),
      total_count_capped: {
        type: 'boolean',
        description:
          'true when there are more than 1,000 matches: only the 1,000 best are served, and ' +
          'pagination.total_count (exact up to 1,000) is 1,000',
      },
    }),
  }),

  // ---- usage (decisions.md v1.2 "Usage for partners")
  usage: endpoint({
    path: '/usage',
    operationId: 'getUsage',
    summary: "The key's rate-limit buckets and the subscriber's latest usage alerts (counts against no bucket)",
    description:
      "Like GitHub's `/rate_limit`: answered even when a bucket is exhausted, and counted in no bucket " +
      '(the rate-limit headers show the counts without this request). `-1` marks an unlimited bucket, as in ' +
      'the headers; `reset` is the window end in Unix seconds. `alerts`: the last 20 usage alerts (80, 90 and ' +
      '100 % of a bucket) of the subscriber, newest first. `deprecated_calls` (v1.3): the deprecated endpoints, ' +
      'parameters and fields the subscriber called in the last 14 days (docs/COMPATIBILITY.md).',
    query: [],
    body: ref('Usage'),
  }),

  // ---- usage history and request log (decisions.md v1.3; routes/usage.ts)
  usageHistory: endpoint({
    path: '/usage/history',
    operationId: 'getUsageHistory',
    summary: "The subscriber's answered requests per hour (or day), key and endpoint, by status class",
    description:
      'Counts against no bucket and is not counted itself (nor are `usage` and `usage/requests`). Buckets with ' +
      'no request are left out; `requests` = the sum of the four status classes; `rate_limited` counts the ' +
      '429s (part of `4xx`). Exact across instances; visible within 60 seconds. The range starts at the hour ' +
      '(day) of `start` and ends before `end`; at most 7 days of hours or 400 days of days (longer: 400).',
    query: [
      query('granularity', { type: 'string', enum: ['hour', 'day'], default: 'hour' }, 'bucket size'),
      query(
        'start',
        { type: 'string', format: 'date-time' },
        'ISO 8601 date-time with an offset (send + as %2B). Default: 24 hours (hour) or 30 days (day) before end',
      ),
      query('end', { type: 'string', format: 'date-time' }, 'ISO 8601 date-time with an offset. Default: now'),
      query(
        'endpoint',
        { type: 'string' },
        'only this endpoint, named as in the series (e.g. `bars`, `bars/:id`, `search`, `graphql`); unknown: 400 listing the names',
      ),
    ],
    body: ref('UsageHistory'),
  }),
  usageRequests: endpoint({
    path: '/usage/requests',
    operationId: 'listUsageRequests',
    summary: "The subscriber's request log: answers that ended in 4xx or 5xx, newest first (30 days)",
    description:
      'Counts against no bucket. An entry is visible within 5 seconds of its answer; of the 429s only the ' +
      'first of each key and minute is kept, and at most 1,000 entries a key and minute (the rest are counted ' +
      "in `usage/history`). Another subscriber's entries are never visible (a foreign `request_id` finds " +
      'nothing); no entry contains an API key (key-shaped values in the path or query are redacted). Pages: ' +
      'pass `next_cursor` as `cursor` (with the same filters) until it is null.',
    query: [
      query(
        'status',
        { type: 'string', pattern: '^([1-5][0-9][0-9]|[1-5]xx)$' },
        'a status code (e.g. `404`) or a class (`4xx`, `5xx`)',
      ),
      query('endpoint', { type: 'string' }, 'only this endpoint (names as in usage/history); unknown: 400'),
      query('request_id', { type: 'string', minLength: 1, maxLength: 128 }, 'the X-Request-Id of an answer'),
      query(
        'since',
        { type: 'string', format: 'date-time' },
        'entries at or after this instant (ISO 8601 with offset)',
      ),
      query(
        'until',
        { type: 'string', format: 'date-time' },
        'entries at or before this instant (ISO 8601 with offset)',
      ),
      query(
        'limit',
        {
          type: 'integer',
          minimum: USAGE_REQUESTS_LIMIT.min,
          maximum: USAGE_REQUESTS_LIMIT.max,
          default: USAGE_REQUESTS_LIMIT.default,
        },
        'entries per page',
      ),
      query('cursor', { type: 'string' }, 'opaque: the `next_cursor` of the previous page'),
    ],
    body: ref('UsageRequests'),
  }),

  // ---- bulk export (decisions.md "Bulk export and incremental sync"; docs/EXPORT.md)
  exportBars: endpoint({
    path: '/export/bars',
    operationId: 'exportBars',
    summary: 'Export bars as NDJSON (full, or changes since a watermark)',
    description: EXPORT_DESCRIPTION,
    query: [...EXPORT_PLACE, EXPORT_SINCE],
    body: {
      description: 'one line of the stream: bar lines, deleted lines (with updated_since), then the end line',
      oneOf: [ref('ExportBarLine'), ref('ExportDeletedLine'), ref('ExportEndLine')],
    },
    mediaType: 'application/x-ndjson',
    errors: ['404'],
  }),
  exportEvents: endpoint({
    path: '/export/events',
    operationId: 'exportEvents',
    summary: 'Export events as NDJSON (full, or changes since a watermark)',
    description: EXPORT_DESCRIPTION,
    query: [
      ...EXPORT_PLACE,
      dateParam('start_date', 'unbounded (only events starting at or after it)'),
      dateParam('end_date', 'unbounded (only events starting before its end)'),
      EXPORT_SINCE,
    ],
    body: {
      description: 'one line of the stream: event lines, deleted lines (with updated_since), then the end line',
      oneOf: [ref('ExportEventLine'), ref('ExportDeletedLine'), ref('ExportEndLine')],
    },
    mediaType: 'application/x-ndjson',
    errors: ['404'],
  }),
};

// ---------------------------------------------------------------- deprecations (docs/COMPATIBILITY.md)

/**
 * One deprecation, declared once. Everything else follows from it (server/contract/deprecations.ts):
 * the Deprecation / Sunset / Link headers on each request that uses it, `deprecated: true` in the
 * OpenAPI document, `@deprecated` in the partner GraphQL schema, the 410 after the sunset, and the
 * per-key count of deprecated calls in GET usage and the operator views.
 */
export interface Deprecation {
  /** The endpoint (a declaration of E), or the endpoint whose parameter or response field is deprecated. */
  endpoint: Endpoint;
  /** A query parameter of `endpoint`: only requests that send it use the deprecation. */
  parameter?: string;
  /**
   * A response field, as `<component schema>.<property>` (e.g. `BarDetail.price_level`): every
   * request to `endpoint` uses it. After the sunset the field may be removed; the endpoint keeps answering.
   */
  field?: string;
  /** The same thing in the partner GraphQL schema, if it has one: `Type.field` or `Type.field(argument)`. */
  graphql?: string;
  /** From when (YYYY-MM-DD, UTC midnight): the headers start then. */
  since: string;
  /** Removal (YYYY-MM-DD, UTC midnight), at least 6 months after `since`: 410 from then on. */
  sunset: string;
  /** What to use instead, shown in the 410 and the schemas. */
  replacement: string;
  /** The changelog entry that announced it (absolute URL, or a path on this API). */
  changelog: string;
}

/** The deprecations in force. None yet: tests declare their own (createPartnerApp's `deprecations`). */
export const DEPRECATIONS: Deprecation[] = [];
