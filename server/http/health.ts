/**
 * Liveness and readiness on the partner listener (operators.md §4), answered
 * before the credentials guard: no key, not rate limited, not in usage.
 *
 *   GET /healthz  200 {"status":"ok"} while the process serves requests
 *   GET /readyz   200 {"status":"ready","checks":{...}} when every check passes,
 *                 else 503 {"status":"unavailable","checks":{...},"error",...}
 *                 (also 503 "shutting down" once SIGTERM was received)
 *
 * Checks are a list (name -> async function that throws when not ready), so
 * other dependencies (e.g. one per read replica) add their own.
 */
import express, { type Router } from 'express';
import type { Pool } from '../db/pools';
import { sendError } from '../contract/errors';

export interface ReadinessCheck {
  name: string;
  /** Reported, but its failure does not make the instance unready (e.g. a read replica: the primary serves). */
  optional?: boolean;
  /** Rejects (or exceeds the timeout) when the dependency cannot serve. */
  check(): Promise<unknown>;
}

export interface HealthOptions {
  checks: ReadinessCheck[];
  /** Per-check budget (default 2000 ms). */
  timeoutMs?: number;
  /** True once shutdown began: readiness fails so load balancers stop sending. */
  draining?: () => boolean;
}

/** PostgreSQL answers a trivial query on the given pool. */
export function postgresCheck(pool: Pool, name = 'postgres'): ReadinessCheck {
  return { name, check: () => pool.query('select 1') };
}

class CheckTimeout extends Error {}

function withTimeout(p: Promise<unknown>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CheckTimeout(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

export function healthRoutes(options: HealthOptions): Router {
  const router = express.Router();
  const timeoutMs = options.timeoutMs ?? 2000;
  router.get('/healthz', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.type('application/json').send('{"status":"ok"}');
  });
  router.get('/readyz', async (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    if (options.draining?.()) {
      sendError(res, 503, 'shutting down', { status: 'unavailable', checks: {} });
      return;
    }
    const results = await Promise.all(
      options.checks.map(async ({ name, check }) => {
        try {
          await withTimeout(Promise.resolve().then(check), timeoutMs);
          return [name, 'ok'] as const;
        } catch (err) {
          // No detail for the public: addresses and server messages stay in the operator's logs.
          return [name, err instanceof CheckTimeout ? 'timeout' : 'failed'] as const;
        }
      }),
    );
    const checks = Object.fromEntries(results);
    const optional = new Set(options.checks.filter((c) => c.optional).map((c) => c.name));
    const failing = results.filter(([n, r]) => r !== 'ok' && !optional.has(n)).map(([n]) => n);
    if (failing.length === 0) {
      res.type('application/json').send(JSON.stringify({ status: 'ready', checks }));
      return;
    }
    res.setHeader('Retry-After', '5');
    sendError(res, 503, `not ready: ${failing.join(', ')}`, { status: 'unavailable', checks });
  });
  return router;
}
