/**
 * The partner calls as named prepared statements (server/db/prepared-statements.ts):
 * a name per text, bounded; through the app, the connection keeps the call's
 * statement and answers as the unnamed call does, also after the function is
 * replaced or dropped and created again; PG_PREPARED_STATEMENTS=off prepares
 * nothing.
 */
import type { Express } from 'express';
import { loadConfig } from '../../server/config';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createPool, type Pool } from '../../server/db/pools';
import { PreparedStatements, partnerStatements } from '../../server/db/prepared-statements';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { get } from '../support/openapi';
import { buildApp } from '../support/partner-app';

describe('PreparedStatements (names for the partner calls)', () => {
  test('one name per text, the same each time; the values go with it', () => {
    const s = new PreparedStatements();
    const a = s.query({ text: 'select api.bar(p_id => $1)::text as body', values: ['1'] });
    const b = s.query({ text: 'select api.search(p_q => $1)::text as body', values: ['x'] });
    expect(a).toEqual({ name: 'api_call_1', text: 'select api.bar(p_id => $1)::text as body', values: ['1'] });
    expect(b.name).toBe('api_call_2');
    expect(s.query({ text: 'select api.bar(p_id => $1)::text as body', values: ['2'] })).toEqual({
      name: 'api_call_1',
      text: 'select api.bar(p_id => $1)::text as body',
      values: ['2'],
    });
  });

  test('at most `max` texts get a name; the rest go unnamed, the named keep theirs', () => {
    const s = new PreparedStatements(true, 2);
    expect(s.query({ text: 'a', values: [] }).name).toBe('api_call_1');
    expect(s.query({ text: 'b', values: [] }).name).toBe('api_call_2');
    expect(s.query({ text: 'c', values: [1] })).toEqual({ text: 'c', values: [1] });
    expect(s.query({ text: 'c', values: [] }).name).toBeUndefined();
    expect(s.query({ text: 'a', values: [] }).name).toBe('api_call_1');
  });

  test('disabled: every statement unnamed', () => {
    const s = new PreparedStatements(false);
    expect(s.query({ text: 'a', values: [1] })).toEqual({ text: 'a', values: [1] });
  });

  test('PG_PREPARED_STATEMENTS: on by default, off turns it off, anything else refused', () => {
    expect(loadConfig({}).pgPreparedStatements).toBe(true);
    expect(loadConfig({ PG_PREPARED_STATEMENTS: 'off' }).pgPreparedStatements).toBe(false);
    expect(loadConfig({ PG_PREPARED_STATEMENTS: 'on' }).pgPreparedStatements).toBe(true);
    expect(() => loadConfig({ PG_PREPARED_STATEMENTS: 'sometimes' })).toThrow(/PG_PREPARED_STATEMENTS/);
  });
});

describe('the partner calls through the app, on one connection', () => {
  let db: TestDatabase;
  let barId: number;

  /** The app on a pool of one connection (so the statements it prepared can be listed on it). */
  const onOneConnection = (): { app: Express; pool: Pool } => {
    const pool = createPool(db.url, { max: 1, role: 'bar_partner', applicationName: 'tests-prepared' });
    return { app: buildApp(pool).app, pool };
  };
  const prepared = async (pool: Pool) =>
    (await pool.query<{ name: string; statement: string }>('select name, statement from pg_prepared_statements')).rows;

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    const city = await f.city({
      name: 'Austin',
      state: 'TX',
      time_zone: 'America/Chicago',
      latitude: 30.25,
      longitude: -97.75,
    });
    barId = await f.bar(city, { name: 'Prepared Tavern', latitude: 30.25, longitude: -97.75 });
  });
  afterAll(async () => {
    partnerStatements.enabled = true;
    await db.drop();
  });

  test('GET bars/:id, bars around a point and search: each call prepared once, answers as unnamed', async () => {
    const paths = [`${P}/bars/${barId}`, `${P}/bars?latitude=30.25&longitude=-97.75&radius=5`, `${P}/search?q=tavern`];
    partnerStatements.enabled = false;
    const unnamed = onOneConnection();
    const expected = [];
    for (const path of paths) expected.push((await get(unnamed.app, path)).body as unknown);
    expect(await prepared(unnamed.pool)).toEqual([]);
    await unnamed.pool.end();

    partnerStatements.enabled = true;
    const { app, pool } = onOneConnection();
    try {
      for (let round = 0; round < 3; round++)
        for (const [i, path] of paths.entries()) {
          const res = await get(app, path);
          expect(res.status).toBe(200);
          expect(res.body).toEqual(expected[i]);
        }
      const statements = await prepared(pool);
      expect(statements.map((s) => s.statement.replace(/\(.*/s, '')).sort()).toEqual([
        'select api.bar',
        'select api.bars',
        'select api.search',
      ]);
      for (const s of statements) expect(s.name).toMatch(/^api_call_\d+$/);
    } finally {
      await pool.end();
    }
  });

  test('a function replaced, then dropped and created again, under a prepared statement: the next call answers', async () => {
    const { app, pool } = onOneConnection();
    try {
      const path = `${P}/bars/${barId}`;
      const before = await get(app, path);
      expect(before.status).toBe(200);
      expect((await prepared(pool)).map((s) => s.statement)).toEqual([expect.stringMatching(/^select api\.bar\(/)]);
      const { rows } = await db.owner.query<{ oid: string; def: string; acl: string }>(
        `select p.oid::regprocedure::text as oid, pg_get_functiondef(p.oid) as def, p.proacl::text as acl
         from pg_proc p where p.oid = 'api.bar'::regproc`,
      );
      const { oid, def } = rows[0]!;
      await db.owner.query(def); // create or replace, the same body: the plan is invalidated
      const replaced = await get(app, path);
      expect(replaced.status).toBe(200);
      expect(replaced.body).toEqual(before.body);

      const client = await db.owner.connect();
      try {
        await client.query('begin');
        await client.query(`drop function ${oid}`);
        await client.query(def); // a new function (a new oid) under the same name
        await client.query(`grant execute on function ${oid} to bar_partner`);
        await client.query('commit');
      } finally {
        client.release();
      }
      const recreated = await get(app, path);
      expect(recreated.status).toBe(200);
      expect(recreated.body).toEqual(before.body);
      expect(await prepared(pool)).toHaveLength(1); // the same statement, analysed again
    } finally {
      await pool.end();
    }
  });
});
