import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { formatFinding, inCi, lintDatabase, missingExtensionOutcome } from '../../db/tools/lint';
import { applyFunctionFiles, functionsFolder } from '../../db/tools/migrate';
import { createTestDatabase, type TestDatabase } from '../support/db';

/** `npm run db:lint` (db/tools/lint.ts): plpgsql_check over api, private and admin. */
describe('db:lint without plpgsql_check', () => {
  test.each([['true'], ['1'], ['TRUE']])('fails in CI (CI=%s), naming the package to install', (ci) => {
    const outcome = missingExtensionOutcome({ CI: ci });
    expect(outcome.exitCode).toBe(1);
    expect(outcome.message).toMatch(/FAILED.*plpgsql_check.*postgresql-15-plpgsql-check/);
  });

  test.each([[undefined], [''], ['false'], ['0']])('skips with a message on a local run (CI=%s)', (ci) => {
    const outcome = missingExtensionOutcome(ci === undefined ? {} : { CI: ci });
    expect(outcome.exitCode).toBe(0);
    expect(outcome.message).toMatch(/SKIPPED, nothing was checked.*plpgsql_check.*CI=true.*fails/);
    expect(inCi(ci === undefined ? {} : { CI: ci })).toBe(false);
  });
});

const describeWithPlpgsqlCheck: jest.Describe = process.env.TEST_PG_PLPGSQL_CHECK ? describe : describe.skip;

describeWithPlpgsqlCheck('db:lint (plpgsql_check)', () => {
  let db: TestDatabase;
  let folder: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'db-lint-'));
    for (const f of fs.readdirSync(functionsFolder))
      fs.copyFileSync(path.join(functionsFolder, f), path.join(folder, f));
  });
  afterAll(async () => {
    fs.rmSync(folder, { recursive: true, force: true });
    await db.drop();
  });

  test('the landed functions lint clean', async () => {
    const result = await lintDatabase(db.url);
    expect(result.checked).toBeGreaterThan(40);
    expect(result.errors.map((e) => formatFinding(e))).toEqual([]);
    expect(result.unattached).toEqual([]);
  });

  // create or replace accepts the body (plpgsql resolves names at run time); only the linter sees it.
  const breakFile = (file: string, from: string, to: string): string[] => {
    const sql = fs.readFileSync(path.join(functionsFolder, file), 'utf8');
    expect(sql).toContain(from);
    const broken = sql.replace(from, to);
    fs.writeFileSync(path.join(folder, file), broken);
    return broken.split('\n');
  };

  test('a broken column reference in a function file is an error naming the function, file and line', async () => {
    const lines = breakFile('22-bar.sql', "'{\"bar\" : ' || r.body || '}'", "'{\"bar\" : ' || r.bodyy || '}'");
    expect(await applyFunctionFiles(db.url, { folder, force: true })).toBeGreaterThan(0);
    const result = await lintDatabase(db.url, folder);
    expect(result.errors).toHaveLength(1);
    const [error] = result.errors;
    // plpgsql_check names the statement's first line: `return (`
    const statementLine = lines.findIndex((l) => l.includes('r.bodyy')); // 1-based: the line before
    expect(lines[statementLine - 1]).toMatch(/^\s*return \($/);
    expect(error).toMatchObject({
      fn: 'api.bar(text,timestamp with time zone)',
      where: `22-bar.sql:${statementLine}`,
      message: expect.stringContaining('r.bodyy'),
    });
    expect(formatFinding(error!)).toMatch(
      new RegExp(`22-bar\\.sql:${statementLine}: error: api\\.bar\\(text,timestamp with time zone\\) .*r\\.bodyy`),
    );
  });

  test('a broken reference in a trigger function shared by several tables is still an error', async () => {
    fs.copyFileSync(path.join(functionsFolder, '22-bar.sql'), path.join(folder, '22-bar.sql'));
    breakFile(
      '27-search-terms.sql',
      'perform private.search_names_add(array(select private.search_fold(b.name) from new_rows b))',
      'perform private.search_names_add(array(select private.search_fold(b.nam) from new_rows b))',
    );
    expect(await applyFunctionFiles(db.url, { folder, force: true })).toBeGreaterThan(0);
    const result = await lintDatabase(db.url, folder);
    expect(result.errors.length).toBeGreaterThan(0);
    expect(result.errors.map((e) => e.message).join('\n')).toContain('b.nam');
    expect(result.errors.every((e) => e.where?.startsWith('27-search-terms.sql:'))).toBe(true);
  });
});
