/**
 * Typed errors: every answer that is not a success becomes a PartnerApiError carrying the
 * contract's `status`, `error` and `request_id` (quote it to support); GraphQL answers without
 * data become a PartnerGraphqlError, which adds the GraphQL `errors`.
 */

/** A GraphQL error as the partner endpoint formats it. */
export interface GraphqlError {
  message: string;
  path?: (string | number)[];
  extensions?: { code?: string; request_id?: string; [key: string]: unknown };
}

export class PartnerApiError extends Error {
  override readonly name: string = 'PartnerApiError';
  /** The HTTP status (404, 429, ...). */
  readonly status: number;
  /** The body's `error` message (or the status text when the body is not the API's JSON). */
  readonly error: string;
  /** The body's `request_id`, else the X-Request-Id header ('' when neither is there). */
  readonly request_id: string;
  /** 429: the limit and the period of the exceeded bucket (`limit`, `period` of the body). */
  readonly limit?: number;
  readonly period?: string;
  /** 429 and 503: the Retry-After the server sent, in seconds (when it sent one). */
  readonly retryAfter?: number;
  /** The parsed body (or its text when it is not JSON). */
  readonly body: unknown;
  readonly headers: Headers;

  constructor(status: number, body: unknown, headers: Headers, statusText = '') {
    const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const error = typeof b.error === 'string' ? b.error : statusText || `HTTP ${status}`;
    const requestId =
      typeof b.request_id === 'string' ? b.request_id : (headers.get('x-request-id') ?? firstGraphqlRequestId(b) ?? '');
    super(`${status} ${error} (request_id ${requestId || 'unknown'})`);
    this.status = status;
    this.error = error;
    this.request_id = requestId;
    if (typeof b.limit === 'number') this.limit = b.limit;
    if (typeof b.period === 'string') this.period = b.period;
    const retryAfter = headers.get('retry-after');
    if (retryAfter !== null && /^\d+$/.test(retryAfter)) this.retryAfter = Number(retryAfter);
    this.body = body;
    this.headers = headers;
  }
}

/** A GraphQL request that produced no data: a rejected query (400, 413) or a failed one (200 with `data: null`). */
export class PartnerGraphqlError extends PartnerApiError {
  override readonly name: string = 'PartnerGraphqlError';
  /** The answer's `errors`. */
  readonly errors: GraphqlError[];
  /** `extensions.code` of the first error (BAD_USER_INPUT, NOT_FOUND, MAX_DEPTH_EXCEEDED, ...). */
  readonly code: string | undefined;

  constructor(status: number, body: { errors?: GraphqlError[] }, headers: Headers) {
    const errors = Array.isArray(body.errors) ? body.errors : [];
    super(
      status,
      { error: errors[0]?.message ?? 'GraphQL request failed', request_id: firstGraphqlRequestId(body) },
      headers,
    );
    this.errors = errors;
    this.code = errors[0]?.extensions?.code;
  }
}

function firstGraphqlRequestId(body: Record<string, unknown>): string | undefined {
  const errors = body.errors as GraphqlError[] | undefined;
  const id = Array.isArray(errors) ? errors[0]?.extensions?.request_id : undefined;
  return typeof id === 'string' ? id : undefined;
}

/** Reads a failed response's body and turns it into a PartnerApiError. */
export async function errorFromResponse(response: Response): Promise<PartnerApiError> {
  const text = await response.text().catch(() => '');
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON (a proxy's page): keep the text */
  }
  return new PartnerApiError(response.status, body, response.headers, response.statusText);
}
