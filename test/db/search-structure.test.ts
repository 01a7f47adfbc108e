/**
 * The search structure (private.search_terms, private.search_names and the
 * trigram tier's word lexicon, private.search_name_words and private.search_words)
 * is kept exact by triggers: after inserts, renames, popularity and position
 * changes, deletes and truncates of bars and cities it equals a recomputation
 * from scratch (private.search_rebuild), row for row.
 */
import type { QueryResult } from 'pg';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';

describe('search structure maintenance', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  const read = async (query: (sql: string) => Promise<QueryResult>) => {
    const terms = await query(
      'select kind, id, tier, suffix, popularity, geo::text as geo from private.search_terms order by 1, 2, 3, 4',
    );
    const names = await query('select name_key, entities from private.search_names order by 1');
    const nameWords = await query(
      'select word, next_word, name_key, count(*)::int as n from private.search_name_words group by 1, 2, 3 order by 1, 2, 3',
    );
    const words = await query('select word, names from private.search_words order by 1');
    return { terms: terms.rows, names: names.rows, nameWords: nameWords.rows, words: words.rows };
  };
  const snapshot = () => read((sql) => db.owner.query(sql));

  /** The live structure, then the structure rebuilt from the tables (in a rolled-back transaction). */
  const liveAndRecomputed = async () => {
    const live = await snapshot();
    const client = await db.owner.connect();
    try {
      await client.query('begin');
      await client.query('select private.search_rebuild()');
      return { live, recomputed: await read((sql) => client.query(sql)) };
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
    // The trigram tier's lexicon: each word of each distinct key (pg_trgm's words: letters and digits)
    // with the word after it, and the words with how many such rows carry them.
    expect(live.nameWords.filter((w) => w.name_key === 'canon city, co')).toEqual([
      { word: 'canon', next_word: 'city', name_key: 'canon city, co', n: 1 },
      { word: 'city', next_word: 'co', name_key: 'canon city, co', n: 1 },
      { word: 'co', next_word: '', name_key: 'canon city, co', n: 1 },
    ]);
    expect(live.nameWords.filter((w) => w.name_key === 'the tap room').map((w) => [w.word, w.next_word])).toEqual([
      ['room', ''],
      ['tap', 'room'],
      ['the', 'tap'],
    ]);
    expect(live.words).toContainEqual({ word: 'tap', names: 1 }); // one distinct name, whatever its bars
    expect(live.words).toContainEqual({ word: 'canon', names: 2 }); // "canon city" and "canon city, co"

    // a key whose words repeat, and words split by punctuation
    const repeat = await f.bar(austin, { name: 'Bar & Bar-Bar', google_ratings_total: 3 });
    live = await expectExact();
    expect(live.nameWords.filter((w) => w.name_key === 'bar & bar-bar')).toEqual([
      { word: 'bar', next_word: '', name_key: 'bar & bar-bar', n: 1 },
      { word: 'bar', next_word: 'bar', name_key: 'bar & bar-bar', n: 2 },
    ]);
    expect(live.words).toContainEqual({ word: 'bar', names: 3 });
    await db.owner.query('delete from private.bars where id = $1', [repeat]);
    live = await expectExact();
    expect(live.words.map((w) => w.word)).not.toContain('bar');

    // bulk insert in one statement (shuffled: cube's GiST degenerates on collinear points inserted in order)
    await db.owner.query(
      `insert into private.bars (city_id, name, address, latitude, longitude, google_ratings_total)
       select $1, 'Bulk Bar ' || g, '1 Main St', 30 + g / 1000.0, -97, g
       from generate_series(1, 300) g order by g * 7919 % 307`,
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
    expect(live.words.map((w) => w.word)).toEqual(expect.arrayContaining(['cafe', 'osaka', 'bulk', 'ca']));
    expect(live.words.map((w) => w.word)).not.toContain('oreillys');

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
    expect(empty).toEqual({ terms: [], names: [], nameWords: [], words: [] });
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    await f.bar(city, { name: 'Tap' });
    const live = await expectExact();
    expect(live.terms).toHaveLength(3); // bar "tap"; city "austin" and "austin, tx"
  });

  test('trigram tier: on a small lexicon, exactly the names that qualify, best first', async () => {
    // (the probes' budgets only bind on a big lexicon: here every word is rare, so every name carrying
    // two words similar to q's is a candidate, and every name with similarity >= 0.3 is among the
    // 100 names nearest q)
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
    // Bars (docs/API-NOTES.md › Search): similarity >= 0.3 (the names nearest q), or word_similarity >= 0.6
    // for a name with a word holding 60% of q's trigrams alone (a carrier), or two words among the 6
    // lexicon words most similar to one of q's words (similarity >= 0.3). Cities: every key.
    const byDefinition = async (q: string, kind: number) =>
      (
        await db.owner.query(
          `with q as (select private.search_fold($1) as q),
           lexicon as (
             select distinct w from private.search_names n, regexp_split_to_table(n.name_key, '[^[:alnum:]]+') w
             where w <> ''),
           close_words as (
             select distinct s.w, word_similarity(q.q, s.w) >= 0.6 as carrier
             from q, regexp_split_to_table(q.q, '[^[:alnum:]]+') t
             cross join lateral (
               select l.w from lexicon l where similarity(t, l.w) >= 0.3 order by similarity(t, l.w) desc, l.w limit 6) s
             where t <> ''),
           keys as (
             select t.suffix, greatest(similarity(q.q, t.suffix), word_similarity(q.q, t.suffix)) as score
             from (select distinct suffix from private.search_terms where kind = $2 and tier = 2) t, q
             cross join lateral (
               select count(distinct c.w) as close, bool_or(c.carrier) as carrier
               from regexp_split_to_table(t.suffix, '[^[:alnum:]]+') nw(word) join close_words c on c.w = nw.word) n
             where (similarity(q.q, t.suffix) >= 0.3
                    or (word_similarity(q.q, t.suffix) >= 0.6 and ($2 = 2 or n.carrier or n.close >= 2)))
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

  test('trigram tier on a big lexicon: frequent words through adjacent pairs, rare words whole', async () => {
    await db.owner.query('truncate private.bars, private.cities cascade');
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    // "the", "rusty", "anchor" and "tavern" are frequent (each in more than 300 names); "zebulon" is rare
    await db.owner.query(
      `insert into private.bars (city_id, name, address, latitude, longitude, google_ratings_total)
       select $1::bigint, n, '1 Main St', 30, -97, 1 from (
         select 'The Rusty ' || g as n from generate_series(1, 320) g
         union all select 'Anchor ' || g || ' Tavern' from generate_series(1, 320) g
         union all values ('The Rusty Anchor'), ('Rusty Anchor Tavern'), ('Rusty Old Anchor Grand Saloon And Lounge'),
                          ('Zebulon Tavern'), ('Zebulon Rusty Lounge')) x`,
      [city],
    );
    const words = await db.owner.query(
      "select word, names from private.search_words where word in ('the', 'rusty', 'anchor', 'tavern', 'zebulon') order by 1",
    );
    expect(words.rows.map((r) => [r.word, r.names > 300])).toEqual([
      ['anchor', true],
      ['rusty', true],
      ['tavern', true],
      ['the', true],
      ['zebulon', false],
    ]);
    const fuzzy = async (q: string) => {
      const { rows } = await db.owner.query<{ name_key: string; score: number; ws: number; sim: number }>(
        `select k.name_key, k.score, word_similarity(q, k.name_key) as ws, similarity(q, k.name_key) as sim
         from private.search_fold($1) q, private.search_fuzzy_names(q, 200, 1001) k`,
        [q],
      );
      // every name served qualifies, scored by word_similarity
      for (const r of rows) {
        expect(r.score).toBe(r.ws);
        expect(r.ws >= 0.6 || r.sim >= 0.3).toBe(true);
      }
      return rows.map((r) => r.name_key);
    };
    // a typo of a whole name of frequent words: "the rusty" and "rusty anchor" (each short of 60% of q's
    // trigrams) with a third similar word
    expect(await fuzzy('the rusty ancor')).toContain('the rusty anchor');
    // two adjacent frequent words holding 60% of q: their names
    expect(await fuzzy('rusty anchr')).toEqual(expect.arrayContaining(['the rusty anchor', 'rusty anchor tavern']));
    // ... but not apart: this name qualifies (word_similarity 0.63, similarity 0.23), "old" is in the way
    const [apart] = (
      await db.owner.query(
        "select word_similarity('rusty anchr', 'rusty old anchor grand saloon and lounge') as ws, similarity('rusty anchr', 'rusty old anchor grand saloon and lounge') as sim",
      )
    ).rows;
    expect(apart.ws).toBeGreaterThanOrEqual(0.6);
    expect(apart.sim).toBeLessThan(0.3);
    expect(await fuzzy('rusty anchr')).not.toContain('rusty old anchor grand saloon and lounge');
    // a rare word: its names with another similar word
    const zebulon = await fuzzy('zebulon tavrn');
    expect(zebulon).toContain('zebulon tavern');
    expect(zebulon).not.toContain('zebulon rusty lounge');
    // a carrier (a word holding 60% of q alone): up to 100 of its names, best first
    const carrier = await fuzzy('taverns');
    expect(carrier.length).toBeGreaterThanOrEqual(100);
    expect(carrier.slice(0, 100).every((n) => / tavern$|^zebulon tavern$/.test(n))).toBe(true);
  });
});
