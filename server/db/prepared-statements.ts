/**
 * The partner calls (`select api.<fn>(...)::text as body`, REST and GraphQL)
 * as named prepared statements: each connection parses, analyses and plans a
 * call's text once, then only binds and runs it. Sent unnamed, PostgreSQL did
 * that work on every request: resolving a function called with named
 * arguments, then a plan, about a sixth of its CPU per `GET bars/:id`
 * (docs/performance/judging-runs.md, machine AI).
 *
 * A name per distinct text, the same on every connection of the process (pg
 * prepares it on a connection at its first use there). At most `max` texts
 * get one, so a connection never holds more than `max` statements, whatever
 * mix of optional arguments arrives; texts beyond it go unnamed.
 *
 * PG_PREPARED_STATEMENTS=off sends every call unnamed: for a pooler that
 * cannot keep prepared statements (PgBouncer in transaction mode before 1.21,
 * or without `max_prepared_statements`). A replaced or re-created function
 * needs nothing: PostgreSQL analyses a prepared statement again when an object
 * it uses changes, and the statement's one column stays text.
 */
import type { QueryConfig } from 'pg';
import type { Statement } from '../contract/calls';

export const MAX_NAMED_STATEMENTS = 200;

export class PreparedStatements {
  private readonly names = new Map<string, string>();

  constructor(
    public enabled = true,
    private readonly max = MAX_NAMED_STATEMENTS,
  ) {}

  /** The query for `s`: named while enabled and its text has (or can get) a name; else unnamed. */
  query(s: Statement): QueryConfig {
    if (!this.enabled) return { text: s.text, values: s.values };
    let name = this.names.get(s.text);
    if (name === undefined && this.names.size < this.max) {
      name = `api_call_${this.names.size + 1}`;
      this.names.set(s.text, name);
    }
    return name === undefined ? { text: s.text, values: s.values } : { name, text: s.text, values: s.values };
  }
}

/** The process's table (wiring sets `enabled` from PG_PREPARED_STATEMENTS). */
export const partnerStatements = new PreparedStatements();
