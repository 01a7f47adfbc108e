/**
 * An upper bound on the size of one operator answer. grafserv writes a
 * buffered answer as writeHead() then end(body); the head is held back until
 * the body is known, and a body over the bound is replaced by a JSON 400
 * naming the bound. A streamed answer (write() calls) is cut off, and its
 * connection closed, once it passes the bound.
 */
import type { ServerResponse } from 'node:http';

export const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

type WriteHeadArgs = Parameters<ServerResponse['writeHead']>;

export function limitResponseSize(
  res: ServerResponse,
  maxBytes: number,
  tooLarge: (bytes: number) => { status: number; body: string },
): void {
  const writeHead = res.writeHead.bind(res) as (...args: WriteHeadArgs) => ServerResponse;
  const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
  const end = res.end.bind(res) as (chunk?: unknown, ...rest: unknown[]) => ServerResponse;
  let held: WriteHeadArgs | undefined;
  let sent = 0;
  const size = (chunk: unknown) =>
    typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk instanceof Uint8Array ? chunk.byteLength : 0;
  const flushHead = () => {
    if (held) writeHead(...held);
    held = undefined;
  };

  res.writeHead = ((...args: WriteHeadArgs) => {
    held = args;
    return res;
  }) as ServerResponse['writeHead'];

  res.write = ((chunk: unknown, ...rest: unknown[]) => {
    sent += size(chunk);
    flushHead();
    if (sent > maxBytes) {
      res.destroy();
      return false;
    }
    return write(chunk, ...rest);
  }) as ServerResponse['write'];

  res.end = ((chunk?: unknown, ...rest: unknown[]) => {
    const total = sent + (typeof chunk === 'function' ? 0 : size(chunk));
    if (total > maxBytes && held) {
      held = undefined;
      const { status, body } = tooLarge(total);
      writeHead(status, {
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(body),
      });
      return end(body);
    }
    if (total > maxBytes) {
      res.destroy();
      return res;
    }
    flushHead();
    return end(chunk, ...rest);
  }) as ServerResponse['end'];
}
