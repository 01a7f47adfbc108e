import fs from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../server/config';
import { migrateDatabase } from '../../db/tools/migrate';
import { createTestDatabase, type TestDatabase } from '../support/db';

const committed = fs.readdirSync(path.join(projectRoot, 'db/migrations/committed')).filter((f) => f.endsWith('.sql'));

describe('migrations', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase({ empty: true });
  });
  afterAll(() => db.drop());

  test('apply from zero to an empty database', async () => {
    await migrateDatabase(db.url);
    const { rows } = await db.owner.query<{ filename: string }>(
      'select filename from graphile_migrate.migrations order by filename',
    );
    expect(rows.map((r) => r.filename)).toEqual(committed.map((f) => f.replace(/^(\d+).*/, '$1.sql')).sort());
    const tables = await db.owner.query<{ n: number }>(
      "select count(*)::int as n from pg_tables where schemaname = 'private' and tablename in ('cities','bars','events','posts','occupancy','opening_hours')",
    );
    expect(tables.rows[0]!.n).toBe(6);
  });

  test('migrating an up-to-date database is a no-op', async () => {
    const before = await db.owner.query(
      'select filename, hash, date from graphile_migrate.migrations order by filename',
    );
    await migrateDatabase(db.url);
    const after = await db.owner.query(
      'select filename, hash, date from graphile_migrate.migrations order by filename',
    );
    expect(after.rows).toEqual(before.rows);
  });

  test('migrations need only contrib extensions', async () => {
    const { rows } = await db.owner.query<{ extname: string }>(
      "select extname from pg_extension where extname <> 'plpgsql' order by 1",
    );
    expect(rows.map((r) => r.extname)).toEqual(['btree_gist', 'cube', 'earthdistance', 'pg_trgm', 'unaccent']);
  });
});
