/**
 * Constant-rate load that is really constant: one request every 1/rate s
 * (open loop, as wrk2 does), each timed from when it was due, not from when a
 * connection was free to send it (coordinated omission corrected).
 *
 * autocannon's `overallRate` is not that: each connection sends its share of
 * the second back to back at the start of every second and then waits, so its
 * latencies are those of a burst at full speed, whatever the rate.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { percentile } from './environment';
import type { LoadResult } from './load';

/** A request unanswered this long is an error. */
const REQUEST_TIMEOUT_MS = 10_000;

export async function runPaced(opts: {
  url: string;
  nextPath: () => string;
  /** At most this many connections (requests queue for one when all are busy: that wait counts). */
  connections: number;
  duration: number;
  rate: number;
  headers?: Record<string, string>;
  /** How long answers are waited for after the run (default 15 s); those still missing are errors. */
  drainMs?: number;
}): Promise<LoadResult> {
  const base = new URL(opts.url);
  // With a timeout of its own, the agent honours the server's `Keep-Alive: timeout=5` hint and drops an
  // idle socket a second before the server closes it. Without one, Node ignores the hint and may reuse a
  // socket the server is closing (ECONNRESET): one paced run of machine S lost 8 requests so.
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections, timeout: REQUEST_TIMEOUT_MS });
  const headers = { accept: 'application/json', ...opts.headers };
  const latencies: number[] = [];
  let errors = 0;
  let non2xx = 0;
  const statuses: Record<string, number> = {};
  let outstanding = 0; // sent, not yet answered (at most `connections`)
  let sent = 0;
  let due = 0; // requests due so far; those past `sent` wait for a connection as numbers, not as
  // ClientRequests queued in the agent: a flood whose answers are held would otherwise pile up
  // thousands of them a second, and their CPU and garbage would load the machine being measured
  const durationMs = opts.duration * 1000;
  const gap = 1000 / opts.rate;
  const started = performance.now();

  const fire = (dueAt: number) => {
    outstanding++;
    const done = (ok: boolean, status = 0) => {
      outstanding--;
      if (sent < due) next();
      if (!ok) errors++;
      else {
        if (status < 200 || status > 299) non2xx++;
        statuses[status] = (statuses[status] ?? 0) + 1;
        latencies.push(performance.now() - dueAt);
      }
    };
    const req = http.get(
      {
        host: base.hostname,
        port: base.port,
        path: `${base.pathname.replace(/\/$/, '')}${opts.nextPath()}`,
        headers,
        agent,
      },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => done(true, res.statusCode ?? 0));
        res.on('error', () => done(false));
      },
    );
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error('timeout')));
    req.on('error', () => done(false));
  };
  const next = () => fire(started + sent++ * gap);

  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      const elapsed = performance.now() - started;
      due = Math.min(Math.floor(elapsed / gap) + 1, Math.ceil(durationMs / gap));
      while (sent < due && outstanding < opts.connections) next();
      if (elapsed >= durationMs) {
        clearInterval(tick);
        resolve();
      }
    }, 1);
  });
  const deadline = performance.now() + (opts.drainMs ?? 15_000);
  while ((outstanding > 0 || sent < due) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  agent.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  return {
    rps: sorted.length / opts.duration,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? NaN,
    errors: errors + outstanding + (due - sent), // failed, or still unanswered (or unsent) after the drain
    non2xx,
    total: due, // answered + errors
    statuses,
  };
}
