/**
 * Per-request budget and circuit breaker for Redis.
 *
 * - Every Redis call made for a request runs under a budget (REDIS_BUDGET_MS,
 *   default 50 ms): past it the request is answered from the in-process
 *   fallback; a late reply of the rate-limit script has its count given back
 *   (limiters.ts), any other late reply is ignored.
 * - One failure (timeout, error, or a client that is not ready) opens the
 *   circuit: from then on every request uses the fallback at once, without
 *   touching Redis. While open, one probe (PING under the same budget) runs
 *   every REDIS_PROBE_MS (default 1000 ms); the first probe that answers closes
 *   the circuit and shared counting resumes.
 *
 * A frozen Redis (SIGSTOP: the socket is open, nothing answers) therefore costs
 * one request at most the budget, and every later request nothing.
 */
import { redisFallback } from '../metrics';
import type { Logger } from '../log';
import { redisReady, type RedisClient } from '../redis';

export class BudgetExceeded extends Error {
  /** The call that ran out of budget: it may still be answered (a stall shorter than the client's command timeout). */
  late?: Promise<unknown>;
  constructor(ms: number) {
    super(`Redis did not answer within ${ms} ms`);
  }
}

export interface BreakerOptions {
  budgetMs: number;
  probeMs: number;
  logger: Logger;
}

export class RedisBreaker {
  private openSince: number | undefined;
  private probe: NodeJS.Timeout | undefined;
  private probing = false;
  private closed = false;

  constructor(
    readonly redis: RedisClient,
    private readonly options: BreakerOptions,
  ) {
    redisFallback.set(0);
    // A fresh connection is a good moment to probe (no need to wait for the next interval).
    redis.on('ready', () => {
      if (this.openSince !== undefined) void this.tryClose();
    });
  }

  /** True when a request may use Redis now. */
  get available(): boolean {
    return this.openSince === undefined && redisReady(this.redis);
  }

  get isOpen(): boolean {
    return this.openSince !== undefined;
  }

  /** A request was counted in process (metrics: partner_redis_fallback). */
  noteFallback(): void {
    redisFallback.set(1);
  }

  /** Runs `call` under the budget; a failure opens the circuit and rethrows. */
  async run<T>(call: () => Promise<T>): Promise<T> {
    if (!this.available) {
      redisFallback.set(1); // open, or the client is (re)connecting
      throw new Error(this.isOpen ? 'Redis circuit open' : 'Redis not connected');
    }
    let timer: NodeJS.Timeout | undefined;
    let pending: Promise<T> | undefined;
    try {
      const result = await Promise.race([
        (pending = call()),
        new Promise<never>((_, reject) => {
          // Timers run before I/O callbacks in the event loop: on a busy loop the reply may already be
          // waiting. setImmediate runs after the I/O phase, so a reply that arrived in time wins the race.
          timer = setTimeout(
            () => setImmediate(() => reject(new BudgetExceeded(this.options.budgetMs))),
            this.options.budgetMs,
          );
        }),
      ]);
      redisFallback.set(0);
      return result;
    } catch (err) {
      if (err instanceof BudgetExceeded) err.late = pending;
      this.open(err as Error);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private open(err: Error): void {
    if (this.openSince !== undefined || this.closed) return;
    this.openSince = Date.now();
    redisFallback.set(1);
    this.options.logger.error(
      { err: { message: err.message } },
      'Redis circuit open: rate limits and usage count in process until a probe answers',
    );
    this.probe = setInterval(() => void this.tryClose(), this.options.probeMs);
    this.probe.unref();
  }

  private async tryClose(): Promise<void> {
    if (this.probing || !redisReady(this.redis)) return;
    this.probing = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.redis.ping(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new BudgetExceeded(this.options.budgetMs)), this.options.budgetMs);
        }),
      ]);
      clearInterval(this.probe);
      this.probe = undefined;
      const openFor = Date.now() - (this.openSince ?? Date.now());
      this.openSince = undefined;
      redisFallback.set(0);
      this.options.logger.warn({ openForMs: openFor }, 'Redis circuit closed: shared counting resumed');
    } catch {
      // still down; next probe later
    } finally {
      clearTimeout(timer);
      this.probing = false;
    }
  }

  close(): void {
    this.closed = true;
    clearInterval(this.probe);
  }
}
