/**
 * A partner call's rows are taken out of pg's result (contract/calls.ts takeRows): once the answer
 * is written, the Result pg created when the query was queued holds no row, so an old Result cannot
 * keep a young answer text alive through V8's scavenges. Checked on every path that reads a
 * partner call's text: the REST routes, `apiQuery` (the usage endpoints) and GraphQL's calls.
 */
import type { QueryResult } from 'pg';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { CALLS, apiQuery, takeRows } from '../../server/contract/calls';
import type { Pool } from '../../server/db/pools';
import { RequestData } from '../../server/graphql/data';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { get } from '../support/openapi';
import { buildApp } from '../support/partner-app';

describe('takeRows', () => {
  test("returns the rows in an array of its own and leaves pg's empty", () => {
    const a = { body: '{"id":"1"}' };
    const b = { body: null };
    const result = { rows: [a, b] };
    const pgRows = result.rows;
    const taken = takeRows(result);
    expect(taken).toEqual([a, b]);
    expect(taken[0]).toBe(a);
    expect(taken).not.toBe(pgRows);
    expect(result.rows).toBe(pgRows);
    expect(pgRows).toEqual([]);
  });

  test('no rows: an empty array', () => {
    const result = { rows: [] as unknown[] };
    expect(takeRows(result)).toEqual([]);
    expect(result.rows).toEqual([]);
  });
});

describe("the partner calls leave pg's results empty", () => {
  let db: TestDatabase;
  let pool: Pool;
  let barId: number;
  /** Every result the pool returned since the last clear. */
  const results: QueryResult[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Waco', state: 'TX', time_zone: 'America/Chicago' }); // at 30, -97
    barId = await f.bar(city, { name: 'Taken Tavern' }); // at its city's point
    pool = db.partnerPool();
    const query = pool.query.bind(pool) as (...a: unknown[]) => Promise<QueryResult>;
    (pool as unknown as { query: (...a: unknown[]) => Promise<QueryResult> }).query = async (...args: unknown[]) => {
      const result = await query(...args);
      results.push(result);
      return result;
    };
  });
  afterAll(() => db.drop());
  beforeEach(() => {
    results.length = 0;
  });

  /** The results of the api.* calls among those recorded (not the guard's or the usage writer's). */
  const callResults = () => results.filter((r) => r.fields.some((f) => f.name === 'body'));

  test.each([
    ['GET bars/:id', () => `${P}/bars/${barId}`],
    ['GET bars around a point', () => `${P}/bars?latitude=30&longitude=-97&radius=5`],
    ['GET search', () => `${P}/search?q=tavern`],
  ])('%s: answered from the call, whose result then holds no row', async (_name, path) => {
    const { app } = buildApp(pool);
    const res = await get(app, path());
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).not.toBe('{}');
    expect(callResults().length).toBeGreaterThan(0);
    for (const r of callResults()) expect(r.rows).toEqual([]);
  });

  test('apiQuery (the usage endpoints, the usage writers): the rows, the result empty', async () => {
    const rows = await apiQuery(pool, CALLS.categories, {});
    expect(rows).toHaveLength(1);
    expect(rows[0]!.body).toMatch(/"categories"/);
    expect(callResults()).toHaveLength(1);
    expect(callResults()[0]!.rows).toEqual([]);
  });

  test('a 404 (the call returned NULL): its result holds no row either', async () => {
    const { app } = buildApp(pool);
    const res = await get(app, `${P}/bars/999999999`);
    expect(res.status).toBe(404);
    expect(callResults()).toHaveLength(1);
    expect(callResults()[0]!.rows).toEqual([]);
  });

  test("GraphQL's calls (RequestData): the parsed answer, the result empty", async () => {
    const data = new RequestData(pool);
    const bar = (await data.call(CALLS.bar, { id: String(barId) })) as { bar: { name: string } };
    expect(bar.bar.name).toBe('Taken Tavern');
    const details = await new RequestData(pool).barDetail(String(barId)); // the batched statement
    expect(details).toMatchObject({ name: 'Taken Tavern' });
    expect(callResults().length).toBeGreaterThanOrEqual(2);
    for (const r of callResults()) expect(r.rows).toEqual([]);
  });
});
