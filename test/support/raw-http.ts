/** Raw HTTP/1.1 on a socket: for answers Node gives before any handler (test/hardening/node-level.test.ts). */
import net from 'node:net';

/**
 * Sends raw bytes, returns everything the server wrote until it closed the connection. Our side ends
 * after 2 s, unless `keepOpen` (then only the server can close it, e.g. on a timeout).
 */
export function rawExchange(port: number, bytes: string | Buffer, keepOpen = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let out = '';
    socket.on('data', (c) => (out += c.toString('latin1')));
    const ending = keepOpen ? undefined : setTimeout(() => socket.end(), 2000);
    socket.on('close', () => {
      clearTimeout(ending);
      resolve(out);
    });
    socket.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? resolve(out) : reject(e)));
    socket.write(bytes);
  });
}

export function parseRawAnswer(answer: string): { status: number; headers: Record<string, string>; body: unknown } {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) headers[l.slice(0, l.indexOf(':')).toLowerCase()] = l.slice(l.indexOf(':') + 1).trim();
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) as unknown };
}
