/**
 * Answers Node gives before any handler runs (a request it cannot parse,
 * headers too large or too slow, an unknown method, CONNECT, an unsupported
 * Expect), as the listeners' own JSON errors {"error","request_id"} with
 * X-Request-Id and Connection: close (decisions.md "Input hygiene"), instead
 * of Node's bare 400 or 417 or a dropped socket. The partner listener
 * (http/server.ts) and the operator listener (operator/server.ts) both
 * install them.
 */
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { Duplex } from 'node:stream';

/** A raw HTTP/1.1 JSON error answer for a socket no handler saw; the connection closes after it. */
export function rawJsonError(status: number, reason: string, message: string, extraHeaders = ''): string {
  const id = randomUUID();
  const body = JSON.stringify({ error: message, request_id: id });
  return (
    `HTTP/1.1 ${status} ${reason}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Request-Id: ${id}\r\n` +
    extraHeaders +
    'Connection: close\r\n\r\n' +
    body
  );
}

/** What Node's parser error becomes: status, reason phrase, message. */
export function clientErrorAnswer(code: string | undefined, methods = 'GET and HEAD'): [number, string, string] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'Request Header Fields Too Large', 'Request header fields too large'];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'Request Timeout', 'Request timeout: the request was not received in time'];
    case 'HPE_INVALID_METHOD':
      return [405, 'Method Not Allowed', `Unknown method; this API accepts ${methods}`];
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return [400, 'Bad Request', 'Malformed request: invalid Content-Length or Transfer-Encoding'];
    default:
      return [400, 'Bad Request', 'Malformed request'];
  }
}

/** Answers with the raw JSON error on a response no handler wrote; the connection closes after it. */
export function answerJsonError(res: http.ServerResponse, status: number, reason: string, message: string): void {
  res.shouldKeepAlive = false;
  const [head = '', body = ''] = rawJsonError(status, reason, message).split('\r\n\r\n');
  for (const line of head.split('\r\n').slice(1)) {
    const i = line.indexOf(':');
    res.setHeader(line.slice(0, i), line.slice(i + 2));
  }
  res.statusCode = status;
  res.end(body);
}

/** An Expect other than 100-continue ('checkExpectation'): Node's own answer is a bare 417. */
export function answerUnsupportedExpectation(req: http.IncomingMessage, res: http.ServerResponse): void {
  answerJsonError(
    res,
    417,
    'Expectation Failed',
    `Unsupported Expect header: ${String(req.headers.expect).slice(0, 100)}`,
  );
}

/**
 * Parser errors and CONNECT answered as JSON on `server` (without a 'connect' listener Node just
 * drops a CONNECT's socket). `allow` is the listener's Allow header value, e.g. "GET, HEAD".
 */
export function answerNodeLevelErrors(server: http.Server, allow: string): void {
  const methods = allow.replace(/, ([^,]+)$/, ' and $1');
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [status, reason, message] = clientErrorAnswer(err.code, methods);
    socket.end(rawJsonError(status, reason, message, status === 405 ? `Allow: ${allow}\r\n` : ''));
  });
  server.on('connect', (_req: http.IncomingMessage, socket: Duplex) => {
    socket.on('error', () => undefined);
    socket.end(
      rawJsonError(
        405,
        'Method Not Allowed',
        `Method CONNECT is not allowed; this API accepts ${methods}`,
        `Allow: ${allow}\r\n`,
      ),
    );
  });
}
