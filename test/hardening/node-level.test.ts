/**
 * Defects 8 and 9 (issue 11): answers Node gives before express are JSON with
 * X-Request-Id (431, 400, 408, unknown method, CONNECT, 413), and a client
 * that never reads its answer is timed out (slow readers).
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createPartnerServer, type PartnerServer } from '../../server/http/server';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { buildApp } from '../support/partner-app';
import { parseRawAnswer as parse, rawExchange as raw } from '../support/raw-http';

describe('Node-level answers', () => {
  let db: TestDatabase;
  let server: PartnerServer;
  let port: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    const { app } = buildApp(db.partnerPool());
    server = createPartnerServer({ tls: undefined }, app, { headersTimeoutMs: 500, requestTimeoutMs: 500 });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await db.drop();
  });

  test.each([
    ['headers too large', `GET ${P}/bars HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ['malformed request line', 'GET / XTTP/1.1\r\n\r\n', 400],
    ['garbage', 'GARBAGE\r\n\r\n', 405],
    ['bad header syntax', `GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n`, 400],
    ['unknown method', `FOO ${P}/bars HTTP/1.1\r\nHost: x\r\n\r\n`, 405],
    ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
    ['body too large', `GET ${P}/bars HTTP/1.1\r\nHost: x\r\nContent-Length: 9999999\r\n\r\n`, 413],
    ['conflicting lengths', `GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n`, 400],
    ['HTTP/1.1 without Host', `GET ${P}/bars HTTP/1.1\r\nConnection: close\r\n\r\n`, 400],
    ['unknown Expect', `GET ${P}/bars HTTP/1.1\r\nHost: x\r\nExpect: tea-please\r\n\r\n`, 417],
    ['NUL in the path', `GET ${P}/bars/%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, 400],
  ])('%s: a JSON answer with X-Request-Id', async (_name, request, status) => {
    const answer = parse(await raw(port, request));
    expect(answer.status).toBe(status);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.body).toEqual(expect.objectContaining({ request_id: answer.headers['x-request-id'] }));
    expect(typeof (answer.body as { error: unknown }).error).toBe('string');
  });

  test('a request whose headers never finish gets a JSON 408', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      let out = '';
      socket.on('data', (c) => (out += c.toString()));
      socket.on('close', () => resolve(out));
      socket.on('error', () => resolve(out));
      socket.write(`GET ${P}/bars HTTP/1.1\r\nHost: x\r\n`); // and nothing more
    });
    const parsed = parse(answer);
    expect(parsed.status).toBe(408);
    expect(parsed.headers['x-request-id']).toBeTruthy();
  });
});

describe('slow readers', () => {
  test('a client that never reads a large answer is disconnected after the idle timeout', async () => {
    const app = express();
    const big = 'x'.repeat(8 * 1024 * 1024);
    app.get('/big', (_req, res) => {
      res.type('text/plain').send(big);
    });
    const server = createPartnerServer({ tls: undefined }, app, { idleTimeoutMs: 700 });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const started = Date.now();
    const closedAfter = await new Promise<number>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n');
      socket.pause(); // never read: the server's writes stall once the socket buffers are full
      socket.on('close', () => resolve(Date.now() - started));
      socket.on('error', () => undefined);
      server.once('connection', (s: net.Socket) => s.once('close', () => socket.destroy()));
    });
    expect(closedAfter).toBeLessThan(5000);
    await new Promise((r) => server.close(r));
  });
});
