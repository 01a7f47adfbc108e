/**
 * Usage accounting for operators: requests per UTC day, key and endpoint
 * (route pattern, e.g. 'bars/:id'), counted in memory and written in batches
 * every few seconds through api.record_usage (which also moves the keys'
 * last_used_at). A failed write keeps the counts for the next one; close()
 * writes what is left, so a clean shutdown loses nothing.
 */
import type { Pool } from '../db/pools';
import type { Logger } from '../log';
import { CALLS, apiQuery } from '../contract/calls';

/** Requests that matched no endpoint (unknown path, or rejected before routing). */
export { NO_ENDPOINT } from '../contract/match';

interface Counter {
  day: string;
  key_id: string;
  endpoint: string;
  requests: number;
  rate_limited: number;
  last_used_at: string;
}

export class UsageRecorder {
  private counts = new Map<string, Counter>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: Pool,
    private readonly logger: Logger,
    flushEveryMs = 5000,
  ) {
    this.timer = setInterval(() => void this.flush(), flushEveryMs);
    this.timer.unref();
  }

  /** Requests counted in memory and not yet written (what a shutdown flush writes). */
  get pendingRequests(): number {
    let n = 0;
    for (const c of this.counts.values()) n += c.requests + c.rate_limited;
    return n;
  }

  /** `requests`: what the request counts as (a GraphQL query: its points). */
  record(keyId: string, endpoint: string, rateLimited: boolean, at = new Date(), requests = 1): void {
    const iso = at.toISOString();
    const day = iso.slice(0, 10);
    const id = `${day}|${keyId}|${endpoint}`;
    let counter = this.counts.get(id);
    if (!counter)
      this.counts.set(
        id,
        (counter = { day, key_id: keyId, endpoint, requests: 0, rate_limited: 0, last_used_at: iso }),
      );
    if (rateLimited) counter.rate_limited++;
    else counter.requests += requests;
    if (iso > counter.last_used_at) counter.last_used_at = iso;
  }

  /** Writes the counts gathered so far (one write at a time). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.counts.size === 0) return;
    const batch = this.counts;
    this.counts = new Map();
    try {
      await apiQuery(this.pool, CALLS.recordUsage, { batch: JSON.stringify([...batch.values()]) });
    } catch (err) {
      for (const [id, c] of batch) {
        const now = this.counts.get(id);
        if (now) {
          now.requests += c.requests;
          now.rate_limited += c.rate_limited;
          if (c.last_used_at > now.last_used_at) now.last_used_at = c.last_used_at;
        } else {
          this.counts.set(id, c);
        }
      }
      this.logger.warn(
        { err: { message: (err as Error).message }, pending: this.counts.size },
        'usage flush failed; will retry',
      );
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
