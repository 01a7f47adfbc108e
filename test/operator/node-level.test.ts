/**
 * The operator listener answers what Node refuses before any handler as the
 * partner listener does (web/node-answers.ts): JSON {"error","request_id"} with
 * X-Request-Id and Connection: close, and a request whose headers are too slow
 * gets a 408 instead of holding its socket for Node's default minute.
 */
import { createTestDatabase, type TestDatabase } from '../support/db';
import { parseRawAnswer, rawExchange } from '../support/raw-http';
import { startOperatorHarness, type OperatorHarness } from './support';

describe('operator listener: answers Node gives before any handler', () => {
  let db: TestDatabase;
  let ops: OperatorHarness;
  let port: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    ops = await startOperatorHarness(db, { headersTimeoutMs: 500, requestTimeoutMs: 500 });
    port = Number(new URL(ops.server.url).port);
  });
  afterAll(async () => {
    await ops?.close();
    await db?.drop();
  });

  test.each([
    ['headers too large', `POST /graphql HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ['malformed request line', 'GET / XTTP/1.1\r\n\r\n', 400],
    ['bad header syntax', 'GET /metrics HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n', 400],
    ['conflicting lengths', 'POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n', 400],
    ['HTTP/1.1 without Host', 'GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n', 400],
    ['unknown method', 'FOO /graphql HTTP/1.1\r\nHost: x\r\n\r\n', 405],
    ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
    ['unknown Expect', 'POST /graphql HTTP/1.1\r\nHost: x\r\nExpect: tea-please\r\n\r\n', 417],
  ])('%s: a JSON answer with X-Request-Id, then the connection closes', async (_name, request, status) => {
    const answer = parseRawAnswer(await rawExchange(port, request));
    expect(answer.status).toBe(status);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.headers.connection).toBe('close');
    expect(answer.body).toEqual({ error: expect.any(String), request_id: answer.headers['x-request-id'] });
    if (status === 405) {
      expect(answer.headers.allow).toBe('GET, HEAD, POST');
      expect((answer.body as { error: string }).error).toMatch(/accepts GET, HEAD and POST$/);
    }
  });

  test('a request whose headers never finish gets a JSON 408 once the headers timeout passes', async () => {
    const started = Date.now();
    const answer = parseRawAnswer(await rawExchange(port, 'POST /graphql HTTP/1.1\r\nHost: x\r\n', true));
    expect(answer.status).toBe(408);
    expect(answer.body).toEqual({ error: expect.stringMatching(/timeout/i), request_id: expect.any(String) });
    expect(Date.now() - started).toBeLessThan(5_000); // Node's own default would wait a minute
  });

  test('a well-formed request still reaches the handlers', async () => {
    const res = await ops.gql<{ __typename: string }>('{ __typename }');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { __typename: 'Query' } });
  });
});
