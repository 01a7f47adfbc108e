/**
 * The partner contract's errors, shared by every transport and middleware:
 * the error type (a status and a message for the client), the error body,
 * and the classification of database failures.
 */
import type { Response } from 'express';

/** An error with a status and a message meant for the client. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Extra body fields (e.g. limit and period on 429) and headers. */
    readonly extra: { body?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
  }
}

/** Writes the contract's error body: {"error": ..., "request_id": ..., ...extra}. */
export function sendError(res: Response, status: number, message: string, body: Record<string, unknown> = {}): void {
  res.locals.errorMessage = message; // the access log's reason
  res
    .status(status)
    .type('application/json')
    .send(JSON.stringify({ error: message, ...body, request_id: res.locals.requestId }));
}

/** SQLSTATE raised by api.* functions for input they reject; the message is written for the client. */
export const INVALID_INPUT = 'PT400';

/** PostgreSQL or network errors that mean "the database cannot be reached right now". */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  if (!e) return false;
  // EPGFROZEN: the database breaker is open (db/pg-breaker.ts).
  if (
    e.code &&
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EPGFROZEN'].includes(e.code)
  )
    return true;
  // 57P01-03: admin shutdown, crash shutdown, cannot connect now; 53300: too many connections; 08*: connection exceptions
  if (e.code && (/^08/.test(e.code) || ['57P01', '57P02', '57P03', '53300'].includes(e.code))) return true;
  // 'Query read timeout': the pool's client-side deadline (PG_QUERY_DEADLINE_MS) passed without an answer.
  return /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED|Query read timeout/i.test(
    e.message ?? '',
  );
}
