/**
 * The drain closes a keep-alive connection once it has been idle for the grace period, but not one
 * whose next request is already waiting unread: after a busy stretch of the event loop, the
 * connection looks idle by its last answer while the client's request sits in the socket.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createPartnerServer } from '../../server/http/server';

function busyFor(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // the event loop is blocked: nothing is read from any socket meanwhile
  }
}

test('a request waiting unread when the idle check runs is answered (Connection: close), not reset', async () => {
  const server = createPartnerServer({ tls: undefined }, (_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  const closed = new Promise<string>((resolve) => {
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    socket.on('close', () => resolve('closed'));
  });
  const ask = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
  socket.write(ask);
  while (!received.includes('ok')) await new Promise((r) => setTimeout(r, 5));
  received = '';

  const drained = server.drain(4000); // grace: 1,000 ms of idleness
  await new Promise((r) => setTimeout(r, 100));
  // In the check phase: the request reaches the server's socket buffer at once, then the loop is busy;
  // the next iteration runs its timers (the idle check, now 1.2 s after the last answer) before it
  // polls the socket and reads the request.
  setImmediate(() => {
    socket.write(ask);
    busyFor(1200);
  });

  expect(await closed).toBe('closed');
  expect(received).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  expect(received).toMatch(/\r\nConnection: close\r\n/i);
  expect(received.endsWith('ok')).toBe(true);
  const result = await drained;
  expect(result.closedIdle).toBe(0);
  expect(result.destroyed).toBe(0);
});
