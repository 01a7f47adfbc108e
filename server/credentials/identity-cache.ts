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
  /** Beyond this many entries the cache starts over. */
  maxEntries?: number;
  /**
   * Unknown key hashes are cached apart (negative cache), so a flood of made-up
   * keys cannot push valid keys out; beyond this many the negative cache starts over.
   */
  maxUnknown?: number;
}

export class IdentityCache {
  private entries = new Map<string, { identity: StoredIdentity; at: number }>();
  private unknown = new Map<string, number>();
  private pending = new Map<string, Promise<StoredIdentity | null>>();
  private generation = 0;
  private trusted = false;
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;
  private readonly maxUnknown: number;

  constructor(
    private readonly pool: Pool,
    options: IdentityCacheOptions = {},
  ) {
    this.maxAgeMs = options.maxAgeMs ?? 60_000;
    this.maxEntries = options.maxEntries ?? 50_000;
    this.maxUnknown = options.maxUnknown ?? 100_000;
  }

  /** Drops everything (a credentials change, or the listener (re)connected or lost). */
  flush(): void {
    this.generation++;
    this.entries = new Map();
    this.unknown = new Map();
    this.pending = new Map();
  }

  /** Whether cached entries may be used (the change listener is connected). */
  setTrusted(trusted: boolean): void {
    this.trusted = trusted;
    this.flush();
  }

  get size(): number {
    return this.entries.size + this.unknown.size;
  }

  /**
   * The cached answer for a key hash without touching the database:
   * `{ identity }` (null = known to be unknown), or undefined when not cached.
   */
  peek(keyHash: Buffer): { identity: StoredIdentity | null } | undefined {
    if (!this.trusted) return undefined;
    const id = keyHash.toString('hex');
    const now = Date.now();
    const hit = this.entries.get(id);
    if (hit && now - hit.at < this.maxAgeMs) return { identity: hit.identity };
    const missAt = this.unknown.get(id);
    if (missAt !== undefined && now - missAt < this.maxAgeMs) return { identity: null };
    return undefined;
  }

  /**
   * Whether the key hash was a valid key when last read, however long ago (no flush since): its
   * entry may have aged out of `peek`, but reading it again tells a blocked address nothing it did
   * not know (guard.ts: a blocked address is not looked up for other keys).
   */
  wasValid(keyHash: Buffer): boolean {
    return this.trusted && this.entries.has(keyHash.toString('hex'));
  }

  async lookup(keyHash: Buffer): Promise<StoredIdentity | null> {
    const id = keyHash.toString('hex');
    if (this.trusted) {
      const cached = this.peek(keyHash);
      if (cached) return cached.identity;
      const inFlight = this.pending.get(id);
      if (inFlight) return inFlight;
    }
    const generation = this.generation;
    const lookup = this.fetch(keyHash);
    if (this.trusted) this.pending.set(id, lookup);
    try {
      const identity = await lookup;
      if (this.trusted && generation === this.generation) {
        if (identity) {
          if (this.entries.size >= this.maxEntries) this.entries = new Map();
          this.entries.set(id, { identity, at: Date.now() });
        } else {
          if (this.unknown.size >= this.maxUnknown) this.unknown = new Map();
          this.unknown.set(id, Date.now());
        }
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
