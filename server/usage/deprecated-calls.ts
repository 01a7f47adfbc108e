/**
 * Deprecated calls per key (decisions.md v1.3 "Deprecations and the changelog"): counted in memory
 * per UTC day, key and deprecation, and written in one batch every few seconds through
 * api.record_deprecated_calls (additive upsert), like the in-process usage recorder: no database
 * write per request, and nothing at all while no deprecated call is made. Each instance adds its
 * own counts, so the totals are exact across instances; an instance killed without its shutdown
 * flush loses at most its last interval's counts (a clean shutdown writes them: close()). Each item
 * carries its declaration's sunset, replacement and changelog link: the database queues the e-mail
 * to the subscriber's alert contacts the first time the subscriber calls it.
 */
import type { Pool } from '../db/pools';
import type { DeprecationUse } from '../contract/deprecations';
import type { Logger } from '../log';
import { CALLS, apiQuery } from '../contract/calls';

interface Tally extends Omit<DeprecationUse, 'what'> {
  day: string;
  key_id: string;
  what: string;
  calls: number;
  last_call_at: string;
}

export class DeprecatedCallTally {
  private counts = new Map<string, Tally>();
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

  /** One call of a deprecation by this key at `at` (ms; the deprecation gate's clock). */
  record(keyId: string, use: DeprecationUse, at: number): void {
    const iso = new Date(at).toISOString();
    const day = iso.slice(0, 10);
    const id = `${day}|${keyId}|${use.what}`;
    const t = this.counts.get(id);
    if (!t) this.counts.set(id, { day, key_id: keyId, ...use, calls: 1, last_call_at: iso });
    else {
      t.calls++;
      if (iso > t.last_call_at) t.last_call_at = iso;
    }
  }

  get pending(): number {
    let n = 0;
    for (const t of this.counts.values()) n += t.calls;
    return n;
  }

  /** Writes the counts gathered so far (one write at a time); a failed write keeps them for the next. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.counts.size === 0) return;
    const batch = this.counts;
    this.counts = new Map();
    try {
      await apiQuery(this.pool, CALLS.recordDeprecatedCalls, { batch: JSON.stringify([...batch.values()]) });
    } catch (err) {
      for (const [id, t] of batch) {
        const now = this.counts.get(id);
        if (!now) this.counts.set(id, t);
        else {
          now.calls += t.calls;
          if (t.last_call_at > now.last_call_at) now.last_call_at = t.last_call_at;
        }
      }
      this.logger.warn({ err: { message: (err as Error).message } }, 'deprecated-call flush failed; will retry');
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}
