/**
 * What one GraphQL request reads, through the REST endpoints' api.* functions
 * (the same SQL text as the REST routes, bind parameters only): each call's
 * JSON is parsed once and memoized for the request, and bar details asked for
 * by many parents in the same tick are read in one statement.
 */
import { systemClock, type Clock } from '../clock';
import type { Pool } from '../db/pools';
import { INVALID_INPUT } from '../http/errors';
import { userError } from './connection';

export type Json = Record<string, unknown>;

export const SQL = {
  bar: 'select api.bar(p_id => $1, p_now => $2)::text as body',
  barsDetail:
    'select api.bar(p_id => x.id, p_now => $2)::text as body from unnest($1::text[]) with ordinality x(id, n) order by x.n',
  bars: `select api.bars(p_ids => $1, p_category => $2, p_latitude => $3, p_longitude => $4, p_radius => $5,
        p_corner1_latitude => $6, p_corner1_longitude => $7, p_corner2_latitude => $8, p_corner2_longitude => $9,
        p_limit => $10, p_open_now => $11, p_open_at => $12, p_price_levels => $13, p_min_rating => $14,
        p_statuses => $15, p_now => $16)::text as body`,
  barsByCity: `select api.bars_by_city(p_state => $1, p_city => $2, p_group_slug => $3,
        p_page => $4, p_per_page => $5, p_open_now => $6, p_open_at => $7, p_price_levels => $8,
        p_min_rating => $9, p_statuses => $10, p_now => $11)::text as body`,
  events: `select api.events(p_state => $1, p_city => $2, p_start_date => $3, p_end_date => $4,
        p_classification => $5, p_group_slug => $6, p_page => $7, p_per_page => $8, p_now => $9)::text as body`,
  posts: `select api.posts(p_state => $1, p_city => $2, p_start_date => $3, p_end_date => $4,
        p_group_slug => $5, p_page => $6, p_per_page => $7, p_now => $8)::text as body`,
  feed: 'select api.feed(p_state => $1, p_city => $2, p_page => $3, p_per_page => $4, p_now => $5)::text as body',
  search: `select api.search(p_q => $1, p_latitude => $2, p_longitude => $3,
        p_page => $4, p_per_page => $5, p_type => $6)::text as body`,
  categories: 'select api.categories()::text as body',
  cities: 'select api.cities(p_state => $1, p_q => $2, p_page => $3, p_per_page => $4)::text as body',
  groups: 'select api.groups(p_state => $1, p_city => $2)::text as body',
  barPosts: 'select api.graphql_bar_posts(p_bar_id => $1, p_limit => $2, p_offset => $3)::text as body',
  eventsById: 'select api.graphql_events(p_ids => $1)::text as body',
} as const;

/** The calls whose answer depends on the instant (open now, events today, ...): their last parameter is p_now. */
const TAKES_NOW = new Set<string>([SQL.bar, SQL.bars, SQL.barsByCity, SQL.events, SQL.posts, SQL.feed]);

type Waiter = { resolve(v: Json | null): void; reject(e: unknown): void };

/** Keys asked for in the same tick, read in one statement (`read` answers a value per key, or null). */
class Batcher {
  private pending = new Map<string, Waiter>();
  private readonly done = new Map<string, Promise<Json | null>>();

  constructor(private readonly read: (keys: string[]) => Promise<Map<string, Json>>) {}

  load(key: string): Promise<Json | null> {
    let p = this.done.get(key);
    if (!p) {
      p = new Promise<Json | null>((resolve, reject) => {
        if (this.pending.size === 0) setImmediate(() => void this.flush());
        this.pending.set(key, { resolve, reject });
      });
      this.done.set(key, p);
    }
    return p;
  }

  /** A value known otherwise (e.g. the one-bar query's own read). */
  prime(key: string, value: Promise<Json | null>): Promise<Json | null> {
    if (!this.done.has(key)) this.done.set(key, value);
    return this.done.get(key)!;
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    try {
      const found = await this.read([...batch.keys()]);
      for (const [key, waiter] of batch) waiter.resolve(found.get(key) ?? null);
    } catch (err) {
      for (const waiter of batch.values()) waiter.reject(err);
    }
  }
}

export class RequestData {
  private readonly memo = new Map<string, Promise<Json | null>>();
  private readonly details: Batcher;
  private readonly events: Batcher;

  /** One instant for the whole request (the clock is read once), so every field agrees on "now". */
  readonly now: Date;

  constructor(
    private readonly pool: Pool,
    clock: Clock = systemClock,
  ) {
    this.now = clock();
    this.details = new Batcher(async (ids) => {
      const { rows } = await this.pool.query<{ body: string | null }>(SQL.barsDetail, [ids, this.now]);
      const found = new Map<string, Json>();
      rows.forEach((r, i) => {
        if (r.body != null) found.set(ids[i]!, (JSON.parse(r.body) as Json).bar as Json);
      });
      return found;
    });
    this.events = new Batcher(async (ids) => {
      const found = new Map<string, Json>();
      for (let i = 0; i < ids.length; i += 100) {
        const { rows } = await this.pool.query<{ body: string }>(SQL.eventsById, [ids.slice(i, i + 100)]);
        for (const e of JSON.parse(rows[0]!.body) as Json[]) found.set(String(e.id), e);
      }
      return found;
    });
  }

  /** One api function call, parsed, once per request for the same arguments. */
  call(sql: string, values: unknown[]): Promise<Json | null> {
    if (TAKES_NOW.has(sql)) values = [...values, this.now];
    const key = `${sql}\u0000${JSON.stringify(values)}`;
    let p = this.memo.get(key);
    if (!p) {
      p = this.pool.query<{ body: string | null }>(sql, values).then(
        ({ rows }) => {
          const body = rows[0]?.body;
          return body == null ? null : (JSON.parse(body) as Json);
        },
        (err: unknown) => {
          // the functions' own input errors (e.g. end_date before start_date) are the caller's to fix
          if ((err as { code?: string }).code === INVALID_INPUT) throw userError((err as Error).message);
          throw err;
        },
      );
      this.memo.set(key, p);
    }
    return p;
  }

  /** GET bars/:id's bar object (null: unknown id); ids asked for in the same tick share one statement. */
  barDetail(id: string): Promise<Json | null> {
    return this.details.load(id);
  }

  /** The one-bar query (Query.bar): exactly REST's statement. */
  bar(id: string): Promise<Json | null> {
    return this.details.prime(
      id,
      this.call(SQL.bar, [id]).then((r) => (r?.bar as Json | undefined) ?? null),
    );
  }

  /** GET events' full form of an event (null: unknown id), batched like bar details. */
  eventFull(id: string): Promise<Json | null> {
    return this.events.load(id);
  }
}
