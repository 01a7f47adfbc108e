// Calls from the browser pages to this server's own API. The credential (an operator token or an
// API key) lives in the tab's sessionStorage and goes out as a Bearer header: no cookie is ever
// set, so there is no CSRF surface, and it never appears in a URL.

export function stored(name) {
  return sessionStorage.getItem(name) || '';
}

export function store(name, value) {
  if (value) sessionStorage.setItem(name, value);
  else sessionStorage.removeItem(name);
}

/** A failed call: the server's message, its HTTP status and the request id to report. */
export class ApiError extends Error {
  constructor(message, status, requestId) {
    super(message);
    this.status = status;
    this.requestId = requestId || null;
  }
}

/** GET or POST `url` with the credential; the parsed JSON, or an ApiError carrying the server's message. */
export async function requestJson(url, { credential, method = 'GET', body } = {}) {
  const headers = { Accept: 'application/json' };
  if (credential) headers.Authorization = `Bearer ${credential}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(url, { method, headers, body, credentials: 'omit', cache: 'no-store' });
  } catch (e) {
    throw new ApiError(`The server could not be reached (${e.message})`, 0, null);
  }
  const requestId = res.headers.get('x-request-id');
  let json;
  try {
    json = await res.json();
  } catch {
    throw new ApiError(`HTTP ${res.status}: the answer is not JSON`, res.status, requestId);
  }
  if (json && Array.isArray(json.errors) && json.errors.length) {
    const ids = json.errors.map((e) => e.extensions && e.extensions.request_id).filter(Boolean);
    throw new ApiError(json.errors.map((e) => e.message).join('; '), res.status, ids[0] || requestId);
  }
  if (!res.ok) throw new ApiError(json.error || `HTTP ${res.status}`, res.status, json.request_id || requestId);
  return json;
}

/** A GraphQL document against this listener's /graphql (the operator endpoint). */
export async function graphql(credential, query, variables = {}) {
  const json = await requestJson('/graphql', {
    credential,
    method: 'POST',
    body: JSON.stringify({ query, variables }),
  });
  return json.data;
}
