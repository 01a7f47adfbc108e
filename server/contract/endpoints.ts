/**
 * The one declaration of every partner endpoint: its path, its query
 * parameters (declared-params.ts: each with its OpenAPI parameter object, its
 * rule and the SQL argument it feeds), its checks across parameters, its 404
 * text and its 200 body schema. The declaration drives the unknown-parameter
 * check (`strictQuery`), the route's reading of the parameters (`readArgs`),
 * the call's parameter list (calls.ts `partner`) and the OpenAPI document
 * (openapi/document.ts builds `paths` from ENDPOINTS). To add an endpoint:
 * declare it here with `endpoint({...})`, its call in calls.ts, its component
 * schemas in openapi/document.ts, and mount it in http/routes/index.ts.
 */
import type { RequestHandler } from 'express';
import {
  BARS_LIMIT,
  CLASSIFICATIONS,
  LATITUDE,
  LONGITUDE,
  MAX_IDS,
  MAX_Q,
  PAGE,
  PER_PAGE,
  PRICE_LEVELS,
  RADIUS,
  RATING,
  SEARCH_CAP,
  SEARCH_TYPES,
  STATUSES,
  USAGE_REQUESTS_LIMIT,
  badRequest,
  barIds,
  openAtAlone,
} from './params';
import {
  p,
  param,
  readByRoute,
  type ArgOf,
  type Args,
  type Param,
  type PathNames,
  type Schema,
} from './declared-params';

export type { Schema };

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

export const PAGE_PARAM = p.int('page', PAGE, 'page number, from 1');
export const PER_PAGE_PARAM = p.int('per_page', PER_PAGE, 'items per page');
export const GROUP = p.nonEmpty(
  'group_slug',
  'only bars of this group (curated set of bars of the city; see GET groups/{state}/{city}); unknown: empty result',
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
/** `corner1[latitude]`, `corner1[longitude]` (deepObject): feeds corner1_latitude and corner1_longitude. */
const corner = <const N extends 1 | 2>(n: N): Param<`corner${N}_latitude` | `corner${N}_longitude`> => {
  const name = `corner${n}` as const;
  return {
    name,
    spec: {
      name,
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
    },
    args: [`${name}_latitude`, `${name}_longitude`],
    read: (q) =>
      ({
        [`${name}_latitude`]: q.nestedNumber(name, 'latitude', LATITUDE) ?? null,
        [`${name}_longitude`]: q.nestedNumber(name, 'longitude', LONGITUDE) ?? null,
      }) as Record<`corner${N}_latitude` | `corner${N}_longitude`, unknown>,
  };
};

/** Filters of GET bars and GET bars_by_city (decisions.md v1.1 "Filters"); with barFiltersCheck. */
export const BAR_FILTERS = [
  p.boolean('open_now', "open (true) or closed (false) now by the bar's hours"),
  p.dateTime(
    'open_at',
    "only bars open at this instant (ISO 8601 date-time with offset, judged in each bar's local time; send + as %2B); not with open_now",
  ),
  p.listOf('price_level', PRICE_LEVELS, 'comma-separated price levels 1-4; bars with any of them', {
    arg: 'price_levels',
    pattern: '^[1-4](,[1-4])*$',
    map: Number,
  }),
  p.number('min_rating', RATING, 'only bars whose google_rating is at least this'),
  p.listOf(
    'status',
    STATUSES,
    'comma-separated current occupancy statuses (closed, quiet, moderate, busy, very_busy); bars with any of them',
    { arg: 'statuses' },
  ),
] as const;
const barFiltersCheck = (a: Args) => openAtAlone({ openAt: 'open_at', openNow: 'open_now' }, a.open_now, a.open_at);

/** latitude and longitude: both or neither. */
const positionCheck = (a: Args) => {
  if ((a.latitude === null) !== (a.longitude === null))
    throw badRequest('latitude and longitude must be given together');
};

/** GET bars: a radius needs a centre; a bounding box needs all four values and excludes a radius. */
function placeCheck(a: Args): void {
  if (a.radius !== null && (a.latitude === null || a.longitude === null))
    throw badRequest('radius requires latitude and longitude');
  positionCheck(a);
  const corners = [a.corner1_latitude, a.corner1_longitude, a.corner2_latitude, a.corner2_longitude];
  const given = corners.filter((c) => c !== null).length;
  if (given > 0 && given < 4) {
    throw badRequest(
      'a bounding box needs all of corner1[latitude], corner1[longitude], corner2[latitude] and corner2[longitude]',
    );
  }
  if (a.radius !== null && given === 4)
    throw badRequest('radius cannot be combined with a bounding box (corner1, corner2)');
}

/** Parameters and description shared by the export endpoints (read by routes/export.ts). */
const EXPORT_PLACE = [
  readByRoute('state', { type: 'string', pattern: '^[A-Za-z]{2}$' }, 'only this state (two letters, case-insensitive)'),
  readByRoute('city', { type: 'string', minLength: 1 }, 'only this city of `state` (requires state); unknown: 404'),
];
const EXPORT_SINCE = readByRoute(
  'updated_since',
  { type: 'string', format: 'date-time' },
  'only objects changed at or after this instant (ISO 8601 date-time with offset, microseconds kept), plus ' +
    "`deleted` lines for objects removed since; pass the previous export's `next_updated_since`",
);
/** An export's date parameter: documented as the city endpoints' dates, read by routes/export.ts. */
const exportDate = (name: string, dflt: string): Param<never> => ({ ...p.date(name, dflt), args: [], read: undefined });
const EXPORT_DESCRIPTION =
  'Streams `application/x-ndjson` (Accept must admit it: `*/*`, `application/*` or `application/x-ndjson`; ' +
  'otherwise 406), gzip when Accept-Encoding asks. One JSON object a line; the last line is ' +
  '`{"type":"end","count":N,"next_updated_since":ISO}` (a stream without it was cut short). Counts as one ' +
  'request; at most 2 concurrent exports per key (the third: 429 with `period` "concurrent").';

// ---------------------------------------------------------------- declarations

export interface Endpoint<Path extends string = string, Q extends readonly Param[] = readonly Param[]> {
  /** OpenAPI path template below the prefix, e.g. `/bars_by_city/{state}/{city}`. */
  path: Path;
  operationId: string;
  summary: string;
  description?: string;
  /** Path parameters (OpenAPI parameter objects); each is the SQL argument of its name. */
  pathParams?: Schema[];
  /** The accepted query parameters (declared-params.ts): anything else is a 400. */
  query: Q;
  /** Checks across query parameters, after each one's own (readArgs). */
  check?: (args: Args) => void;
  /** The 404 text when the api function answers NULL (default 'Not found'). */
  notFound?: string;
  /** Schema of the 200 body. */
  body: Schema;
  /** Error statuses besides 400/401/403/406/429/500/503 (e.g. '404'). */
  errors?: string[];
  /** Media type of the 200 body (default application/json). */
  mediaType?: string;
  /**
   * True when this request's answer is seldom asked for again: a page around its own point
   * (latitude/longitude), so its compressed form is made anew for nearly every request and is made
   * quickly (http/caching.ts sendCacheable).
   */
  seldomRepeats?: (args: Args) => boolean;
}

/** The SQL argument names an endpoint's declaration feeds: its path parameters and its query parameters' args. */
export type EndpointArgs<E> = E extends Endpoint<infer Path, infer Q> ? PathNames<Path> | ArgOf<Q[number]> : never;

export const ENDPOINTS: Endpoint[] = [];

/** The GraphQL endpoint (beta) below the prefix: POST and GET, usage name 'graphql'. */
export const GRAPHQL_ROUTE = '/graphql';

/** Declares an endpoint (added to ENDPOINTS, hence to the OpenAPI document). */
export function endpoint<const Path extends string, const Q extends readonly Param[]>(
  e: Endpoint<Path, Q>,
): Endpoint<Path, Q> {
  ENDPOINTS.push(e);
  return e;
}

/** `/bars_by_city/{state}/{city}` → `/bars_by_city/:state/:city`. */
export const expressPath = (e: Endpoint): string => e.path.replace(/\{([^}]+)\}/g, ':$1');

/** The names of the query parameters an endpoint accepts. */
export const acceptedNames = (e: Endpoint): string[] => e.query.map((declared) => declared.name);

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
      param(
        'ids',
        { type: 'string' },
        `comma-separated bar ids, at most ${MAX_IDS}; order kept, duplicates once, unknown ids skipped`,
        (q) => barIds(q.string('ids')),
      ),
      p.nonEmpty('category', 'category slug (see GET categories); unknown: empty result'),
      p.number('latitude', LATITUDE, 'with longitude: nearest first (and the radius centre)'),
      p.number('longitude', LONGITUDE, 'with latitude'),
      p.number('radius', RADIUS, 'miles; requires latitude and longitude'),
      corner(1),
      corner(2),
      p.int('limit', BARS_LIMIT, 'maximum number of bars'),
      ...BAR_FILTERS,
    ],
    check: (a) => {
      placeCheck(a);
      barFiltersCheck(a);
    },
    seldomRepeats: (a) => a.latitude !== null,
    body: object({ bars: array(ref('Bar')) }),
  }),
  bar: endpoint({
    path: '/bars/{id}',
    operationId: 'getBar',
    summary: 'Bar details',
    pathParams: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'bar id' }],
    query: [],
    notFound: 'Bar not found',
    body: object({ bar: ref('BarDetail') }),
    errors: ['404'],
  }),
  barsByCity: endpoint({
    path: '/bars_by_city/{state}/{city}',
    operationId: 'barsByCity',
    summary: "Bars of a city, today's events and the busiest open bars",
    pathParams: CITY_PATH,
    query: [
      GROUP,
      ...BAR_FILTERS,
      PAGE_PARAM,
      PER_PAGE_PARAM,
      p.int(
        'events_today_limit',
        { min: 1, max: 1000 },
        'at most this many of events_today (1–1,000); absent: all of them until 2027-05-25, then 100 (see the changelog)',
      ),
    ],
    check: barFiltersCheck,
    notFound: 'City not found',
    body: paged({
      city: ref('City'),
      bars: array(ref('Bar')),
      events_today: array(ref('EventWithBar')),
      busiest_bars: array(ref('BusiestBar'), { maxItems: 5 }),
      events_today_total: {
        type: 'integer',
        minimum: 0,
        description:
          "v1.3: the number of the city's (or group's) events today; events_today holds the first events_today_limit of them",
      },
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
      p.date('start_date', 'today'),
      p.date('end_date', '30 days after today'),
      p.oneOf('classification', CLASSIFICATIONS, 'event type'),
      GROUP,
      PAGE_PARAM,
      PER_PAGE_PARAM,
    ],
    notFound: 'City not found',
    body: paged({ events: array(ref('Event')) }),
    errors: ['404'],
  }),
  posts: endpoint({
    path: '/posts/{state}/{city}',
    operationId: 'postsByCity',
    summary: 'Posts of a city, newest first',
    pathParams: CITY_PATH,
    query: [p.date('start_date', '30 days ago'), p.date('end_date', 'today'), GROUP, PAGE_PARAM, PER_PAGE_PARAM],
    notFound: 'City not found',
    body: paged({ posts: array(ref('Post')) }),
    errors: ['404'],
  }),
  feed: endpoint({
    path: '/feed/{state}/{city}',
    operationId: 'cityFeed',
    summary: 'City feed: posts (paged) and upcoming events (first page)',
    pathParams: CITY_PATH,
    query: [PAGE_PARAM, PER_PAGE_PARAM],
    notFound: 'City not found',
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
      p.pattern(
        'state',
        '^[A-Za-z]{2}$',
        'state must be a two-letter state abbreviation',
        'state abbreviation, case-insensitive',
      ),
      p.text('q', 'city name prefix, case- and accent-insensitive (q=canon finds Cañon City)'),
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
    notFound: 'City not found',
    body: object({ city: ref('City'), groups: array(ref('GroupCount')) }),
    errors: ['404'],
  }),

  // ---- search
  search: endpoint({
    path: '/search',
    operationId: 'search',
    summary: 'Search bars and cities by name',
    query: [
      p.text(
        'q',
        `search text (not blank, at most ${MAX_Q} characters); case-, accent- and apostrophe-insensitive ` +
          '(`canon` finds "Cañon City, CO"). Relevance: exact name, then name prefix, then a later word, ' +
          'then trigram similarity; within equal relevance nearer first (with latitude/longitude) or more popular first',
        { required: true },
      ),
      p.number('latitude', LATITUDE, 'with longitude: distances and nearer-first among equally relevant results'),
      p.number('longitude', LONGITUDE, 'with latitude'),
      p.oneOf('type', SEARCH_TYPES, 'only bars or only cities (default: both)'),
      p.int(
        'page',
        PAGE,
        'page number, from 1. Search serves the 1,000 best matches at most: a page that starts past the ' +
          '1,000th match ((page - 1) * per_page >= 1000) is a 400 ' +
          '"search results end at the 1,000th match; narrow q (or use GET bars filters)"',
      ),
      PER_PAGE_PARAM,
    ],
    check: (a) => {
      positionCheck(a);
      // decisions.md v1.1: the 1,000 best matches at most (api.search checks it too)
      if (((a.page as number) - 1) * (a.per_page as number) >= SEARCH_CAP)
        throw badRequest('search results end at the 1,000th match; narrow q (or use GET bars filters)');
    },
    seldomRepeats: (a) => a.latitude !== null,
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
      readByRoute('granularity', { type: 'string', enum: ['hour', 'day'], default: 'hour' }, 'bucket size'),
      readByRoute(
        'start',
        { type: 'string', format: 'date-time' },
        'ISO 8601 date-time with an offset (send + as %2B). Default: 24 hours (hour) or 30 days (day) before end',
      ),
      readByRoute('end', { type: 'string', format: 'date-time' }, 'ISO 8601 date-time with an offset. Default: now'),
      readByRoute(
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
      readByRoute(
        'status',
        { type: 'string', pattern: '^([1-5][0-9][0-9]|[1-5]xx)$' },
        'a status code (e.g. `404`) or a class (`4xx`, `5xx`)',
      ),
      readByRoute('endpoint', { type: 'string' }, 'only this endpoint (names as in usage/history); unknown: 400'),
      readByRoute('request_id', { type: 'string', minLength: 1, maxLength: 128 }, 'the X-Request-Id of an answer'),
      readByRoute(
        'since',
        { type: 'string', format: 'date-time' },
        'entries at or after this instant (ISO 8601 with offset)',
      ),
      readByRoute(
        'until',
        { type: 'string', format: 'date-time' },
        'entries at or before this instant (ISO 8601 with offset)',
      ),
      readByRoute(
        'limit',
        {
          type: 'integer',
          minimum: USAGE_REQUESTS_LIMIT.min,
          maximum: USAGE_REQUESTS_LIMIT.max,
          default: USAGE_REQUESTS_LIMIT.default,
        },
        'entries per page',
      ),
      readByRoute('cursor', { type: 'string' }, 'opaque: the `next_cursor` of the previous page'),
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
      exportDate('start_date', 'unbounded (only events starting at or after it)'),
      exportDate('end_date', 'unbounded (only events starting before its end)'),
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
  /**
   * A change of `parameter`'s default at the sunset (the parameter stays; no 410). From `since`, a
   * request that does not send `parameter` uses the deprecation when `affects` holds of its answer's
   * text (the new default would change that answer); from the sunset on, such a request is answered
   * as if it had sent `parameter=to`.
   */
  newDefault?: { to: string; affects: (body: string) => boolean };
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

/** The default of events_today_limit from its sunset: a big city's page stops growing with the city. */
export const EVENTS_TODAY_DEFAULT = 100;

/** `"events_today_total" : N` at the end of a bars_by_city answer (api.bars_by_city writes it last; only the tail is read, not a 300 KB page). */
const EVENTS_TODAY_TOTAL = /"events_today_total"\s*:\s*(\d+)\s*\}\s*$/;

/**
 * The deprecations in force (tests also declare their own: createPartnerApp's `deprecations`).
 * Each is announced by a `deprecated` entry of docs/changelog.yml on its `since` day.
 */
export const DEPRECATIONS: Deprecation[] = [
  {
    endpoint: E.barsByCity,
    parameter: 'events_today_limit',
    newDefault: {
      to: String(EVENTS_TODAY_DEFAULT),
      affects: (body) => Number(EVENTS_TODAY_TOTAL.exec(body.slice(-64))?.[1] ?? 0) > EVENTS_TODAY_DEFAULT,
    },
    since: '2026-11-25',
    sunset: '2027-05-25',
    replacement: `send events_today_limit (1-1,000) for more than ${EVENTS_TODAY_DEFAULT} of events_today; events_today_total counts them all`,
    changelog: '/api/v1/partner/changelog',
  },
];
