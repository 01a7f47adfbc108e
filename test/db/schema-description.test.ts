import fs from 'node:fs';
import { describeSchemas, DESCRIBED_SCHEMAS, schemaFile } from '../../db/tools/schema-description';
import { createTestDatabase, type TestDatabase } from '../support/db';

/** db/schema/ (db/CONVENTIONS.md "The schema description"): committed, generated, checked here. */
describe('db/schema description', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase(); // migrated from scratch: committed, current/, function files
  });
  afterAll(() => db.drop());

  test.each(DESCRIBED_SCHEMAS)(
    'db/schema/%s.txt is what the migrations and function files produce (else: npm run db:schema)',
    async (schema) => {
      const texts = await describeSchemas(db.url);
      expect(fs.existsSync(schemaFile(schema))).toBe(true);
      expect(fs.readFileSync(schemaFile(schema), 'utf8')).toBe(texts[schema]);
    },
  );

  // Last in this file: it changes this throwaway database for good.
  test('a new column, index, default or grant changes the description', async () => {
    const before = await describeSchemas(db.url);
    await db.owner.query(`
      alter table private.bars add column dress_code text default 'none';
      create index bars_dress_code on private.bars (dress_code);
      grant select (dress_code) on private.bars to bar_operator;
      alter table admin.plans alter column per_day set default 1000;`);
    const after = await describeSchemas(db.url);
    expect(after.api).toBe(before.api);
    expect(after.private).not.toBe(before.private);
    expect(after.private).toContain("column dress_code text default 'none'::text\n");
    expect(after.private).toContain('INDEX bars_dress_code ON private.bars USING btree (dress_code)');
    expect(after.private).toContain('grant select (dress_code) to bar_operator');
    expect(after.admin).toContain('column per_day integer default 1000\n');
  });
});
