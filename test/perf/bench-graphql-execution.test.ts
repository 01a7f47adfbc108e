/**
 * bench/graphql.ts's in-process figure (the CPU of one `bar(id)` execution) measures the real
 * query on the real schema with the real bar's object: no timing is asserted, only that what ran is
 * the bench's query answered for the seed's first bar, without errors, in five rounds.
 */
import { parse, type FieldNode, type OperationDefinitionNode } from 'postgraphile/graphql';
import { seedDemoData } from '../../db/seed';
import { BAR_QUERY, executionCpuOfBar } from '../../bench/graphql';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { testNow } from '../support/clock';

describe('bench/graphql: bar(id) executed in process', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    await seedDemoData(db.url, { bars: 20, seed: 5, now: testNow() });
  });
  afterAll(async () => {
    await db?.drop();
  });

  test("the seed's first bar, every field of the bench's query, five rounds", async () => {
    const cost = await executionCpuOfBar(db.url, { perRound: 10, warm: 2 });
    const { rows } = await db.owner.query<{ id: string; name: string }>(
      'select id::text as id, name from private.bars order by id limit 1',
    );
    expect(cost.id).toBe(rows[0]!.id);
    const answer = JSON.parse(cost.answer) as { data: { bar: Record<string, unknown> }; errors?: unknown };
    expect(answer.errors).toBeUndefined();
    expect(answer.data.bar).toMatchObject({ id: rows[0]!.id, name: rows[0]!.name });
    const bar = (parse(BAR_QUERY).definitions[0] as OperationDefinitionNode).selectionSet.selections[0] as FieldNode;
    const fields = bar.selectionSet!.selections.map((f) => (f as FieldNode).name.value);
    expect(fields.length).toBeGreaterThan(20);
    expect(Object.keys(answer.data.bar)).toEqual(fields); // every field the bench asks for, in order
    expect(cost.rounds).toHaveLength(5);
    for (const us of cost.rounds) expect(Number.isFinite(us) && us > 0).toBe(true);
    expect(cost.minUs).toBeLessThanOrEqual(cost.medianUs);
    expect(cost.medianUs).toBeLessThanOrEqual(cost.maxUs);
  });
});
