/**
 * Issue 29: the demo must not look broken at any hour. The quickstart's 5,000 bars have open bars and
 * a non-empty busiest_bars in the biggest city at every hour of a winter and a summer week (so across
 * both US offsets), because some venues open for lunch, some early in the morning, a few never close.
 * Every instant is passed as p_now: nothing here depends on when the test runs.
 */
import { seedDemoData } from '../../db/seed';
import { categories } from '../../db/seed/vocabulary';
import { createTestDatabase, type TestDatabase } from '../support/db';

const bars = 5000;
const weeks = [
  ['2026-11-23T00:30:00Z', '2026-11-29T23:30:00Z'], // Monday to Sunday, standard time
  ['2026-07-13T00:30:00Z', '2026-07-19T23:30:00Z'], // daylight saving time
];

describe('demo data for every hour', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await seedDemoData(db.url, { bars, seed: 1, now: new Date('2026-11-25T15:00:00Z') });
  }, 120_000);
  afterAll(() => db?.drop());

  test("every category's hours shares add up to 100 percent", () => {
    for (const c of categories)
      expect({ slug: c.slug, total: Object.values(c.hours).reduce((a, b) => a + (b ?? 0), 0) }).toEqual({
        slug: c.slug,
        total: 100,
      });
  });

  test("open_now and the biggest city's busiest_bars are non-empty at each of 336 hours", async () => {
    const { rows: big } = await db.owner.query<{ state: string; name: string }>(
      `select c.state, c.name from private.cities c join private.bars b on b.city_id = c.id
       group by c.id order by count(*) desc limit 1`,
    );
    const { state, name } = big[0]!;
    const { rows } = await db.owner.query<{ at: Date; open: number; city_open: number; busiest: number }>(
      `select t as at,
              json_array_length(api.bars(p_open_now => true, p_limit => 250, p_now => t)::json -> 'bars') as open,
              json_array_length(api.bars_by_city($1, $2, p_open_now => true, p_per_page => 100, p_now => t) -> 'bars')
                as city_open,
              json_array_length(api.bars_by_city($1, $2, p_now => t) -> 'busiest_bars') as busiest
       from (select generate_series($3::timestamptz, $4::timestamptz, '1 hour') t
             union all select generate_series($5::timestamptz, $6::timestamptz, '1 hour')) h
       order by t`,
      [state, name, ...weeks.flat()],
    );
    expect(rows).toHaveLength(336);
    const empty = rows.filter((r) => r.open === 0 || r.city_open === 0 || r.busiest === 0);
    expect(empty.map((r) => ({ at: r.at.toISOString(), open: r.open, city: r.city_open, busiest: r.busiest }))).toEqual(
      [],
    );
    // and not by a hair: the whole country has dozens of bars open even at the quietest hour
    expect(Math.min(...rows.map((r) => r.open))).toBeGreaterThanOrEqual(20);
  }, 120_000);

  test('the day still belongs to the evening: far more bars are open at 22:00 than at 09:00 in New York', async () => {
    const { rows } = await db.owner.query<{ morning: number; evening: number }>(
      `select (api.bars_by_city('NY', 'New York City', p_open_now => true, p_now => '2026-11-25T14:00:00Z')
                -> 'pagination' ->> 'total_count')::int as morning,
              (api.bars_by_city('NY', 'New York City', p_open_now => true, p_now => '2026-11-26T03:00:00Z')
                -> 'pagination' ->> 'total_count')::int as evening`,
    );
    expect(rows[0]!.morning).toBeGreaterThan(0);
    expect(rows[0]!.evening).toBeGreaterThan(3 * rows[0]!.morning);
  });
});
