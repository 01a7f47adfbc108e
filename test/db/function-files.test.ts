import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { applyFunctionFiles, functionFilesChecksum, migrateDatabase, readFunctionFiles } from '../../db/tools/migrate';
import { createTestDatabase, type TestDatabase } from '../support/db';

/** The repeatable function files (db/CONVENTIONS.md): applied after migrations, skipped when unchanged. */
describe('function files', () => {
  let db: TestDatabase;
  let folder: string;
  const write = (name: string, sql: string) => fs.writeFileSync(path.join(folder, name), sql);
  const value = async () => (await db.owner.query<{ v: number }>('select private.ff_probe() as v')).rows[0]!.v;

  beforeAll(async () => {
    db = await createTestDatabase(); // migrated like every test database, function files included
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'function-files-'));
  });
  afterAll(async () => {
    fs.rmSync(folder, { recursive: true, force: true });
    await db.drop();
  });

  test('the project files are recorded as applied, by checksum', async () => {
    const files = readFunctionFiles();
    expect(files.length).toBeGreaterThan(0);
    expect(files.map((f) => f.name)).toEqual([...files.map((f) => f.name)].sort());
    const { rows } = await db.owner.query<{ checksum: string; files: string[] }>(
      'select checksum, files from private.function_files',
    );
    expect(rows[0]).toEqual({ checksum: functionFilesChecksum(files), files: files.map((f) => f.name) });
    expect(await applyFunctionFiles(db.url)).toBe(0); // unchanged: skipped
    expect(await applyFunctionFiles(db.url, { force: true })).toBe(files.length);
  });

  test('a changed file is applied again; files run in name order', async () => {
    write('01-probe.sql', 'create or replace function private.ff_probe() returns int language sql as $$ select 1 $$;');
    write('02-probe.sql', 'create or replace function private.ff_probe() returns int language sql as $$ select 2 $$;');
    expect(await applyFunctionFiles(db.url, { folder })).toBe(2);
    expect(await value()).toBe(2);
    expect(await applyFunctionFiles(db.url, { folder })).toBe(0);
    write('02-probe.sql', 'create or replace function private.ff_probe() returns int language sql as $$ select 3 $$;');
    expect(await applyFunctionFiles(db.url, { folder })).toBe(2);
    expect(await value()).toBe(3);
  });

  test('a failing file names itself and applies nothing', async () => {
    write('01-probe.sql', 'create or replace function private.ff_probe() returns int language sql as $$ select 4 $$;');
    write('03-broken.sql', 'create function private.ff_broken( returns int;');
    await expect(applyFunctionFiles(db.url, { folder })).rejects.toThrow(/functions\/03-broken\.sql: syntax error/);
    expect(await value()).toBe(3); // 01 ran inside the rolled-back transaction
  });

  test('instances starting at once all migrate (they wait for each other, none fails)', async () => {
    const fresh = await createTestDatabase({ empty: true });
    try {
      await Promise.all([0, 1, 2].map(() => migrateDatabase(fresh.url, { includeCurrent: true })));
      const { rows } = await fresh.owner.query<{ n: number }>('select count(*)::int as n from private.function_files');
      expect(rows[0]!.n).toBe(1);
    } finally {
      await fresh.drop();
    }
  });
});
