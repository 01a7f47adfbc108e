/**
 * What one GraphQL request reads, through the REST endpoints' api.* functions
 * (the same SQL text as the REST routes, bind parameters only): each call's
 * JSON is parsed once and memoized for the request, and bar details asked for
 * by many parents in the same tick are read in one statement.
 */
import { systemClock, type Clock } from '../clock';
import type { Pool } from '../db/pools';
import { BAR_DETAILS_SQL, CALLS, apiSql, takeRows, type ApiCall, type CallArgs } from '../contract/calls';
import { INVALID_INPUT } from '../contract/errors';
import { partnerStatements } from '../db/prepared-statements';
import { userError } from './connection';

export type Json = Record<string, unknown>;

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
      const rows = takeRows(
        await this.pool.query<{ body: string | null }>(
          partnerStatements.query({ text: BAR_DETAILS_SQL, values: [ids, this.now] }),
        ),
      );
      const found = new Map<string, Json>();
      rows.forEach((r, i) => {
        if (r.body != null) found.set(ids[i]!, (JSON.parse(r.body) as Json).bar as Json);
      });
      return found;
    });
    this.events = new Batcher(async (ids) => {
      const found = new Map<string, Json>();
      for (let i = 0; i < ids.length; i += 100) {
        const statement = apiSql(CALLS.graphqlEvents, { ids: ids.slice(i, i + 100) });
        const rows = takeRows(await this.pool.query<{ body: string }>(partnerStatements.query(statement)));
        for (const e of JSON.parse(rows[0]!.body) as Json[]) found.set(String(e.id), e);
      }
      return found;
    });
  }

  /**
   * One api function call (contract/calls.ts), parsed, once per request for the same arguments.
   * The calls whose answer depends on the instant (open now, events today, ...) get the request's p_now.
   */
  call<C extends ApiCall>(c: C, args: CallArgs<C>): Promise<Json | null> {
    const named = c.params.includes('now') ? { ...args, now: this.now } : args;
    const statement = apiSql(c, named as CallArgs<C>);
    const key = `${statement.text}\u0000${JSON.stringify(statement.values)}`;
    let p = this.memo.get(key);
    if (!p) {
      p = this.pool.query<{ body: string | null }>(partnerStatements.query(statement)).then(
        (result) => {
          const body = takeRows(result)[0]?.body;
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
      this.call(CALLS.bar, { id }).then((r) => (r?.bar as Json | undefined) ?? null),
    );
  }

  /** GET events' full form of an event (null: unknown id), batched like bar details. */
  eventFull(id: string): Promise<Json | null> {
    return this.events.load(id);
  }
}
