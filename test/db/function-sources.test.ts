import { readFunctionFiles } from '../../db/tools/migrate';
import { createTestDatabase, type TestDatabase } from '../support/db';

/**
 * One source per function (db/CONVENTIONS.md): every function of api, private and admin is defined by a
 * function file, so no current body lives only in a committed migration.
 */
describe('function sources', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  const defined = new Set(
    readFunctionFiles().flatMap((f) =>
      [...f.sql.matchAll(/create\s+(?:or\s+replace\s+)?function\s+([a-z_]\w*\.[a-z_]\w*)\s*\(/gi)].map((m) =>
        m[1]!.toLowerCase(),
      ),
    ),
  );

  async function withoutFile(): Promise<string[]> {
    const { rows } = await db.owner.query<{ name: string; fn: string }>(`
      select n.nspname || '.' || p.proname as name, p.oid::regprocedure::text as fn
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace
      where n.nspname in ('api', 'private', 'admin')
        and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
      order by 2`);
    expect(rows.length).toBeGreaterThan(100);
    return rows.filter((r) => !defined.has(r.name)).map((r) => r.fn);
  }

  test('every function of api, private and admin has a function file defining it', async () => {
    expect(await withoutFile()).toEqual([]);
  });

  test('a function created only by a migration (or by hand) is reported', async () => {
    await db.owner.query('create function admin.only_in_a_migration() returns int language sql as $$ select 1 $$');
    try {
      expect(await withoutFile()).toEqual(['admin.only_in_a_migration()']);
    } finally {
      await db.owner.query('drop function admin.only_in_a_migration()');
    }
  });
});
