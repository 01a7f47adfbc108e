/**
 * Identities behind key hashes, cached in memory so authentication needs no
 * database round trip. The cache is trusted only while the change listener
 * (change-listener.ts) is connected: any NOTIFY bar_credentials flushes it,
 * and while the listener is down every lookup goes to the database.
 *
 * A lookup that started before a flush is not stored (generation check), so a
 * stale answer can never outlive the change that made it stale.
 */
import type { Pool } from '../db/pools';
import type { PlanLimits } from '../ratelimit/limiters';

export interface StoredIdentity {
  keyId: string;
  subscriberId: string;
  keyStatus: 'active' | 'revoked';
  subscriberStatus: 'active' | 'suspended';
  /** ms since epoch; null = no end. */
  subscriptionEndsAt: number | null;
  plan: string;
  limits: PlanLimits;
}

interface AuthenticateRow {
  key_id: string;
  subscriber_id: string;
  key_status: StoredIdentity['keyStatus'];
  subscriber_status: StoredIdentity['subscriberStatus'];
  subscription_ends_at: Date | null;
  plan: string;
  per_minute: number | null;
  per_day: number | null;
  per_month: number | null;
}

export interface IdentityCacheOptions {
  /** Entries are re-read after this long even without a notification (belt and braces). */
  maxAgeMs?: number;
  /** Beyond this many entries the cache starts over (unknown keys are cached too). */
  maxEntries?: number;
}

export class IdentityCache {
  private entries = new Map<string, { identity: StoredIdentity | null; at: number }>();
  private pending = new Map<string, Promise<StoredIdentity | null>>();
  private generation = 0;
  private trusted = false;
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;

  constructor(private readonly pool: Pool, options: IdentityCacheOptions = {}) {
    this.maxAgeMs = options.maxAgeMs ?? 60_000;
    this.maxEntries = options.maxEntries ?? 50_000;
  }

  /** Drops everything (a credentials change, or the listener (re)connected or lost). */
  flush(): void {
    this.generation++;
    this.entries = new Map();
    this.pending = new Map();
  }

  /** Whether cached entries may be used (the change listener is connected). */
  setTrusted(trusted: boolean): void {
    this.trusted = trusted;
    this.flush();
  }

  get size(): number {
    return this.entries.size;
  }

  async lookup(keyHash: Buffer): Promise<StoredIdentity | null> {
    const id = keyHash.toString('hex');
    if (this.trusted) {
      const hit = this.entries.get(id);
      if (hit && Date.now() - hit.at < this.maxAgeMs) return hit.identity;
      const inFlight = this.pending.get(id);
      if (inFlight) return inFlight;
    }
    const generation = this.generation;
    const lookup = this.fetch(keyHash);
    if (this.trusted) this.pending.set(id, lookup);
    try {
      const identity = await lookup;
      if (this.trusted && generation === this.generation) {
        if (this.entries.size >= this.maxEntries) this.entries = new Map();
        this.entries.set(id, { identity, at: Date.now() });
      }
      return identity;
    } finally {
      if (this.pending.get(id) === lookup) this.pending.delete(id);
    }
  }

  private async fetch(keyHash: Buffer): Promise<StoredIdentity | null> {
    const { rows } = await this.pool.query<AuthenticateRow>('select * from api.authenticate($1)', [keyHash]);
    const row = rows[0];
    if (!row) return null;
    return {
      keyId: row.key_id,
      subscriberId: row.subscriber_id,
      keyStatus: row.key_status,
      subscriberStatus: row.subscriber_status,
      subscriptionEndsAt: row.subscription_ends_at ? row.subscription_ends_at.getTime() : null,
      plan: row.plan,
      limits: { minute: row.per_minute, day: row.per_day, month: row.per_month },
    };
  }
}
