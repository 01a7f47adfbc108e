/**
 * 28-search.sql (the term table: 27-search-terms.sql): api.search as bar_partner: the 1,000-match cap at its edges, ranking ties, the
 * parameter errors the database judges. Through HTTP (tiers, trigrams, accents, deep pages):
 * test/api/search.test.ts, test/api/search-v11.test.ts; the term structure:
 * test/db/search-structure.test.ts.
 */
import { errorOf, familyDatabase, type Tx } from './sql';

const sql = familyDatabase();

interface Result {
  type: string;
  id: string;
  name: string;
}
interface Search {
  results: Result[];
  pagination: { current_page: number; total_pages: number; total_count: number; per_page: number };
  total_count_capped: boolean;
}

async function city(tx: Tx) {
  const [row] = await tx.query<{ id: number }>(
    "insert into private.cities (name, state, time_zone, latitude, longitude) values ('Chicago', 'IL', 'America/Chicago', 41.88, -87.63) returning id",
  );
  return row!.id;
}
/**
 * n bars "<name> 1" .. "<name> n", popularity i, northwards with i (set-based: one statement for the
 * triggers), inserted in a shuffled order: cube's GiST (bars_geo) builds a degenerate tree from
 * collinear points inserted in order, seconds per thousand bars on an empty index.
 */
async function bars(tx: Tx, cityId: number, name: string, n: number, popularity = (i: string) => i) {
  await tx.query(
    `insert into private.bars (city_id, name, address, latitude, longitude, google_ratings_total)
     select $1, $2 || ' ' || i, '1 Main St', 41.88 + i * 0.0001, -87.63, ${popularity('i')}
     from generate_series(1, $3) i order by i * 7919 % 10007`,
    [cityId, name, n],
  );
}
const search = (tx: Tx, args: string) => tx.call<Search>('bar_partner', `select api.search(${args})`);

describe('api.search', () => {
  test('the cap at its edges: 1,001 matches count as 1,000 (capped), the last page is served, the next is PT400', async () => {
    await sql.run(async (tx) => {
      await bars(tx, await city(tx), 'Edge', 1001);
      const over = await search(tx, "'edge', p_type => 'bar'");
      expect(over.pagination).toEqual({ current_page: 1, total_pages: 50, total_count: 1000, per_page: 20 });
      expect(over.total_count_capped).toBe(true);
      expect(over.results[0]!.name).toBe('Edge 1001'); // most popular first
      const last = await search(tx, "'edge', p_page => 10, p_per_page => 100, p_type => 'bar'");
      expect(last.results).toHaveLength(100);
      expect(last.results[99]!.name).toBe('Edge 2'); // the 1,000th most popular
      expect(await errorOf(tx, 'bar_partner', "select api.search('edge', p_page => 51, p_per_page => 20)")).toEqual({
        code: 'PT400',
        message: 'search results end at the 1,000th match; narrow q (or use GET bars filters)',
      });
      await tx.query("delete from private.bars where name = 'Edge 1'");
      const at = await search(tx, "'edge', p_type => 'bar'");
      expect(at.pagination.total_count).toBe(1000);
      expect(at.total_count_capped).toBe(false);
    });
  });

  test('a broad word (over 1,000 rows): the walk without a count serves what the count would, whether the word is most of its bucket or a small part of it', async () => {
    await sql.run(async (tx) => {
      const cityId = await city(tx);
      // the bucket "sto": 2,100 "Tap Stone i" (popularity 10,000 + i), then 1,100 "Tap Stout i" (i)
      await bars(tx, cityId, 'Tap Stone', 2100, (i) => `10000 + ${i}`);
      await bars(tx, cityId, 'Tap Stout', 1100);
      const names = (from: number, n: number, word: string) =>
        Array.from({ length: n }, (_, k) => `Tap ${word} ${from - k}`);
      for (const [q, word, top] of [
        ['stone', 'Stone', 2100], // most of its bucket: the walk fills the page
        ['stout', 'Stout', 1100], // under a twentieth of it: the walk gives up, the count decides
      ] as const) {
        const first = await search(tx, `'${q}', p_type => 'bar'`);
        expect(first.results.map((r) => r.name)).toEqual(names(top, 20, word));
        expect([first.pagination.total_count, first.total_count_capped]).toEqual([1000, true]);
        const deep = await search(tx, `'${q}', p_page => 10, p_per_page => 100, p_type => 'bar'`);
        expect(deep.results.map((r) => r.name)).toEqual(names(top - 900, 100, word));
        // the tier itself, with and without the hint: the same rows in the same order
        const tier = async (broad: boolean) =>
          (
            await tx.query<{ id: string }>(
              `select h.id::text from private.search_tier(1::smallint, 3::smallint, $1, null, 104, $2) h`,
              [q, broad],
            )
          ).map((r) => r.id);
        const hinted = await tier(true);
        expect(hinted).toHaveLength(104);
        expect(hinted).toEqual(await tier(false));
      }
    });
  });

  test.each([
    ["'x', p_page => 0", 'page must be >= 1 and per_page 1-100'],
    ["'x', p_per_page => 0", 'page must be >= 1 and per_page 1-100'],
    ["'x', p_per_page => 101", 'page must be >= 1 and per_page 1-100'],
    ["'x', p_type => 'group'", 'type must be one of bar, city'],
  ])('api.search(%s) is PT400: %s', async (args, message) => {
    await sql.run(async (tx) => {
      expect(await errorOf(tx, 'bar_partner', `select api.search(${args})`)).toEqual({ code: 'PT400', message });
    });
  });

  test('ties: equal exact names by popularity, then id; with a position, nearer first', async () => {
    await sql.run(async (tx) => {
      const cityId = await city(tx);
      const [a, b, c] = (
        await tx.query<{ id: string }>(
          `insert into private.bars (city_id, name, address, latitude, longitude, google_ratings_total)
           values ($1, 'Twin Peaks', 'x', 41.80, -87.63, 5), ($1, 'Twin Peaks', 'x', 41.90, -87.63, 5),
                  ($1, 'Twin Peaks', 'x', 41.85, -87.63, 9)
           returning id::text`,
          [cityId],
        )
      ).map((r) => r.id);
      const plain = await search(tx, "'twin peaks', p_type => 'bar'");
      expect(plain.results.map((r) => r.id)).toEqual([c, a, b]);
      const near = await search(tx, "'Twin Peaks', p_latitude => 41.91, p_longitude => -87.63, p_type => 'bar'");
      expect(near.results.map((r) => r.id)).toEqual([b, c, a]);
    });
  });
});

describe('privileges', () => {
  test.each([
    ['bar_operator', "select api.search('x')"],
    ['bar_partner', 'select * from private.search_terms'],
    ['bar_partner', "select * from private.search_fuzzy_names('x', 10, 0)"],
  ] as const)('%s may not: %s', async (role, query) => {
    await sql.run(async (tx) => {
      expect((await errorOf(tx, role, query)).code).toBe('42501');
    });
  });
});
