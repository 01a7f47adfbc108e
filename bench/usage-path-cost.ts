/**
 * What hourly usage counting and the request log (issue 30) cost a served request, in CPU on the
 * real objects rather than in req/s: old-against-new throughput on these machines spreads ±10–30 %
 * from run to run, which hides the 5 % the issue allows.
 *
 * For a 200 with REQUEST_LOG=errors, the serving process does, per answer, the request log's
 * middleware (a `finish` listener and two clock reads) and HourlyUsage.record in the guard's
 * `finish` hook (one in-memory increment). Per second it does ten hourly pushes (one Redis
 * pipeline each, against real Redis here) and one request-log flush (an empty buffer for 200s).
 * - Per answer: a loop over one fake answer emitting `finish`, with and without that work, in
 *   alternating rounds; the difference of the median CPU per iteration (GC included).
 * - Per second: the CPU of `--pushes` sequential pushes of one key's field, and of as many flushes.
 * Printed: the added µs per answer at `--rate` answers/s, and with `--server-cpu-us` (the bench's
 * "CPU per request" of `bars/12345`, full server) its share of what a request costs the server.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 node dist/bench/usage-path-cost.js [--answers N] [--rounds N]
 *     [--pushes N] [--rate R] [--server-cpu-us U]
 */
import { EventEmitter } from 'node:events';
import { parseArgs } from 'node:util';
import type { Request, Response } from 'express';
import { Redis } from 'ioredis';
import pino from 'pino';
import type { Pool } from '../server/db/pools';
import { usageKey } from '../server/ratelimit/buckets';
import { HourlyUsage, hourField, statusClass } from '../server/usage/history';
import { RequestLog } from '../server/usage/request-log';
import { median, medianRange } from './environment';

export interface UsagePathCostOptions {
  redisUrl: string;
  answers: number;
  rounds: number;
  pushes: number;
}

export interface UsagePathCost {
  /** CPU µs per answer without / with the work, per round (alternating). */
  withoutUs: number[];
  withUs: number[];
  /** Median of the per-round differences, µs per answer. */
  addedUs: number;
  pushUs: number;
  flushUs: number;
  /** What the answers of the loops left in the request log's buffer and in one push (checks). */
  logged: number;
  pushedFields: number;
}

const KEY_ID = '00000000-0000-4000-8000-000000000030';
const PREFIX = 'pbapi:bench-usage-path-cost:';
const NEVER = 2 ** 30; // ms: the objects' own timers stay out of the measurement

const cpuUs = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};

/** A pool that must not be reached: 200s write nothing to PostgreSQL. */
const noPool = {
  query: () => Promise.reject(new Error('usage-path-cost: no database call expected')),
} as unknown as Pool;

export async function measureUsagePathCost(o: UsagePathCostOptions): Promise<UsagePathCost> {
  const logger = pino({ level: 'silent' });
  const redis = new Redis(o.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 1 });
  const touched = new Set<string>();
  const history = new HourlyUsage({
    pool: noPool,
    logger,
    redis,
    prefix: PREFIX,
    touch: (keyId, day) => touched.add(`${keyId}|${day}`),
    pushEveryMs: NEVER,
    flushEveryMs: NEVER,
  });
  const log = new RequestLog({ pool: noPool, logger, mode: 'errors', flushEveryMs: NEVER });
  try {
    // The answers' hour is the current one: their usage hash expires at an absolute instant (two days
    // after its day), which Redis compares with its own clock. A fixed past day expired at once.
    const at = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    const day = new Date(at).toISOString().slice(0, 10);
    const middleware = log.middleware();
    const req = { method: 'GET', originalUrl: '/api/v1/partner/bars/12345', ip: '127.0.0.1' } as Request;
    const res = Object.assign(new EventEmitter(), {
      statusCode: 200,
      locals: { partner: { keyId: KEY_ID }, rateLimit: { endpoint: 'bars/:id' }, requestId: 'r' },
      getHeader: () => undefined,
    }) as unknown as Response;
    let sink = 0;
    const next = () => void sink++;
    const oldHook = () => void sink++; // the guard's finish hook before issue 30 (daily usage: unchanged)
    const newHook = () => {
      sink++;
      history.record(KEY_ID, 'bars/:id', 200, at, true);
    };
    const loop = (withWork: boolean): number => {
      const started = cpuUs();
      for (let i = 0; i < o.answers; i++) {
        if (withWork) {
          res.once('finish', newHook);
          middleware(req, res, next);
        } else {
          res.once('finish', oldHook);
          next();
        }
        res.emit('finish');
      }
      return (cpuUs() - started) / o.answers;
    };
    loop(false); // warm both paths up (JIT) before measuring
    loop(true);
    const withoutUs: number[] = [];
    const withUs: number[] = [];
    for (let r = 0; r < o.rounds; r++) {
      if (r % 2 === 0) {
        withoutUs.push(loop(false));
        withUs.push(loop(true));
      } else {
        withUs.push(loop(true));
        withoutUs.push(loop(false));
      }
    }
    const logged = log.pending;
    await history.push(); // what the loops counted, in one pipeline
    const fields = await redis.hgetall(usageKey(PREFIX, KEY_ID, day));
    const pushedFields = Number(fields[hourField(new Date(at).getUTCHours(), statusClass(200), 'bars/:id')] ?? 0);

    let started = cpuUs();
    for (let i = 0; i < o.pushes; i++) {
      history.record(KEY_ID, 'bars/:id', 200, at, true);
      await history.push();
    }
    const pushUs = (cpuUs() - started) / o.pushes;
    started = cpuUs();
    for (let i = 0; i < o.pushes; i++) await log.flush();
    const flushUs = (cpuUs() - started) / o.pushes;
    if (sink < 0) throw new Error('unreachable'); // keeps the hooks' work observable
    return {
      withoutUs,
      withUs,
      addedUs: median(withUs.map((w, i) => w - withoutUs[i]!)),
      pushUs,
      flushUs,
      logged,
      pushedFields,
    };
  } finally {
    await history.close().catch(() => undefined);
    await log.close().catch(() => undefined);
    const keys = await redis.keys(`${PREFIX}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  }
}

/** Added CPU per answer at `rate` answers/s: the per-answer part plus the per-second part shared out. */
export function addedPerAnswerUs(cost: Pick<UsagePathCost, 'addedUs' | 'pushUs' | 'flushUs'>, rate: number): number {
  return cost.addedUs + (10 * cost.pushUs + cost.flushUs) / rate;
}

/** The measurement's lines: per answer, per second, at `rate`, and the share of `serverCpuUs` when known. */
export function usagePathCostLines(cost: UsagePathCost, rate: number, serverCpuUs?: number): string[] {
  const us = (n: number) => n.toFixed(3);
  const added = addedPerAnswerUs(cost, rate);
  return [
    `per answer without: ${medianRange(cost.withoutUs, 3)} µs; with: ${medianRange(cost.withUs, 3)} µs (median (min–max) of ${cost.withUs.length} alternating rounds)`,
    `added per answer: ${us(cost.addedUs)} µs (median of the rounds' differences)`,
    `per second: 10 hourly pushes × ${us(cost.pushUs)} µs + 1 request-log flush × ${us(cost.flushUs)} µs`,
    `at ${Math.round(rate).toLocaleString('en-US')} answers/s: ${us(added)} µs added per answer` +
      (serverCpuUs
        ? `, ${((100 * added) / serverCpuUs).toFixed(2)} % of the server's ${Math.round(serverCpuUs)} µs per request`
        : ''),
    `checks: request-log entries for 200s ${cost.logged}; answers counted in the push ${cost.pushedFields}`,
  ];
}

/**
 * The bench's phase after full against bare (bench/run.ts): the cost at the full server's measured
 * rate of `bars/12345`, as a share of its measured CPU per request.
 */
export async function usagePathCostPhase(redisUrl: string, rate: number, serverCpuUs?: number): Promise<UsagePathCost> {
  const cost = await measureUsagePathCost({ redisUrl, answers: 1_000_000, rounds: 6, pushes: 2000 });
  console.log(
    '\n## Hourly usage and the request log: CPU per answered `bars/12345` (REQUEST_LOG=errors; bench/usage-path-cost.ts)\n',
  );
  for (const line of usagePathCostLines(cost, rate, serverCpuUs)) console.log(`- ${line}`);
  return cost;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      answers: { type: 'string', default: '1000000' },
      rounds: { type: 'string', default: '6' },
      pushes: { type: 'string', default: '2000' },
      rate: { type: 'string', default: '1000' },
      'server-cpu-us': { type: 'string' },
    },
  });
  const positive = (name: string, v: string | undefined) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number (got ${v})`);
    return n;
  };
  const cost = await measureUsagePathCost({
    redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    answers: positive('answers', values.answers),
    rounds: positive('rounds', values.rounds),
    pushes: positive('pushes', values.pushes),
  });
  const server = values['server-cpu-us'] === undefined ? undefined : positive('server-cpu-us', values['server-cpu-us']);
  console.log(`usage-path-cost: a 200 with REQUEST_LOG=errors, ${values.answers} answers a round`);
  for (const line of usagePathCostLines(cost, positive('rate', values.rate), server)) console.log(`  ${line}`);
}

if (require.main === module) {
  main().catch((err: Error) => {
    console.error(err.message);
    process.exit(1);
  });
}
