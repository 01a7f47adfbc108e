/**
 * Per-family SQL tests (test/db/functions/<family>.test.ts, `npm run db:test -- <family>`): one
 * database per file (a clone of the migrated template), one rolled-back transaction per test,
 * fixtures inserted as the owner, functions called as the role that calls them in production.
 */
import type pg from 'pg';
import type { Pool } from '../../../server/db/pools';
import { createTestDatabase, type TestDatabase } from '../../support/db';
import { fixtures, type Fixtures } from '../../support/fixtures';

/** 'owner': the migrations' role (the admin CLI, the function owner). */
export type Role = 'bar_partner' | 'bar_partner_graphql' | 'bar_operator' | 'owner';

export interface Tx {
  /** As the owner (fixtures, private helpers: they run inside the api functions as the owner). */
  query<R extends pg.QueryResultRow = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** As `role`, in a savepoint: an error (e.g. permission denied) leaves the transaction usable. */
  as<R extends pg.QueryResultRow = Record<string, unknown>>(role: Role, sql: string, params?: unknown[]): Promise<R[]>;
  /** The one value of a one-row, one-column call as `role` (json arrives parsed). */
  call<T = unknown>(role: Role, sql: string, params?: unknown[]): Promise<T>;
  /**
   * The plans of every statement a call as `role` runs, nested ones included, in execution order
   * (auto_explain, no ANALYZE). A generic plan shows its parameters (`$1`), a custom plan their values.
   */
  plans(role: Role, sql: string, params?: unknown[]): Promise<string[]>;
  fx: Fixtures;
}

/** The SQLSTATE a call as `role` fails with (fails the test when it succeeds). */
export async function errorOf(
  tx: Tx,
  role: Role,
  sql: string,
  params: unknown[] = [],
): Promise<{ code: string; message: string }> {
  try {
    await tx.as(role, sql, params);
  } catch (e) {
    const err = e as { code: string; message: string };
    return { code: err.code, message: err.message };
  }
  throw new Error(`expected an error from: ${sql}`);
}

export function familyDatabase(): { run<T>(body: (tx: Tx) => Promise<T>): Promise<T> } {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  return {
    async run<T>(body: (tx: Tx) => Promise<T>): Promise<T> {
      const client = await db.owner.connect();
      let savepoints = 0;
      const tx: Tx = {
        async query(sql, params = []) {
          return (await client.query(sql, params)).rows;
        },
        async as(role, sql, params = []) {
          const sp = `sp_${++savepoints}`;
          await client.query(`savepoint ${sp}`);
          try {
            if (role !== 'owner') await client.query(`set local role ${role}`);
            const { rows } = await client.query(sql, params);
            await client.query(`release savepoint ${sp}`);
            await client.query('reset role');
            return rows;
          } catch (e) {
            await client.query(`rollback to savepoint ${sp}`); // also undoes set local role
            throw e;
          }
        },
        async call(role, sql, params = []) {
          const rows = await tx.as(role, sql, params);
          expect(rows).toHaveLength(1);
          return Object.values(rows[0]!)[0] as never;
        },
        async plans(role, sql, params = []) {
          const notices: string[] = [];
          const onNotice = (n: { message?: string }) => notices.push(n.message ?? '');
          await client.query(`load 'auto_explain'`);
          await client.query(`set local auto_explain.log_nested_statements = on;
            set local auto_explain.log_min_duration = 0; set local client_min_messages = log`);
          client.on('notice', onNotice);
          try {
            await tx.as(role, sql, params);
          } finally {
            client.off('notice', onNotice);
            await client.query('reset auto_explain.log_min_duration; reset client_min_messages');
          }
          return notices.filter((m) => m.startsWith('duration:'));
        },
        fx: fixtures(client as unknown as Pool),
      };
      try {
        await client.query('begin');
        return await body(tx);
      } finally {
        await client.query('rollback').catch(() => undefined);
        client.release();
      }
    },
  };
}
