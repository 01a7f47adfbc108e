/**
 * The client's transport alone (a scripted fetch, no server): 503 retried after Retry-After in
 * seconds or as an HTTP date, backoff without Retry-After, the bound, and what is never retried.
 * The real server's 429s: test/client/client.test.ts.
 */
import {
  PartnerApiError,
  createClient,
  deprecationLink,
  retryDelayMs,
  type ClientOptions,
  type DeprecationEvent,
} from '../../clients/typescript/src';

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', ...headers } });

function scripted(responses: Response[], options: Partial<ClientOptions> = {}) {
  const seen: string[] = [];
  const slept: number[] = [];
  const api = createClient({
    baseUrl: 'http://partner.test',
    apiKey: 'pbk_test',
    fetch: async (req) => {
      seen.push(`${req.method} ${new URL(req.url).pathname}`);
      const next = responses.shift();
      if (!next) throw new Error('no more scripted responses');
      return next;
    },
    sleep: async (ms) => void slept.push(ms),
    now: () => Date.parse('2030-01-01T00:00:00Z'),
    ...options,
  });
  return { api, seen, slept };
}

const unavailable = (headers: Record<string, string>) =>
  json(503, { error: 'Service temporarily unavailable, please retry', request_id: 'r503' }, headers);
const ok = () => json(200, { message: 'ok', timestamp: '2030-01-01T00:00:00Z', subscriber_id: 's', plan: 'p' });

describe('client transport: retries', () => {
  test('a 503 is retried after Retry-After (seconds), then answers', async () => {
    const { api, seen, slept } = scripted([unavailable({ 'Retry-After': '5' }), ok()]);
    expect((await api.get('/test_endpoint')).message).toBe('ok');
    expect(seen).toEqual(['GET /api/v1/partner/test_endpoint', 'GET /api/v1/partner/test_endpoint']);
    expect(slept).toEqual([5000]);
  });

  test('Retry-After as an HTTP date: the time until then; without one: exponential backoff', async () => {
    const { api, slept } = scripted([
      unavailable({ 'Retry-After': 'Tue, 01 Jan 2030 00:00:07 GMT' }),
      unavailable({}),
      ok(),
    ]);
    await api.get('/test_endpoint');
    expect(slept).toEqual([7000, 2000]);
    expect(retryDelayMs(null, 0, 1000, 0)).toBe(1000);
    expect(retryDelayMs('garbage', 3, 1000, 0)).toBe(8000);
  });

  test('bounded: after maxRetries (default 2) the 503 is thrown, typed', async () => {
    const { api, seen, slept } = scripted([1, 2, 3].map(() => unavailable({ 'Retry-After': '1' })));
    const error = await api.get('/test_endpoint').then(
      () => undefined,
      (e: unknown) => e as PartnerApiError,
    );
    expect(error).toBeInstanceOf(PartnerApiError);
    expect([error?.status, error?.error, error?.request_id, error?.retryAfter]).toEqual([
      503,
      'Service temporarily unavailable, please retry',
      'r503',
      1,
    ]);
    expect(seen).toHaveLength(3);
    expect(slept).toEqual([1000, 1000]);
  });

  test('other statuses are not retried; a non-JSON error body keeps the status text and the header id', async () => {
    const { api, seen } = scripted([
      new Response('<html>bad gateway</html>', {
        status: 502,
        statusText: 'Bad Gateway',
        headers: { 'X-Request-Id': 'edge-1' },
      }),
    ]);
    const error = await api.get('/categories').then(
      () => undefined,
      (e: unknown) => e as PartnerApiError,
    );
    expect([error?.status, error?.error, error?.request_id]).toEqual([502, 'Bad Gateway', 'edge-1']);
    expect(seen).toHaveLength(1);
  });
});

describe('client transport: deprecation and cancelling', () => {
  const deprecated = () =>
    json(
      200,
      { categories: [] },
      {
        Deprecation: '@1893456000',
        Sunset: 'Sat, 01 Jan 2033 00:00:00 GMT',
        Link: '<https://api.example.com/changelog#x>; rel="deprecation"; type="text/html"',
        'X-Request-Id': 'dep-1',
      },
    );

  test('an answer with a Deprecation header is reported with Sunset and the Link, answered as usual', async () => {
    const events: DeprecationEvent[] = [];
    const { api } = scripted([deprecated(), ok()], { onDeprecation: (e) => events.push(e) });
    expect(await api.get('/categories')).toEqual({ categories: [] });
    await api.get('/test_endpoint'); // not deprecated: not reported
    expect(events).toEqual([
      {
        method: 'GET',
        path: '/api/v1/partner/categories',
        deprecation: '@1893456000',
        sunset: 'Sat, 01 Jan 2033 00:00:00 GMT',
        link: 'https://api.example.com/changelog#x',
        request_id: 'dep-1',
      },
    ]);
  });

  test('by default one console warning per method and path; onDeprecation: false, none', async () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const { api } = scripted([deprecated(), deprecated()]);
      await api.get('/categories');
      await api.get('/categories');
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toMatch(
        /GET \/api\/v1\/partner\/categories is deprecated .*Sunset: Sat, 01 Jan 2033/,
      );
      const { api: quiet } = scripted([deprecated()], { onDeprecation: false });
      await quiet.get('/categories');
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      warn.mockRestore();
    }
  });

  test('deprecationLink picks the rel="deprecation" target among several links', () => {
    expect(deprecationLink('<https://a/x>; rel="next", <https://a/d>; rel=deprecation')).toBe('https://a/d');
    expect(deprecationLink('<https://a/x>; rel="next"')).toBeNull();
    expect(deprecationLink(null)).toBeNull();
  });

  test('an AbortSignal ends the wait for a retry (the default sleep)', async () => {
    const controller = new AbortController();
    const api = createClient({
      baseUrl: 'http://partner.test',
      apiKey: 'pbk_test',
      fetch: async () => {
        setImmediate(() => controller.abort(new Error('stopped by the caller')));
        return unavailable({ 'Retry-After': '30' });
      },
    });
    const started = process.hrtime.bigint();
    await expect(api.get('/test_endpoint', { signal: controller.signal })).rejects.toThrow('stopped by the caller');
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(10_000); // not the 30 s
  });
});
