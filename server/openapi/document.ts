/**
 * The OpenAPI 3.1 document of the partner API, served publicly at
 * /api/v1/partner/openapi.json. Every response of the API test suite is
 * validated against it (test/support/openapi.ts), so it cannot drift from the
 * code. Shapes follow partner-api-v1.md + decisions.md: every key always
 * present, null for an empty optional value.
 */
import { GRAPHQL_INTRODUCTION, graphqlPaths } from './graphql';
import {
  DEPRECATIONS,
  ENDPOINTS,
  type Deprecation,
  array,
  latitude,
  longitude,
  nullable,
  object,
  ref,
  type Endpoint,
  type Schema,
} from '../contract/endpoints';
import { CLASSIFICATIONS } from '../contract/params';
import { markDeprecations } from '../contract/deprecations';
import { webhookOperations } from '../webhooks/openapi';

const string: Schema = { type: 'string' };
const id: Schema = { type: 'string', pattern: '^[0-9]+$', description: 'identifier (a string)' };
const url: Schema = { type: 'string', format: 'uri', pattern: '^https?://', description: 'absolute http(s) URL' };
const timestamp: Schema = {
  type: 'string',
  format: 'date-time',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$',
  description: 'UTC, e.g. 2026-11-22T21:30:00Z',
};
const intensity: Schema = { type: 'integer', minimum: 0, maximum: 100 };
const hhmm: Schema = { type: 'string', pattern: '^([01]\\d|2[0-3]):[0-5]\\d$' };
const DAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const STATUSES = ['closed', 'quiet', 'moderate', 'busy', 'very_busy'];

const occupancyList = {
  current_intensity: {
    ...nullable(intensity),
    description: "percent of the bar's typical peak; 0 when closed, null when open without data",
  },
  status: {
    ...nullable({ type: 'string', enum: STATUSES }),
    description: 'closed (by its hours), quiet 0-24, moderate 25-49, busy 50-74, very_busy 75-100',
  },
};

const barListProperties: Record<string, Schema> = {
  id,
  name: string,
  address: string,
  city: string,
  state: { type: 'string', pattern: '^[A-Z]{2}$' },
  zip_code: nullable(string),
  latitude,
  longitude,
  phone: nullable(string),
  website: nullable(url),
  google_rating: nullable({ type: 'number', minimum: 0, maximum: 5 }),
  google_ratings_total: { type: 'integer', minimum: 0 },
  primary_category: nullable(ref('Category')),
  categories: array(ref('Category')),
  hours: ref('Hours'),
  profile_picture_url: nullable(url),
  photos: array(ref('Photo')),
  occupancy: ref('Occupancy'),
};

const eventShortProperties: Record<string, Schema> = {
  id,
  name: string,
  description: nullable(string),
  start_at: timestamp,
  end_at: timestamp,
};

const eventProperties: Record<string, Schema> = {
  id,
  title: string,
  description: nullable(string),
  classification: { type: 'string', enum: [...CLASSIFICATIONS] },
  start_at: timestamp,
  end_at: timestamp,
  created_at: timestamp,
  bar: ref('BarSummary'),
};

const pagination = object({
  current_page: { type: 'integer', minimum: 1 },
  total_pages: { type: 'integer', minimum: 0 },
  total_count: { type: 'integer', minimum: 0 },
  per_page: { type: 'integer', minimum: 1, maximum: 100 },
});

const barRef = object({ id, name: string });
const point = object(
  {
    type: { const: 'Point' },
    coordinates: { type: 'array', prefixItems: [longitude, latitude], minItems: 2, maxItems: 2 },
  },
  'GeoJSON Point: [longitude, latitude]',
);
/** An instant to the microsecond (export updated_at, deleted_at, watermarks). */
const exportInstant: Schema = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{6}Z$' };

const schemas: Record<string, Schema> = {
  Error: object({ error: string, request_id: string }),
  RateLimitError: object({
    error: string,
    limit: { type: 'integer', description: 'the limit of the exceeded bucket' },
    period: { type: 'string', enum: ['minute', 'day', 'month'] },
    request_id: string,
  }),
  Category: object({ name: string, slug: { type: 'string', pattern: '^[a-z0-9]+(-[a-z0-9]+)*$' } }),
  Photo: object({ url }),
  Hours: object(
    Object.fromEntries(DAYS.map((d) => [d, array(object({ open: hhmm, close: hhmm }))])),
    'all seven days; [] when closed all day; a close before the open closes after midnight (the slot belongs to the day it opens); local wall-clock times',
  ),
  Occupancy: object(occupancyList),
  OccupancyDetail: object({
    ...occupancyList,
    hourly_data: array(object({ hour: { type: 'integer', minimum: 0, maximum: 23 }, intensity: nullable(intensity) }), {
      minItems: 24,
      maxItems: 24,
      description: "hours 0-23 of the bar's current local day of the week",
    }),
  }),
  Bar: object(barListProperties, 'Bar, list form'),
  BarDetail: object(
    {
      ...barListProperties,
      occupancy: ref('OccupancyDetail'),
      description: nullable(string),
      price_level: nullable({ type: 'integer', minimum: 1, maximum: 4 }),
      events: array(ref('EventShort'), { maxItems: 10, description: 'upcoming events (ending after now) by start_at' }),
    },
    'Bar, detail form',
  ),
  BarRef: barRef,
  BarSummary: object({
    id,
    name: string,
    address: string,
    city: string,
    state: string,
    latitude,
    longitude,
    profile_picture_url: nullable(url),
  }),
  EventShort: object(eventShortProperties),
  EventWithBar: object({ ...eventShortProperties, bar: ref('BarRef') }),
  Event: object(eventProperties),
  Post: object({ id, text: string, created_at: timestamp, bar: ref('BarSummary') }),
  FeedPost: object({
    id,
    content: string,
    created_at: timestamp,
    user: object({ id, username: string }),
    bar: ref('BarRef'),
    media: array(object({ url })),
  }),
  City: object({ name: string, state: string }),
  CategoryCount: object({
    name: string,
    slug: { type: 'string', pattern: '^[a-z0-9]+(-[a-z0-9]+)*$' },
    bar_count: { type: 'integer', minimum: 0 },
  }),
  CityListItem: object({
    name: string,
    state: { type: 'string', pattern: '^[A-Z]{2}$' },
    time_zone: { type: 'string', description: 'IANA time zone, e.g. America/Chicago' },
    latitude,
    longitude,
    bar_count: { type: 'integer', minimum: 0 },
  }),
  GroupCount: object({
    name: string,
    slug: { type: 'string', pattern: '^[a-z0-9]+(-[a-z0-9]+)*$' },
    bar_count: { type: 'integer', minimum: 0 },
  }),
  BusiestBar: object({ id, name: string, current_intensity: intensity }),
  Pagination: pagination,
  SearchResult: {
    oneOf: [
      object(
        {
          type: { const: 'bar' },
          id,
          name: string,
          address: string,
          state: string,
          location: point,
          price_level: nullable({ type: 'integer', minimum: 1, maximum: 4 }),
          distance: {
            ...nullable({ type: 'number', minimum: 0 }),
            description: 'miles, 2 decimals; null without latitude/longitude',
          },
          image_url: nullable(url),
        },
        'a bar',
      ),
      object(
        {
          type: { const: 'city' },
          id,
          name: { type: 'string', description: '"<City>, <ST>"' },
          address: { type: 'null' },
          state: string,
          location: point,
          price_level: { type: 'null' },
          distance: {
            ...nullable({ type: 'number', minimum: 0 }),
            description: 'miles to the city centre; null without latitude/longitude',
          },
          image_url: { type: 'null' },
        },
        'a city (location: its centre)',
      ),
    ],
  },
  Changelog: object({
    entries: array(
      object({
        date: {
          type: 'string',
          format: 'date',
          pattern: '^\\d{4}-\\d{2}-\\d{2}$',
          description: 'UTC day of the change',
        },
        version: { type: 'string', description: 'contract version, e.g. "1.2" ("1.2 beta": the GraphQL beta)' },
        kind: { type: 'string', enum: ['added', 'changed', 'deprecated', 'removed', 'fixed'] },
        summary: string,
        links: array({ type: 'string', description: 'an absolute URL, or a path on this API' }),
      }),
      { description: 'newest first' },
    ),
  }),
  TestResponse: object({ message: string, timestamp, subscriber_id: string, plan: string }),
  Usage: object({
    subscriber_id: { type: 'string', format: 'uuid' },
    plan: string,
    buckets: object({ minute: ref('UsageBucket'), day: ref('UsageBucket'), month: ref('UsageBucket') }),
    alerts: array(ref('UsageAlert'), { maxItems: 20 }),
    deprecated_calls: array(ref('DeprecatedCalls'), {
      description:
        "the subscriber's calls of deprecated endpoints, parameters and fields in the last 14 UTC days (all keys), most recent first; [] when none (docs/COMPATIBILITY.md)",
    }),
  }),
  DeprecatedCalls: object({
    what: { type: 'string', description: 'e.g. `GET /bars parameter radius`' },
    sunset: { ...nullable(timestamp), description: 'when it stops working (null: no longer declared)' },
    calls_last_14_days: { type: 'integer', minimum: 1 },
    last_call_at: timestamp,
  }),
  UsageBucket: object(
    {
      limit: { type: 'integer', minimum: -1, description: 'requests allowed in the window; -1 unlimited' },
      used: { type: 'integer', minimum: -1, description: 'requests counted in the window; -1 unlimited (not counted)' },
      remaining: { type: 'integer', minimum: -1, description: 'limit - used, at least 0; -1 unlimited' },
      reset: { type: 'integer', description: 'when the window ends, Unix seconds (as X-RateLimit-Reset)' },
    },
    'one UTC-aligned rate-limit window of the key',
  ),
  UsageAlert: object({
    level: { type: 'string', enum: ['warning', 'high_warning', 'limit_reached'], description: '80, 90 or 100 %' },
    bucket: { type: 'string', enum: ['minute', 'day', 'month'] },
    window_start: timestamp,
    created_at: timestamp,
  }),
  UsageHistory: object({
    subscriber_id: { type: 'string', format: 'uuid' },
    granularity: { type: 'string', enum: ['hour', 'day'] },
    start: timestamp,
    end: timestamp,
    series: array(ref('UsageHistoryBucket')),
  }),
  UsageHistoryBucket: object(
    {
      start: timestamp,
      key_prefix: { type: 'string', description: 'the first characters of the key (never the key)' },
      endpoint: { type: 'string', description: "route pattern, e.g. 'bars/:id'; '(none)': no endpoint matched" },
      requests: { type: 'integer', minimum: 1, description: 'answered requests (the sum of the four classes)' },
      status: object({
        '2xx': { type: 'integer', minimum: 0 },
        '3xx': { type: 'integer', minimum: 0 },
        '4xx': { type: 'integer', minimum: 0 },
        '5xx': { type: 'integer', minimum: 0 },
      }),
      rate_limited: { type: 'integer', minimum: 0, description: 'the 429s (part of 4xx)' },
    },
    'one hour (or day) of one key and endpoint',
  ),
  UsageRequests: object({
    requests: array(ref('UsageRequest'), { maxItems: 200 }),
    next_cursor: { anyOf: [{ type: 'string' }, { type: 'null' }], description: 'pass as cursor for the next page' },
  }),
  UsageRequest: object({
    request_id: string,
    created_at: { type: 'string', format: 'date-time', description: 'when the answer was written (UTC, ms)' },
    key_prefix: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    method: string,
    path: { type: 'string', maxLength: 2048, description: 'path and query as received, key-shaped values redacted' },
    endpoint: string,
    status: { type: 'integer', minimum: 100, maximum: 599 },
    error: { anyOf: [{ type: 'string' }, { type: 'null' }], description: "the answer's error message" },
    duration_ms: { type: 'number', minimum: 0 },
    client_ip: { anyOf: [{ type: 'string' }, { type: 'null' }] },
  }),
  // Bulk export (docs/EXPORT.md): each schema is ONE line of the application/x-ndjson stream.
  ExportBarLine: object(
    {
      type: { const: 'bar' },
      bar: object(
        {
          ...barListProperties,
          occupancy: ref('OccupancyDetail'),
          description: nullable(string),
          price_level: nullable({ type: 'integer', minimum: 1, maximum: 4 }),
          updated_at: exportInstant,
        },
        'Bar, detail form without events, plus updated_at',
      ),
    },
    'a bar (export/bars)',
  ),
  ExportEventLine: object(
    {
      type: { const: 'event' },
      event: object({ ...eventProperties, updated_at: exportInstant }),
    },
    'an event, full form plus updated_at (export/events)',
  ),
  ExportDeletedLine: object(
    { type: { const: 'deleted' }, kind: { type: 'string', enum: ['bar', 'event'] }, id, deleted_at: exportInstant },
    'an object removed since updated_since (only with updated_since)',
  ),
  ExportEndLine: object(
    {
      type: { const: 'end' },
      count: { type: 'integer', minimum: 0, description: 'lines before this one' },
      next_updated_since: {
        ...exportInstant,
        description: 'the watermark: pass it as updated_since of the next export (loses no change committed meanwhile)',
      },
    },
    'the last line; a stream without it was cut short',
  ),
};

// ---------------------------------------------------------------- headers

const intHeader = (description: string): Schema => ({ description, schema: { type: 'integer' } });
const RATE_LIMIT_HEADERS: Record<string, Schema> = {};
for (const [suffix, what] of [
  ['', 'the limited bucket with the fewest remaining requests (minute when none is limited)'],
  ['-Minute', 'the UTC clock minute'],
  ['-Day', 'the UTC day'],
  ['-Month', 'the UTC calendar month'],
] as const) {
  RATE_LIMIT_HEADERS[`X-RateLimit-Limit${suffix}`] = intHeader(`limit of ${what}; -1 when unlimited`);
  RATE_LIMIT_HEADERS[`X-RateLimit-Remaining${suffix}`] = intHeader(`requests left in ${what}; -1 when unlimited`);
  RATE_LIMIT_HEADERS[`X-RateLimit-Reset${suffix}`] = intHeader(`end of the window of ${what} (Unix seconds)`);
}

const headers: Record<string, Schema> = {
  'X-Request-Id': {
    description:
      "the client's own X-Request-Id when it is 1-128 characters of [A-Za-z0-9._-], else a generated one; also request_id in error bodies",
    required: true,
    schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,128}$' },
  },
  'Retry-After': { description: 'seconds to wait', required: true, schema: { type: 'integer', minimum: 1 } },
  Allow: { description: 'the methods this API accepts', required: true, schema: { const: 'GET, HEAD' } },
  'Strict-Transport-Security': { description: 'on HTTPS responses', schema: { type: 'string' } },
  ETag: {
    description: 'strong validator of the body; send it back in If-None-Match to get a 304 (no rate-limit cost)',
    required: true,
    schema: { type: 'string', pattern: '^"[^"]+"$' },
  },
  'Cache-Control': {
    description: 'private, no-cache on partner answers (revalidate: occupancy is live)',
    required: true,
    schema: { type: 'string' },
  },
};
for (const [name, header] of Object.entries(RATE_LIMIT_HEADERS)) headers[name] = header;

const headerRef = (name: string): Schema => ({ $ref: `#/components/headers/${name}` });
const common = {
  'X-Request-Id': headerRef('X-Request-Id'),
  'Strict-Transport-Security': headerRef('Strict-Transport-Security'),
};
const rateLimited = (required: boolean) =>
  Object.fromEntries(
    Object.keys(RATE_LIMIT_HEADERS).map((name) => [
      name,
      required ? { ...RATE_LIMIT_HEADERS[name], required: true } : headerRef(name),
    ]),
  );

const json = (schema: Schema) => ({ 'application/json': { schema } });
const errorResponse = (description: string, extraHeaders: Record<string, Schema> = {}, schema = ref('Error')) => ({
  description,
  headers: { ...common, ...extraHeaders },
  content: json(schema),
});

const responses: Record<string, Schema> = {
  BadRequest: errorResponse(
    'A parameter breaks a rule; the message names the parameter and the rule',
    rateLimited(true),
  ),
  Unauthorized: errorResponse('Missing API key / Invalid API key', rateLimited(false)),
  Forbidden: errorResponse(
    'API key has been revoked / Subscriber account is suspended / Subscription has expired',
    rateLimited(false),
  ),
  NotFound: errorResponse('Unknown bar, unknown state/city, or unknown path', rateLimited(false)),
  MethodNotAllowed: errorResponse('Any method but GET and HEAD', { Allow: headerRef('Allow') }),
  NotAcceptable: errorResponse('The Accept header does not admit application/json'),
  TooManyRequests: errorResponse(
    'A rate limit is exceeded (or more than 30 failed authentications a minute from one address)',
    { ...rateLimited(false), 'Retry-After': headerRef('Retry-After') },
    ref('RateLimitError'),
  ),
  InternalError: errorResponse('Server fault; reveals nothing, quote request_id'),
  Unavailable: errorResponse('The database is unreachable; retry later', { 'Retry-After': headerRef('Retry-After') }),
};

/** The 410 of a deprecation after its sunset: in the document only while a declaration needs it (deprecations.ts). */
const goneSchema = object(
  {
    error: string,
    sunset: { ...timestamp, description: 'when it was removed (its Sunset)' },
    replacement: { type: 'string', description: 'what to use instead' },
    request_id: string,
  },
  'a deprecated endpoint or parameter after its sunset',
);
const goneResponse = errorResponse(
  'A deprecated endpoint or parameter after its sunset date (docs/COMPATIBILITY.md)',
  { Deprecation: headerRef('Deprecation'), Sunset: headerRef('Sunset'), Link: headerRef('Link') },
  ref('Gone'),
);
/** On each request that uses a deprecated endpoint, parameter or field (docs/COMPATIBILITY.md). */
const deprecationHeaders: Record<string, Schema> = {
  Deprecation: {
    description: 'RFC 9745: when the endpoint, parameter or field this request used was deprecated, `@<Unix seconds>`',
    schema: { type: 'string', pattern: '^@-?[0-9]+$' },
  },
  Sunset: {
    description: 'RFC 8594: when it stops working (HTTP-date); from then on the request gets 410',
    schema: { type: 'string' },
  },
  Link: {
    description: 'with a deprecation: `<changelog entry URL>; rel="deprecation"` (RFC 9745)',
    schema: { type: 'string' },
  },
};
const GONE = { schema: goneSchema, response: goneResponse, headers: deprecationHeaders };

// ---------------------------------------------------------------- operations

const security = [{ bearer: [] }, { apiKey: [] }];
const BY_STATUS: Record<string, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  406: 'NotAcceptable',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'Unavailable',
};
const cacheHeaders = {
  ETag: headerRef('ETag'),
  'Cache-Control': headerRef('Cache-Control'),
};
const publicCacheHeaders = {
  ETag: headerRef('ETag'),
  'Cache-Control': { description: 'public, max-age=3600', required: true, schema: { const: 'public, max-age=3600' } },
};
/** The path item of a declared endpoint (endpoints.ts). */
function operation(e: Endpoint): Schema {
  const streamed = e.mediaType === 'application/x-ndjson'; // export/*: no ETag, no 304
  return {
    get: {
      operationId: e.operationId,
      summary: e.summary,
      ...(e.description ? { description: e.description } : {}),
      security,
      parameters: [...(e.pathParams ?? []), ...e.query.map((declared) => declared.spec)],
      responses: {
        200: {
          description: 'OK',
          headers: { ...common, ...rateLimited(true), ...(streamed ? {} : cacheHeaders) },
          content: { [e.mediaType ?? 'application/json']: { schema: e.body } },
        },
        ...(streamed
          ? {}
          : {
              304: {
                description:
                  'Not Modified: If-None-Match holds the current ETag; no body; counts against no rate-limit bucket',
                headers: { ...common, ...rateLimited(true), ...cacheHeaders },
              },
            }),
        ...Object.fromEntries(
          [...new Set(['400', '401', '403', '406', '429', '500', '503', ...(e.errors ?? [])])]
            .sort()
            .map((status) => [status, { $ref: `#/components/responses/${BY_STATUS[status]}` }]),
        ),
      },
    },
  };
}

export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Partner Bar Data API',
    license: { name: 'Proprietary: use under the partner agreement', identifier: 'LicenseRef-Partner-Agreement' },
    version: '1.0',
    description: [
      'Read-only bar data for partners. Every endpoint is GET (HEAD also works); any other method is 405 with `Allow: GET, HEAD`.',
      'Only application/json is served (406 otherwise). Every response carries `X-Request-Id`; error bodies are',
      '`{"error": ..., "request_id": ...}`. Null marks an empty optional value; every key is always present.',
      'Timestamps are UTC `YYYY-MM-DDTHH:MM:SSZ`; "today", "open now" and date-only bounds are in the city\'s time zone.',
      GRAPHQL_INTRODUCTION, // server/openapi/graphql.ts
    ].join(' '),
  },
  jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
  servers: [{ url: '/api/v1/partner' }],
  security,
  paths: {
    ...Object.fromEntries(ENDPOINTS.map((e) => [e.path, operation(e)])),
    ...graphqlPaths, // the GraphQL endpoint (beta): server/openapi/graphql.ts
    '/docs': {
      get: {
        operationId: 'docs',
        summary: 'This reference as an interactive HTML page (no authentication)',
        security: [],
        responses: {
          200: {
            description: 'HTML page (Scalar API Reference) rendering this document',
            headers: { ...common, ...publicCacheHeaders },
            content: { 'text/html': { schema: { type: 'string' } } },
          },
          304: { description: 'Not Modified', headers: { ...common, ...publicCacheHeaders } },
          405: { $ref: '#/components/responses/MethodNotAllowed' },
        },
      },
    },
    '/dashboard': {
      get: {
        operationId: 'dashboard',
        summary: 'Your usage as an HTML page: buckets, hourly history, failed requests (no authentication to load it)',
        description:
          'The page asks for an API key and calls `usage`, `usage/history` and `usage/requests` with it (kept in the ' +
          "tab's session storage, sent as Bearer), so it shows nothing those calls do not. Strict Content-Security-Policy.",
        security: [],
        responses: {
          200: {
            description: 'HTML page',
            headers: { ...common, ETag: { schema: { type: 'string' } } },
            content: { 'text/html': { schema: { type: 'string' } } },
          },
          304: { description: 'Not Modified', headers: common },
          405: { $ref: '#/components/responses/MethodNotAllowed' },
        },
      },
    },
    '/changelog': {
      get: {
        operationId: 'changelog',
        summary: 'The changelog, newest first (no authentication)',
        description:
          'Every change a partner can see, from the one source that also gives `changelog.atom` and CHANGELOG.md. ' +
          'What is breaking, how deprecations are announced and how long things stay supported: docs/COMPATIBILITY.md.',
        security: [],
        responses: {
          200: {
            description: 'The entries, newest first',
            headers: { ...common, ...publicCacheHeaders },
            content: json(ref('Changelog')),
          },
          304: { description: 'Not Modified', headers: { ...common, ...publicCacheHeaders } },
          400: errorResponse('A malformed If-None-Match'),
          405: { $ref: '#/components/responses/MethodNotAllowed' },
          406: { $ref: '#/components/responses/NotAcceptable' },
        },
      },
    },
    '/changelog.atom': {
      get: {
        operationId: 'changelogAtom',
        summary: 'The changelog as an Atom feed (RFC 4287; no authentication)',
        security: [],
        responses: {
          200: {
            description: 'Atom feed: one entry per changelog entry (category = kind), newest first',
            headers: { ...common, ...publicCacheHeaders },
            content: { 'application/atom+xml': { schema: { type: 'string' } } },
          },
          304: { description: 'Not Modified', headers: { ...common, ...publicCacheHeaders } },
          400: errorResponse('A malformed If-None-Match'),
          405: { $ref: '#/components/responses/MethodNotAllowed' },
          406: errorResponse('The Accept header does not admit application/atom+xml'),
        },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'openApi',
        summary: 'This document (no authentication)',
        security: [],
        responses: {
          200: {
            description: 'OpenAPI 3.1 document',
            headers: { ...common, ...publicCacheHeaders },
            content: json({
              type: 'object',
              properties: { openapi: { type: 'string' }, paths: { type: 'object' } },
              required: ['openapi', 'paths'],
            }),
          },
          304: { description: 'Not Modified', headers: { ...common, ...publicCacheHeaders } },
          405: { $ref: '#/components/responses/MethodNotAllowed' },
          406: { $ref: '#/components/responses/NotAcceptable' },
        },
      },
    },
  },
  webhooks: webhookOperations,
  components: {
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY> (preferred)' },
      apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
    },
    schemas,
    headers,
    responses,
  },
};

/** Serialised once; served as is. */
export const openApiJson = JSON.stringify(markDeprecations(openApiDocument, DEPRECATIONS, GONE));

/** The document with other deprecations than the declared ones marked (tests declare their own). */
export const openApiFor = (deprecations: readonly Deprecation[]) =>
  markDeprecations(openApiDocument, deprecations, GONE) as typeof openApiDocument;
