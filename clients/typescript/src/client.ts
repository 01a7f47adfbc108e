/**
 * The hand-written layer over openapi-fetch and the generated types: createClient({ baseUrl, apiKey }),
 * get() for every JSON endpoint (typed by path and parameters), paginate() / items() over every paged
 * list, exportLines() for the NDJSON exports, text() for the HTML and SDL pages, graphql() for typed
 * GraphQL documents, and graphqlPages() over a GraphQL connection. Failures throw PartnerApiError.
 */
import createFetchClient, { type Client } from 'openapi-fetch';
import { errorFromResponse, PartnerApiError, PartnerGraphqlError, type GraphqlError } from './errors';
import type { paths } from './generated/openapi';
import {
  createTransport,
  type DeprecationEvent,
  type EtagOptions,
  type RetryEvent,
  type RetryOptions,
} from './transport';

/** The API's path prefix; a baseUrl without it gets it appended. */
export const API_PREFIX = '/api/v1/partner';

// ---------------------------------------------------------------- types derived from the generated paths

type Get<P extends keyof paths> = paths[P] extends { get: infer O } ? O : never;
type Ok<P extends keyof paths> = Get<P> extends { responses: { 200: { content: infer C } } } ? C : never;
type Params<P extends keyof paths> = Get<P> extends { parameters: infer X } ? X : never;

/** Paths whose GET answers JSON. */
export type JsonPath = {
  [P in keyof paths]: Ok<P> extends { 'application/json': unknown } ? (P extends '/graphql' ? never : P) : never;
}[keyof paths];
/** The NDJSON exports. */
export type ExportPath = {
  [P in keyof paths]: Ok<P> extends { 'application/x-ndjson': unknown } ? P : never;
}[keyof paths];
/** Paths whose GET answers another media type (the HTML pages, the GraphQL SDL): read as text. */
export type TextPath = Exclude<
  { [P in keyof paths]: Get<P> extends never ? never : P }[keyof paths],
  JsonPath | ExportPath | '/graphql'
>;

/** The 200 body of a JSON path. */
export type ResponseBody<P extends JsonPath> = Ok<P> extends { 'application/json': infer B } ? B : never;
/** One line of an export's stream. */
export type ExportLine<P extends ExportPath> = Ok<P> extends { 'application/x-ndjson': infer L } ? L : never;

type RequiredKeys<T> = { [K in keyof T]-?: undefined extends T[K] ? never : K }[keyof T];
type Defined<T> = Exclude<T, undefined>;
type PathParams<P extends keyof paths> = Params<P> extends { path: infer X } ? Defined<X> : never;
type QueryParams<P extends keyof paths> = Params<P> extends { query?: infer X } ? Defined<X> : never;

/** The `params` of a path: `path` (required when it has path parameters) and `query` (typed, no other name). */
export type RequestParams<P extends keyof paths> = ([PathParams<P>] extends [never]
  ? unknown
  : { path: PathParams<P> }) &
  ([QueryParams<P>] extends [never]
    ? unknown
    : RequiredKeys<QueryParams<P>> extends never
      ? { query?: QueryParams<P> }
      : { query: QueryParams<P> });

/** The options of one request. */
export type RequestInit<P extends keyof paths> = {
  params: RequestParams<P>;
  headers?: Record<string, string>;
  signal?: AbortSignal;
};
type HasRequired<P extends keyof paths> = [PathParams<P>] extends [never]
  ? [QueryParams<P>] extends [never]
    ? false
    : RequiredKeys<QueryParams<P>> extends never
      ? false
      : true
  : true;
/** `init` is optional unless the path has a required parameter. */
export type InitArgs<P extends keyof paths> =
  HasRequired<P> extends true
    ? [init: RequestInit<P>]
    : [init?: Omit<RequestInit<P>, 'params'> & { params?: RequestParams<P> }];

// ---------------------------------------------------------------- paged lists

/**
 * Every paged list of the REST API (page/per_page, a `pagination` object with total_pages) and where
 * its items and its pagination are. The feed pages its posts (posts_pagination); its events are the
 * first page only. test/client/client.test.ts checks that this lists every path with a `page` parameter.
 */
export const PAGED = {
  '/bars_by_city/{state}/{city}': { items: 'bars', pagination: 'pagination' },
  '/events/{state}/{city}': { items: 'events', pagination: 'pagination' },
  '/posts/{state}/{city}': { items: 'posts', pagination: 'pagination' },
  '/feed/{state}/{city}': { items: 'posts', pagination: 'posts_pagination' },
  '/cities': { items: 'cities', pagination: 'pagination' },
  '/search': { items: 'results', pagination: 'pagination' },
} as const satisfies {
  [P in JsonPath]?: { items: keyof ResponseBody<P> & string; pagination: keyof ResponseBody<P> & string };
};
export type PagedPath = keyof typeof PAGED;
/** The item type of a paged list. */
export type PageItem<P extends PagedPath> = ResponseBody<P>[(typeof PAGED)[P]['items'] &
  keyof ResponseBody<P>] extends (infer I)[]
  ? I
  : never;

interface Pagination {
  current_page: number;
  total_pages: number;
}

// ---------------------------------------------------------------- GraphQL

/** A typed GraphQL document: the generated `...Document` constants (TypedDocumentString). */
export interface GraphqlDocument<TResult, TVariables> {
  __apiType?: (variables: TVariables) => TResult;
  toString(): string;
}
export interface GraphqlResult<TResult> {
  data: TResult;
  /** Errors of fields that failed (their fields are null in data), e.g. NOT_FOUND for an unknown bar. */
  errors?: GraphqlError[];
  extensions?: { cost?: { requestedPoints: number; nodeLimit: number; remaining: number } };
}
type VariablesArgs<TVariables> = string extends keyof TVariables
  ? [variables?: TVariables] // a document without variables: Exact<{ [key: string]: never }>
  : RequiredKeys<TVariables> extends never
    ? [variables?: TVariables]
    : [variables: TVariables];
interface Connection {
  pageInfo: { hasNextPage: boolean; endCursor?: string | null };
}

// ---------------------------------------------------------------- the client

export interface ClientOptions {
  /** The server's origin (`https://api.example.com`); the client adds /api/v1/partner unless it is there. */
  baseUrl: string;
  apiKey: string;
  /** Retries of 429 and 503 (after Retry-After); `false`: none. */
  retry?: RetryOptions | false;
  /** Revalidate GET answers with their ETag (If-None-Match; a 304 is answered from memory). Off by default. */
  etag?: boolean | EtagOptions;
  /** Headers sent with every request (e.g. a User-Agent). */
  headers?: Record<string, string>;
  /** Called before each retry. */
  onRetry?: (event: RetryEvent) => void;
  /**
   * Called for an answer that carries a `Deprecation` header (RFC 9745; with `Sunset`, RFC 8594, and
   * `Link; rel="deprecation"`). Default: one console.warn per method and path; `false`: nothing.
   */
  onDeprecation?: ((event: DeprecationEvent) => void) | false;
  /** The fetch to use (default globalThis.fetch). */
  fetch?: (request: Request) => Promise<Response>;
  /** How to wait before a retry (default setTimeout, ended early by the request's AbortSignal); tests inject their own. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The clock for an HTTP-date Retry-After (default Date.now). */
  now?: () => number;
}

export interface PartnerClient {
  /** GET a JSON endpoint; resolves to its 200 body, throws PartnerApiError otherwise. */
  get<P extends JsonPath>(path: P, ...init: InitArgs<P>): Promise<ResponseBody<P>>;
  /** Every page of a paged list, from `page` (default 1) to the last one. */
  paginate<P extends PagedPath>(path: P, ...init: InitArgs<P>): AsyncGenerator<ResponseBody<P>, void, undefined>;
  /** Every item of a paged list, page after page. */
  items<P extends PagedPath>(path: P, ...init: InitArgs<P>): AsyncGenerator<PageItem<P>, void, undefined>;
  /** The lines of an NDJSON export, parsed; throws when the stream ends without its `end` line. */
  exportLines<P extends ExportPath>(path: P, ...init: InitArgs<P>): AsyncGenerator<ExportLine<P>, void, undefined>;
  /** GET an HTML or SDL page as text. */
  text<P extends TextPath>(path: P, ...init: InitArgs<P>): Promise<string>;
  /** Run a typed GraphQL document (POST; `{ method: 'GET' }` for a query in the URL). */
  graphql<TResult, TVariables>(
    document: GraphqlDocument<TResult, TVariables>,
    ...args: [...VariablesArgs<TVariables>, options?: { method?: 'GET' | 'POST'; signal?: AbortSignal }]
  ): Promise<GraphqlResult<TResult>>;
  /**
   * Every page of a GraphQL connection: runs the document with `after` set to the previous page's
   * pageInfo.endCursor while pageInfo.hasNextPage; `connection` picks the connection out of the data.
   */
  graphqlPages<TResult, TVariables extends { after?: string | null }>(
    document: GraphqlDocument<TResult, TVariables>,
    variables: TVariables,
    connection: (data: TResult) => Connection | null | undefined,
  ): AsyncGenerator<TResult, void, undefined>;
  /** The openapi-fetch client underneath (same transport: retries, ETags); answers `{ data, error, response }`. */
  raw: Client<paths>;
}

/** setTimeout, rejected with the signal's reason when it aborts first. */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** The default onDeprecation: one warning per method and path. */
function warnOnce(): (event: DeprecationEvent) => void {
  const warned = new Set<string>();
  return (e) => {
    const key = `${e.method} ${e.path}`;
    if (warned.has(key)) return;
    warned.add(key);
    console.warn(
      `@partner-bar/client: ${key} is deprecated (Deprecation: ${e.deprecation}` +
        `${e.sunset ? `, Sunset: ${e.sunset}` : ''})${e.link ? `; see ${e.link}` : ''}`,
    );
  };
}

function apiBase(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, '');
  return trimmed.endsWith(API_PREFIX) ? trimmed : `${trimmed}${API_PREFIX}`;
}

export function createClient(options: ClientOptions): PartnerClient {
  if (!options.apiKey) throw new TypeError('createClient: apiKey is required');
  const retry = options.retry === false ? { maxRetries: 0 } : (options.retry ?? {});
  const etag = options.etag === true ? {} : options.etag || undefined;
  const transport = createTransport({
    fetch: options.fetch ?? ((request) => globalThis.fetch(request)),
    retry: { maxRetries: 2, maxDelayMs: 60_000, baseDelayMs: 1_000, ...retry },
    etag: etag ? { maxEntries: 500, ...etag } : undefined,
    sleep: options.sleep ?? sleep,
    now: options.now ?? Date.now,
    onRetry: options.onRetry,
    onDeprecation: options.onDeprecation === false ? undefined : (options.onDeprecation ?? warnOnce()),
  });
  const raw = createFetchClient<paths>({
    baseUrl: apiBase(options.baseUrl),
    fetch: transport,
    headers: { ...options.headers, Authorization: `Bearer ${options.apiKey}` },
    // corner1[latitude]=..: the bounding-box parameters are deepObject.
    querySerializer: { object: { style: 'deepObject', explode: true } },
  });
  // openapi-fetch's methods are typed per path; the layer's own types (above) are checked at its callers.
  const rawGet = raw.GET as unknown as (
    path: string,
    init: Record<string, unknown>,
  ) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

  async function send(path: string, init: Record<string, unknown> = {}, parseAs?: string) {
    const result = await rawGet(path, { ...init, ...(parseAs ? { parseAs } : {}) });
    if (!result.response.ok) {
      // openapi-fetch has read the body already: build the error from what it parsed.
      const body = result.error ?? (await errorFromResponse(result.response)).body;
      throw new PartnerApiError(result.response.status, body, result.response.headers, result.response.statusText);
    }
    return result;
  }

  const client: PartnerClient = {
    raw,
    async get(path, ...init) {
      return (await send(path, init[0] as Record<string, unknown>)).data as never;
    },
    async *paginate(path, ...init) {
      const first = (init[0] ?? {}) as { params?: { path?: unknown; query?: Record<string, unknown> } };
      const spec = PAGED[path];
      let page = Number(first.params?.query?.page ?? 1);
      for (;;) {
        const params = { ...first.params, query: { ...first.params?.query, page } };
        const { data } = await send(path, { ...first, params });
        yield data as never;
        const pagination = (data as Record<string, unknown>)[spec.pagination] as Pagination;
        if (pagination.current_page >= pagination.total_pages) return;
        page = pagination.current_page + 1;
      }
    },
    async *items(path, ...init) {
      const key = PAGED[path].items;
      for await (const page of client.paginate(path, ...init)) {
        yield* (page as Record<string, unknown>)[key] as never[];
      }
    },
    async *exportLines(path, ...init) {
      const first = (init[0] ?? {}) as { headers?: Record<string, string> };
      const { data } = await send(
        path,
        { ...first, headers: { Accept: 'application/x-ndjson', ...first.headers } },
        'stream',
      );
      const stream = data as ReadableStream<Uint8Array>;
      const decoder = new TextDecoder();
      let buffered = '';
      let ended = false;
      const parse = (line: string) => {
        const parsed = JSON.parse(line) as { type?: string };
        ended = parsed.type === 'end';
        return parsed as never;
      };
      const reader = stream.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buffered += decoder.decode(value, { stream: true });
          const lines = buffered.split('\n');
          buffered = lines.pop()!;
          for (const line of lines) if (line) yield parse(line);
        }
        buffered += decoder.decode();
        if (buffered) yield parse(buffered);
      } finally {
        reader.releaseLock();
      }
      if (!ended) throw new Error(`${path}: the export stream ended without its end line (cut short); retry it`);
    },
    async text(path, ...init) {
      return (await send(path, (init[0] ?? {}) as Record<string, unknown>, 'text')).data as string;
    },
    async graphql(document, ...args) {
      const variables = args[0] as Record<string, unknown> | undefined;
      const options = (args[1] ?? {}) as { method?: 'GET' | 'POST'; signal?: AbortSignal };
      const query = document.toString();
      const result =
        options.method === 'GET'
          ? await raw.GET('/graphql', {
              params: { query: { query, ...(variables ? { variables: JSON.stringify(variables) } : {}) } },
              signal: options.signal,
            })
          : await raw.POST('/graphql', {
              // the document's variables (the OpenAPI document types them only as "an object")
              body: { query, ...(variables ? { variables: variables as Record<string, never> } : {}) },
              signal: options.signal,
            });
      const { response } = result;
      const body = (result.data ?? result.error) as (GraphqlResult<never> & { data?: unknown }) | undefined;
      const graphqlShaped = typeof body === 'object' && body !== null && ('data' in body || 'errors' in body);
      if (!graphqlShaped) throw new PartnerApiError(response.status, body, response.headers, response.statusText);
      if (!response.ok || body.data == null) throw new PartnerGraphqlError(response.status, body, response.headers);
      return body as never;
    },
    async *graphqlPages(document, variables, connection) {
      let after = variables.after ?? null;
      for (;;) {
        const run = client.graphql as unknown as (d: unknown, v: unknown) => Promise<{ data: never }>;
        const { data } = await run(document, { ...variables, after });
        yield data;
        const page = connection(data);
        if (!page?.pageInfo.hasNextPage || !page.pageInfo.endCursor) return;
        after = page.pageInfo.endCursor;
      }
    },
  };
  return client;
}
