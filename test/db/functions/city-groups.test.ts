/**
 * 23-bars-by-city.sql's group page (group_slug: private.city_group_page and its members,
 * private.city_group_member_ids) as bar_partner, with the clock pinned. Through HTTP:
 * test/api/city.test.ts.
 */
import { chicago, MONDAY_0100_CHICAGO, type Named, type Page } from './chicago';
import { familyDatabase, type Tx } from './sql';

const sql = familyDatabase();

describe('a group (group_slug): private.city_group_page', () => {
  interface GroupPage {
    bars: Named[];
    events_today: Named[];
    events_today_total: number;
    busiest_bars: Named[];
    pagination: Page;
  }
  const byGroup = (tx: Tx, slug: string, extra = '', params: unknown[] = []) =>
    tx.call<GroupPage>(
      'bar_partner',
      `select api.bars_by_city('IL', 'Chicago', p_group_slug => $1, p_now => $2${extra})`,
      [slug, MONDAY_0100_CHICAGO, ...params],
    );
  const ids = (list: Named[]) => list.map((b) => b.id);

  // Chicago's 'west': four bars in Chicago (price 1 but Bravo's 3) and one now in Evanston; 'Nope' is no member
  async function west(tx: Tx) {
    const { city } = await chicago(tx);
    const evanston = await tx.fx.city({ name: 'Evanston', state: 'IL', time_zone: 'America/Chicago' });
    const bar = async (where: number, name: string, price: number, intensity: number) => {
      const id = await tx.fx.bar(where, { name, price_level: price });
      await tx.fx.alwaysOpen(id);
      await tx.fx.occupancy(id, intensity);
      return id;
    };
    const [alpha, bravo, charlie, delta] = [
      await bar(city, 'Alpha', 1, 20),
      await bar(city, 'Bravo', 3, 50),
      await bar(city, 'Charlie', 1, 30),
      await bar(city, 'Delta', 1, 40),
    ];
    const moved = await bar(evanston, 'Moved', 1, 99);
    const nope = await bar(city, 'Nope', 1, 90);
    await tx.fx.group(city, 'west', [delta!, moved, bravo!, alpha!, charlie!]);
    const monday = { start_at: '2026-11-24T02:00:00Z', end_at: '2026-11-24T04:00:00Z' }; // 20:00 local
    for (const [id, title] of [
      [bravo, 'at bravo'],
      [moved, 'at moved'],
      [nope, 'at nope'],
    ] as const)
      await tx.fx.event(id!, { title, ...monday });
    return { members: { alpha, bravo, charlie, delta }, moved, nope };
  }

  test('members in its city only; pages by name then id; events_today and busiest_bars of the same members', async () => {
    await sql.run(async (tx) => {
      const { members: b } = await west(tx);
      const first = await byGroup(tx, 'west', ', p_per_page => 2');
      expect(ids(first.bars)).toEqual([String(b.alpha), String(b.bravo)]);
      expect(first.pagination).toEqual({ current_page: 1, total_pages: 2, total_count: 4, per_page: 2 });
      const second = await byGroup(tx, 'west', ', p_page => 2, p_per_page => 2');
      expect(ids(second.bars)).toEqual([String(b.charlie), String(b.delta)]);
      expect(ids(first.busiest_bars)).toEqual([b.bravo, b.delta, b.charlie, b.alpha].map(String));
      expect([first.events_today.map((e) => e.name), first.events_today_total]).toEqual([['at bravo'], 1]);
    });
  });

  test('the filters narrow the page and its total, not events_today nor busiest_bars; an unknown slug is empty', async () => {
    await sql.run(async (tx) => {
      const { members: b } = await west(tx);
      const cheap = await byGroup(tx, 'west', ', p_price_levels => $3', [[1]]);
      expect(ids(cheap.bars)).toEqual([b.alpha, b.charlie, b.delta].map(String));
      expect(cheap.pagination.total_count).toBe(3);
      expect(ids(cheap.busiest_bars)).toEqual([b.bravo, b.delta, b.charlie, b.alpha].map(String));
      expect(cheap.events_today_total).toBe(1);
      const none = await byGroup(tx, 'nowhere');
      expect([none.bars, none.events_today, none.busiest_bars, none.pagination.total_count]).toEqual([[], [], [], 0]);
    });
  });

  test('its members: one probe each of bars_id_city_id_key, planned once per connection, at a large city', async () => {
    await sql.run(async (tx) => {
      const { members: b } = await west(tx);
      // a city of 3,000 bars: a join would rather read the city's whole range of bars_city_name
      await tx.query(
        `insert into private.bars (city_id, name, address, latitude, longitude)
         select b.city_id, 'Filler ' || g, '1 Main St', b.latitude, b.longitude
         from private.bars b, generate_series(1, 3000) g where b.id = $1`,
        [b.alpha],
      );
      await tx.query('analyze private.bars');
      await tx.query('analyze private.bar_groups');
      const call = "select api.bars_by_city('IL', 'Chicago', p_group_slug => 'west', p_now => $1)";
      const members = (await tx.plans('bar_partner', call, [MONDAY_0100_CHICAGO])).filter((p) =>
        p.includes('bar_groups bg'),
      );
      expect(members).toHaveLength(1);
      expect(members[0]).toContain('Nested Loop');
      expect(members[0]).toContain('Index Only Scan using bars_id_city_id_key');
      expect(members[0]).toMatch(/city_id = \$2/); // generic: planned once per connection
      expect(members[0]).not.toMatch(/Hash|Merge|bars_city_name/);
    });
  });
});
