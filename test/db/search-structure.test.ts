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
});
