import { parseSeedArgs } from '../../db/seed/args';
import { allot, cityCountFor, selectCities, showcaseCities, usCities } from '../../db/seed/cities';
import { hoursTemplates, isOpen, profileVariants, weeklyProfile } from '../../db/seed/hours';

describe('city selection', () => {
  test('reads real US cities with a state, a US time zone and a population', () => {
    const cities = usCities();
    expect(cities.length).toBeGreaterThan(5000);
    const austin = cities.find((c) => c.name === 'Austin' && c.state === 'TX');
    expect(austin).toMatchObject({ timeZone: 'America/Chicago' });
    expect(austin!.latitude).toBeCloseTo(30.27, 1);
    expect(
      cities.filter(
        (c) =>
          !/^[A-Z]{2}$/.test(c.state) || (!c.timeZone.startsWith('America/') && !c.timeZone.startsWith('Pacific/')),
      ),
    ).toEqual([]);
    const keys = cities.map((c) => `${c.state}|${c.name.toLowerCase()}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  test('always includes names with apostrophes and non-ASCII letters, in at least four time zones', () => {
    const showcase = showcaseCities();
    expect(showcase.map((c) => `${c.name}, ${c.state}`)).toEqual(
      expect.arrayContaining(['Española, NM', 'Cañon City, CO', "Coeur d'Alene, ID"]),
    );
    expect(new Set(showcase.map((c) => c.timeZone)).size).toBeGreaterThanOrEqual(4);
    const small = selectCities(300).map((c) => c.name);
    for (const c of showcase) expect(small).toContain(c.name);
  });

  test('grows the number of cities with the number of bars', () => {
    expect(cityCountFor(5000)).toBe(50);
    expect(cityCountFor(1_000_000)).toBeGreaterThan(200);
    expect(cityCountFor(1_000_000)).toBeLessThan(600);
    expect(selectCities(1_000_000).length).toBeGreaterThan(selectCities(5000).length);
  });

  test('gives big cities many bars and every city some, adding up to the total', () => {
    const cities = selectCities(5000);
    expect(cities.reduce((n, c) => n + c.bars, 0)).toBe(5000);
    expect(cities[0]!.bars).toBeGreaterThan(cities.at(-1)!.bars * 10);
    for (const c of cities) expect(c.bars).toBeGreaterThanOrEqual(3);
    expect(selectCities(3).reduce((n, c) => n + c.bars, 0)).toBe(3);
  });

  test('allot splits by weight with a floor', () => {
    expect(allot(10, [1, 1])).toEqual([5, 5]);
    expect(allot(100, [3, 1])).toEqual([73, 27]); // 5 each, then 67.5 : 22.5, the tie to the first
  });

  test('the same scale gives the same cities', () => {
    expect(selectCities(777)).toEqual(selectCities(777));
  });
});

describe('hours and occupancy profiles', () => {
  const templates = hoursTemplates();

  test('templates open late on weekends, sometimes twice a day, sometimes not at all', () => {
    const slots = templates.flatMap((t) => t.slots);
    expect(slots.some((s) => (s.day === 5 || s.day === 6) && s.closes < s.opens && s.closes > 0)).toBe(true);
    expect(templates.some((t) => t.slots.filter((s) => s.day === 2).length === 2)).toBe(true);
    expect(templates.some((t) => new Set(t.slots.map((s) => s.day)).size < 7)).toBe(true);
    for (const s of slots) {
      expect(s.opens).not.toBe(s.closes);
      expect(s.opens).toBeLessThan(24);
      expect(s.closes).toBeLessThan(24);
    }
  });

  test('an after-midnight slot keeps the bar open into the next day, Sunday into Monday', () => {
    const t = { id: 0, kind: 'regular' as const, late: false, slots: [{ day: 7, opens: 20, closes: 2 }] };
    expect(isOpen(t, 6 * 24 + 20)).toBe(true); // Sunday 20:00
    expect(isOpen(t, 1)).toBe(true); // Monday 01:00
    expect(isOpen(t, 2)).toBe(false); // Monday 02:00
    expect(isOpen(t, 6 * 24 + 19)).toBe(false);
  });

  test('profiles are 168 values, 0 exactly while closed, peaking at 100 late in the week', () => {
    for (const t of templates) {
      for (const v of profileVariants) {
        const p = weeklyProfile(t, v);
        expect(p).toHaveLength(168);
        expect(p.filter((value, i) => value > 0 !== isOpen(t, i))).toEqual([]);
        expect(Math.max(...p)).toBe(100);
        const peak = p.indexOf(100);
        expect([4, 5]).toContain(Math.floor(((peak - 6 + 168) % 168) / 24)); // the evening of a Friday or a Saturday
      }
    }
  });
});

describe('db:seed arguments', () => {
  test('defaults and values', () => {
    expect(parseSeedArgs([], 5000)).toEqual({ bars: 5000, seed: 1, reset: false });
    expect(parseSeedArgs(['--bars', '1000000', '--seed', '42', '--reset'], 5000)).toEqual({
      bars: 1_000_000,
      seed: 42,
      reset: true,
    });
  });

  test.each([
    [['--bars', 'abc'], /--bars must be an integer from 1 to 10000000, got "abc"/],
    [['--bars', '0'], /--bars must be an integer/],
    [['--bars', '1.5'], /--bars must be an integer/],
    [['--bars', '20000000'], /--bars must be an integer/],
    [['--seed=-3'], /--seed must be an integer/],
    [['--rows', '5'], /Unknown option '--rows'/],
    [['extra'], /unexpected argument "extra"/],
  ])('rejects %j', (argv, message) => {
    expect(() => parseSeedArgs(argv, 5000)).toThrow(message);
  });
});
