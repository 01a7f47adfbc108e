/**
 * The search structure (private.search_terms, private.search_names) is kept
 * exact by triggers: after inserts, renames, popularity and position changes,
 * deletes and truncates of bars and cities it equals a recomputation from
 * scratch (private.search_rebuild), row for row.
 */
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';

describe('search structure maintenance', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  const snapshot = async () => {
    const terms = await db.owner.query(
      'select kind, id, tier, suffix, popularity, geo::text as geo from private.search_terms order by 1, 2, 3, 4',
    );
    const names = await db.owner.query('select name_key, entities from private.search_names order by 1');
    return { terms: terms.rows, names: names.rows };
  };

  /** The live structure, then the structure rebuilt from the tables (in a rolled-back transaction). */
  const liveAndRecomputed = async () => {
    const live = await snapshot();
    const client = await db.owner.connect();
    try {
      await client.query('begin');
      await client.query('select private.search_rebuild()');
      const terms = await client.query(
        'select kind, id, tier, suffix, popularity, geo::text as geo from private.search_terms order by 1, 2, 3, 4',
      );
      const names = await client.query('select name_key, entities from private.search_names order by 1');
      return { live, recomputed: { terms: terms.rows, names: names.rows } };
    } finally {
      await client.query('rollback');
      client.release();
    }
  };

  const expectExact = async () => {
    const { live, recomputed } = await liveAndRecomputed();
    expect(live).toEqual(recomputed);
    return live;
  };

  test('inserts, renames, popularity and position changes, deletes; bars and cities; bulk statements', async () => {
    const f = fixtures(db.owner);
    const canon = await f.city({ name: 'Cañon City', state: 'CO', time_zone: 'America/Denver', population: 16000 });
    const austin = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago', population: 950000 });
    const tavern = await f.bar(canon, { name: "O'Reilly’s  Tavern", google_ratings_total: 12 });
    await f.bar(canon, { name: 'The Tap Room', google_ratings_total: 40 });
    await f.bar(austin, { name: 'The Tap Room', google_ratings_total: 7 });
    let live = await expectExact();
    // The rows are what the tiers need: word-start suffixes, folded; the city's "<name>, <st>".
    expect(live.terms.filter((t) => Number(t.id) === tavern && t.kind === 1).map((t) => [t.tier, t.suffix])).toEqual([
      [2, 'oreillys tavern'],
      [3, 'tavern'],
    ]);
    expect(live.terms.filter((t) => Number(t.id) === canon && t.kind === 2).map((t) => [t.tier, t.suffix])).toEqual([
      [2, 'canon city'],
      [2, 'canon city, co'],
      [3, 'city'],
    ]);
    expect(live.names).toContainEqual({ name_key: 'the tap room', entities: 2 });

    // bulk insert in one statement
    await db.owner.query(
      `insert into private.bars (city_id, name, address, latitude, longitude, google_ratings_total)
       select $1, 'Bulk Bar ' || g, '1 Main St', 30 + g / 1000.0, -97, g from generate_series(1, 300) g`,
      [austin],
    );
    await expectExact();

    // renames (one and many), popularity and position changes, a change that touches nothing searchable
    await db.owner.query("update private.bars set name = 'Café Ōsaka' where id = $1", [tavern]);
    await db.owner.query("update private.bars set name = replace(name, 'Bulk', 'Bülk') where name like 'Bulk Bar 1%'");
    await db.owner.query('update private.bars set google_ratings_total = google_ratings_total + 1 where id % 3 = 0');
    await db.owner.query('update private.bars set latitude = latitude + 0.01 where id % 5 = 0');
    await db.owner.query("update private.bars set description = 'unchanged for search' where id % 2 = 0");
    await db.owner.query("update private.cities set name = 'Canon City', population = 17000 where id = $1", [canon]);
    await db.owner.query("update private.cities set state = 'CA' where id = $1", [austin]);
    live = await expectExact();
    expect(live.names).toContainEqual({ name_key: 'cafe osaka', entities: 1 });
    expect(live.names).toContainEqual({ name_key: 'the tap room', entities: 2 });
    expect(live.names.map((n) => n.name_key)).not.toContain('oreillys tavern');
    expect(live.names.map((n) => n.name_key)).toContain('austin, ca');

    // deletes: some bars, then a duplicate name's last carrier, then a city with its bars
    await db.owner.query("delete from private.bars where name like 'Bülk Bar 2%' or id % 7 = 0");
    await db.owner.query("delete from private.bars where name = 'The Tap Room' and city_id = $1", [canon]);
    live = await expectExact();
    expect(live.names).toContainEqual({ name_key: 'the tap room', entities: 1 });
    await db.owner.query('delete from private.bars where city_id = $1', [canon]);
    await db.owner.query('delete from private.cities where id = $1', [canon]);
    live = await expectExact();
    expect(live.terms.some((t) => t.kind === 2 && Number(t.id) === canon)).toBe(false);
    expect(live.terms.length).toBeGreaterThan(300);
  });

  test('truncate of the bar data empties the structure; a reload refills it', async () => {
    await db.owner.query('truncate private.bars, private.cities cascade');
    const empty = await expectExact();
    expect(empty).toEqual({ terms: [], names: [] });
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    await f.bar(city, { name: 'Tap' });
    const live = await expectExact();
    expect(live.terms).toHaveLength(3); // bar "tap"; city "austin" and "austin, tx"
  });

  test('trigram tier: on a small lexicon, exactly the names that qualify, best first', async () => {
    // (the probes' budgets only bind on a big lexicon: here every name is in reach)
    await db.owner.query('truncate private.bars, private.cities cascade');
    const f = fixtures(db.owner);
    const austin = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago', population: 950000 });
    await f.city({ name: 'Cañon City', state: 'CO', time_zone: 'America/Denver', population: 16000 });
    await f.city({ name: 'Boston', state: 'MA', time_zone: 'America/New_York', population: 600000 });
    const first = ['The', 'Rusty', 'Golden', 'Old', 'Canyon', 'Cañon', 'Lion'];
    const second = ['Anchor', 'Lion', 'Tavern', 'Tap', 'Club', 'Room', 'Pub', 'Bar', 'Boot'];
    await db.owner.query(
      `insert into private.bars (city_id, name, address, latitude, longitude, google_ratings_total)
       select $1::bigint, ($2::text[])[1 + g % 7] || ' ' || ($3::text[])[1 + (g * 5) % 9] || case when g % 3 = 0 then ' House' else '' end,
              '1 Main St', 30 + ((g * 37) % 101) / 100.0, -97 + ((g * 53) % 97) / 100.0, (g * 7919) % 500
       from generate_series(1, 80) g`,
      [austin, first, second],
    );
    const byDefinition = async (q: string, kind: number) =>
      (
        await db.owner.query(
          `with q as (select private.search_fold($1) as q),
           keys as (
             select t.suffix, greatest(similarity(q.q, t.suffix), word_similarity(q.q, t.suffix)) as score
             from (select distinct suffix from private.search_terms where kind = $2 and tier = 2) t, q
             where (similarity(q.q, t.suffix) >= 0.3 or word_similarity(q.q, t.suffix) >= 0.6)
               and not starts_with(t.suffix, q.q) and strpos(t.suffix, ' ' || q.q) = 0
             order by 2 desc, 1
             limit case when $2 = 1 then 200 end)
           select t.id::int as id, k.score from keys k
           join private.search_terms t on t.kind = $2 and t.tier = 2 and t.suffix = k.suffix
           order by k.score desc, t.popularity desc, t.id`,
          [q, kind],
        )
      ).rows;
    const tier = async (q: string, kind: number) =>
      (
        await db.owner.query(
          kind === 1
            ? `select t.id::int as id, k.score
               from private.search_fuzzy_names(private.search_fold($1), 200, 1001) k
               join private.search_terms t on t.kind = 1 and t.tier = 2 and t.suffix = k.name_key
               order by k.score desc, t.popularity desc, t.id`
            : `select h.id::int as id, h.score from private.search_fuzzy_cities(private.search_fold($1), null, 1001) h`,
          [q],
        )
      ).rows;
    let found = 0;
    for (const q of [
      'canon',
      'tavrn',
      'the rusty ancor',
      'Golden Lion Pb',
      'lion',
      'boot',
      'austn',
      'bostn, ma',
      'canon cty',
    ]) {
      for (const kind of [1, 2]) {
        const expected = await byDefinition(q, kind);
        found += expected.length;
        expect({ q, kind, rows: await tier(q, kind) }).toEqual({ q, kind, rows: expected });
      }
    }
    expect(found).toBeGreaterThan(30);
  });
});
