/**
 * The partner app as the API tests build it: the real app and a real database,
 * with a stand-in for the credentials guard (auth and rate limits are tested
 * by their own suite). The stand-in sets what the real guard sets: the
 * partner identity and the contract's rate-limit headers.
 */
import type { RequestHandler } from 'express';
import pino from 'pino';
import { Writable } from 'node:stream';
import type { Pool } from '../../server/db/pools';
import { createPartnerApp } from '../../server/http/app';
import type { PartnerIdentity } from '../../server/contract/identity';
import { testClock } from './clock';

export const TEST_PARTNER: PartnerIdentity = { keyId: 'key-1', subscriberId: 'sub-1', plan: 'standard' };

export const testGuard: RequestHandler = (_req, res, next) => {
  res.locals.partner = TEST_PARTNER;
  // real time: usage days and rate-limit windows follow the server's real clock, not TEST_CLOCK
  const reset = Math.ceil(Date.now() / 60000) * 60;
  for (const suffix of ['', '-Minute']) {
    res.setHeader(`X-RateLimit-Limit${suffix}`, '600');
    res.setHeader(`X-RateLimit-Remaining${suffix}`, '599');
    res.setHeader(`X-RateLimit-Reset${suffix}`, String(reset));
  }
  for (const suffix of ['-Day', '-Month']) {
    res.setHeader(`X-RateLimit-Limit${suffix}`, '-1');
    res.setHeader(`X-RateLimit-Remaining${suffix}`, '-1');
    res.setHeader(`X-RateLimit-Reset${suffix}`, String(reset));
  }
  next();
};

/** Log lines the app wrote, parsed. */
export interface LogCapture {
  lines: Record<string, unknown>[];
}

export function buildApp(
  pool: Pool,
  options: { trustProxy?: boolean | number | string; guard?: RequestHandler[] } = {},
) {
  const log: LogCapture = { lines: [] };
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        log.lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = pino({ level: 'info' }, stream);
  const app = createPartnerApp({
    config: { env: 'test', trustProxy: options.trustProxy ?? false },
    logger,
    pool,
    guard: options.guard ?? [testGuard],
    clock: testClock,
  });
  return { app, log };
}
