/**
 * server/README.md "Add a parameter to an endpoint": a parameter is its
 * declaration (contract/endpoints.ts), the SQL function and a test. That holds
 * while, for every partner endpoint, the declaration, the reader (readArgs)
 * and the call agree with the api function's arguments in a migrated
 * database: a parameter declared but not passed, or an argument of the
 * function that no declaration feeds, fails here.
 */
import { CALLS, type PartnerCall } from '../../server/contract/calls';
import { pathNames, readArgs } from '../../server/contract/declared-params';
import { ENDPOINTS } from '../../server/contract/endpoints';
import { QueryParams } from '../../server/contract/params';
import { createTestDatabase, type TestDatabase } from '../support/db';

const partnerCalls = (Object.entries(CALLS) as [string, object][]).filter(
  (entry): entry is [string, PartnerCall] => 'endpoint' in entry[1],
);

/** A query string that records which parameters are looked at (and holds none). */
function recording(): { query: Record<string, unknown>; touched: Set<string> } {
  const touched = new Set<string>();
  const query = new Proxy({} as Record<string, unknown>, {
    get(_t, key) {
      if (typeof key === 'string') touched.add(key);
      return undefined;
    },
  });
  return { query, touched };
}

describe('endpoint declarations against the api functions', () => {
  let db: TestDatabase;
  /** api function → its input argument names. */
  const functionArgs = new Map<string, string[]>();

  beforeAll(async () => {
    db = await createTestDatabase();
    const { rows } = await db.owner.query<{ fn: string; args: string[] }>(
      `select p.proname as fn,
              coalesce(array_agg(a.name order by a.n) filter (where a.mode in ('i', 'b', 'v')), '{}') as args
         from pg_proc p
         left join lateral unnest(p.proargnames, coalesce(p.proargmodes, array_fill('i'::"char", array[p.pronargs])))
              with ordinality a(name, mode, n) on true
        where p.pronamespace = 'api'::regnamespace
        group by p.oid, p.proname`,
    );
    for (const r of rows) {
      expect(functionArgs.has(r.fn)).toBe(false); // one function per name: named arguments pick it
      functionArgs.set(r.fn, r.args);
    }
  });
  afterAll(() => db.drop());

  test('every partner endpoint has one call', () => {
    const endpoints = partnerCalls.map(([, c]) => c.endpoint);
    expect(new Set(endpoints).size).toBe(endpoints.length);
    // the export and usage endpoints have routes of their own (parameters declared readByRoute, feeding nothing)
    const own = ['/export/bars', '/export/events', '/usage', '/usage/history', '/usage/requests'];
    const rest = ENDPOINTS.filter((e) => !own.includes(e.path)).map((e) => e.path);
    expect(rest.sort()).toEqual(endpoints.map((e) => e.path).sort());
  });

  describe.each(partnerCalls)('%s', (_name, c) => {
    const e = c.endpoint;
    const declared = [...pathNames(e.path), ...e.query.flatMap((q) => q.args)];

    test("the call passes exactly the function's arguments: the declaration's, then the extras", () => {
      const prefixed = (names: readonly string[]) => names.map((n) => `p_${n}`).sort();
      expect(functionArgs.get(c.fn)).toBeDefined();
      expect(prefixed(c.params)).toEqual([...functionArgs.get(c.fn)!].sort());
      expect(prefixed(c.params)).toEqual(prefixed([...declared, ...c.extras]));
      expect(new Set(c.params).size).toBe(c.params.length);
    });

    test('each declared query parameter is read by its own name and feeds its arguments', () => {
      for (const q of e.query) {
        expect(q.args.length).toBeGreaterThan(0);
        expect(q.spec).toMatchObject({ name: q.name, in: 'query' });
        const { query, touched } = recording();
        let read: object | undefined;
        try {
          read = q.read!(new QueryParams(query as never));
        } catch (err) {
          expect((err as Error).message).toMatch(new RegExp(`^${q.name} is required`)); // search's q
        }
        expect({ name: q.name, touched: [...touched] }).toEqual({ name: q.name, touched: [q.name] });
        if (read) expect(Object.keys(read).sort()).toEqual([...q.args].sort());
      }
    });

    test('readArgs gives the path parameters and every declared argument (null when absent)', () => {
      const params = Object.fromEntries(pathNames(e.path).map((n) => [n, `path-${n}`]));
      // search requires q: the one required parameter is given
      const query = Object.fromEntries(e.query.filter((q) => q.spec.required).map((q) => [q.name, 'x']));
      const args = readArgs(e, { params, query });
      expect(Object.keys(args).sort()).toEqual([...declared].sort());
      for (const [n, v] of Object.entries(params)) expect(args[n]).toBe(v);
    });
  });
});
