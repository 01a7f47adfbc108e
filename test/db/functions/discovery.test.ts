/**
 * 30-discovery.sql: api.categories, api.cities and api.groups as bar_partner. Through HTTP, and the
 * counts kept by triggers: test/api/discovery.test.ts.
 */
import { errorOf, familyDatabase, type Tx } from './sql';

const sql = familyDatabase();

interface City {
  name: string;
  state: string;
  bar_count: number;
}
interface Cities {
  cities: City[];
  pagination: { current_page: number; total_pages: number; total_count: number; per_page: number };
}

async function cities(tx: Tx) {
  const add = async (name: string, state: string, bars: number) => {
    const id = await tx.fx.city({ name, state, time_zone: 'America/Chicago' });
    for (let i = 0; i < bars; i++) await tx.fx.bar(id, { name: `${name} bar ${i}` });
    return id;
  };
  return {
    springfieldIl: await add('Springfield', 'IL', 2),
    springfieldMo: await add('Springfield', 'MO', 2),
    sanAntonio: await add('San Antonio', 'TX', 2),
    canon: await add('Cañon City', 'CO', 1),
    austin: await add('Austin', 'TX', 3),
  };
}
const list = (tx: Tx, state: string | null, q: string | null, page = 1, perPage = 20) =>
  tx.call<Cities>('bar_partner', 'select api.cities($1, $2, $3, $4)', [state, q, page, perPage]);
const names = (r: Cities) => r.cities.map((c) => `${c.name}, ${c.state} (${c.bar_count})`);

describe('api.cities', () => {
  test('most bars first; equal counts by name, then id', async () => {
    await sql.run(async (tx) => {
      await cities(tx);
      expect(names(await list(tx, null, null))).toEqual([
        'Austin, TX (3)',
        'San Antonio, TX (2)',
        'Springfield, IL (2)',
        'Springfield, MO (2)',
        'Cañon City, CO (1)',
      ]);
    });
  });

  test('state (any case) and an accent-insensitive name prefix combine; LIKE wildcards are literal', async () => {
    await sql.run(async (tx) => {
      await cities(tx);
      expect(names(await list(tx, 'tx', 's'))).toEqual(['San Antonio, TX (2)']);
      expect(names(await list(tx, null, 'CANON'))).toEqual(['Cañon City, CO (1)']);
      expect(names(await list(tx, 'co', 'cañ'))).toEqual(['Cañon City, CO (1)']);
      expect(names(await list(tx, null, '%'))).toEqual([]);
      expect(names(await list(tx, 'WY', null))).toEqual([]);
    });
  });

  test('pages: the last page, past the end, per_page 1', async () => {
    await sql.run(async (tx) => {
      await cities(tx);
      const last = await list(tx, null, null, 3, 2);
      expect(names(last)).toEqual(['Cañon City, CO (1)']);
      expect(last.pagination).toEqual({ current_page: 3, total_pages: 3, total_count: 5, per_page: 2 });
      expect((await list(tx, null, null, 4, 2)).cities).toEqual([]);
      expect(names(await list(tx, null, 'spring', 2, 1))).toEqual(['Springfield, MO (2)']);
    });
  });
});

describe('api.categories and api.groups', () => {
  test('categories by name then slug, with bar counts (zero included)', async () => {
    await sql.run(async (tx) => {
      const { austin } = await cities(tx);
      const bar = await tx.fx.bar(austin, { name: 'x' });
      const dive = await tx.fx.category('Dive', 'dive');
      await tx.fx.category('Dive', 'dive-2');
      await tx.fx.category('Beer', 'beer');
      await tx.fx.barCategory(bar, dive, true);
      const r = await tx.call<{ categories: { slug: string; bar_count: number }[] }>(
        'bar_partner',
        'select api.categories()',
      );
      expect(r.categories.map((c) => `${c.slug}:${c.bar_count}`)).toEqual(['beer:0', 'dive:1', 'dive-2:0']);
    });
  });

  test('groups of a city by name with bar counts; unknown city null; a city without groups []', async () => {
    await sql.run(async (tx) => {
      const { austin } = await cities(tx);
      const a = await tx.fx.bar(austin, { name: 'a' });
      const b = await tx.fx.bar(austin, { name: 'b' });
      await tx.fx.group(austin, 'zilker', [a, b]);
      await tx.fx.group(austin, 'east', [b]);
      const r = await tx.call<{ groups: { slug: string; bar_count: number }[] }>(
        'bar_partner',
        "select api.groups('tx', 'AUSTIN')",
      );
      expect(r.groups.map((g) => `${g.slug}:${g.bar_count}`)).toEqual(['east:1', 'zilker:2']);
      expect(await tx.call('bar_partner', "select api.groups('TX', 'Houston')")).toBeNull();
      expect(await tx.call('bar_partner', "select api.groups('TX', 'San Antonio')")).toMatchObject({ groups: [] });
    });
  });
});

describe('privileges', () => {
  test.each([
    ['bar_operator', 'select api.categories()'],
    ['bar_operator', 'select api.cities(null, null, 1, 20)'],
    ['bar_operator', "select api.groups('TX', 'Austin')"],
    ['bar_partner', 'select * from private.city_bar_counts'],
    ['bar_partner', 'select * from private.categories'],
  ] as const)('%s may not: %s', async (role, query) => {
    await sql.run(async (tx) => {
      expect((await errorOf(tx, role, query)).code).toBe('42501');
    });
  });
});
