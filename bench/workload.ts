/**
 * Realistic parameter mixes per endpoint, drawn from the data itself: random
 * bars, big and small cities, popular and rare search terms, radius 1-25
 * miles, deep pages. Each request exists in two renderings: the HTTP path
 * (autocannon) and the SQL call with bind values (database time, EXPLAIN).
 */
import type pg from 'pg';
import { CALLS, apiSql, type ApiCall, type CallArgs } from '../server/contract/calls';

export interface Call {
  /** Path and query below the partner prefix, URL-encoded. */
  path: string;
  sql: string;
  values: unknown[];
  /** Label of a worst case (EXPLAIN file name). */
  label?: string;
}

export interface Endpoint {
  name: string;
  /** A fresh random call of the realistic mix. */
  next(): Call;
  /** One fixed, typical call: the bare-vs-full comparison. */
  fixed: Call;
  /** The heaviest cases at this scale. */
  worst: Call[];
  /** Extra request headers of this case (e.g. Accept-Encoding for the compressed runs). */
  headers?: Record<string, string>;
}

interface City {
  state: string;
  name: string;
  bars: number;
  events: number;
  posts: number;
  lat: number;
  lon: number;
  groups: string[];
}

export interface Sample {
  maxBarId: number;
  cities: City[];
  /** The cities with most bars, biggest first. */
  big: City[];
  popularTerms: string[];
  rareTerms: string[];
  categories: string[];
}

export async function sampleData(client: pg.Client): Promise<Sample> {
  const maxBarId = Number((await client.query('select max(id) as n from private.bars')).rows[0].n);
  // Per-city counts over the endpoints' default windows (events: next 31 days; posts: last 31 days).
  const { rows: cities } = await client.query(`
    select c.state, c.name, c.latitude as lat, c.longitude as lon,
           (select count(*) from private.bars b where b.city_id = c.id)::int as bars,
           (select count(*) from private.events e where e.city_id = c.id and e.start_at >= now() and e.start_at < now() + interval '31 days')::int as events,
           (select count(*) from private.posts p where p.city_id = c.id and p.created_at >= now() - interval '31 days')::int as posts,
           coalesce((select array_agg(g.slug order by g.slug) from private.groups g where g.city_id = c.id), '{}') as groups
    from private.cities c order by bars desc, c.id`);
  // Popular terms: the most frequent words of bar names; rare: whole names of random bars.
  // A small database (a few thousand bars) can sample no page at all: then the whole table.
  const sampled = async (sql: (bars: string) => string, percent: number) => {
    const { rows } = await client.query(sql(`private.bars tablesample system (${percent})`));
    return rows.length ? rows : (await client.query(sql('private.bars'))).rows;
  };
  const popular = await sampled(
    (bars) => `select w from (select unnest(string_to_array(lower(name), ' ')) w from ${bars}) s
    where length(w) >= 3 group by w order by count(*) desc limit 12`,
    1,
  );
  const rare = await sampled((bars) => `select name from ${bars} limit 40`, 0.5);
  const { rows: categories } = await client.query('select slug from private.categories order by id');
  // The exact totals of the biggest cities (their last pages are worst cases), from the endpoints themselves.
  for (const c of (cities as City[]).slice(0, 5)) {
    const { rows } = await client.query(
      `select (${inner(CALLS.events)}->'pagination'->>'total_count')::int as events,
      (${inner(CALLS.posts)}->'pagination'->>'total_count')::int as posts`,
      [c.state, c.name],
    );
    Object.assign(c, rows[0]);
  }
  return {
    maxBarId,
    cities: cities as City[],
    big: (cities as City[]).slice(0, 5),
    popularTerms: popular.map((r) => r.w as string),
    rareTerms: rare.map((r) => r.name as string),
    categories: categories.map((r) => r.slug as string),
  };
}

const pick = <T>(items: T[]): T => items[Math.floor(Math.random() * items.length)]!;
const int = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));
const chance = (p: number) => Math.random() < p;
const lastPage = (count: number, perPage: number) => Math.max(1, Math.ceil(count / perPage));
const cityPath = (c: City) => `${encodeURIComponent(c.state)}/${encodeURIComponent(c.name)}`;
const query = (params: Record<string, string | number | undefined>) => {
  const parts = Object.entries(params)
    .filter(([, v]) => v !== undefined)
    .map(
      ([k, v]) => `${encodeURIComponent(k).replace(/%5B/g, '[').replace(/%5D/g, ']')}=${encodeURIComponent(String(v))}`,
    );
  return parts.length ? `?${parts.join('&')}` : '';
};
/** Pages: mostly the first few, some anywhere, some the very last. */
const page = (count: number, perPage: number) => {
  const last = lastPage(count, perPage);
  const r = Math.random();
  return r < 0.6 ? int(1, Math.min(3, last)) : r < 0.85 ? int(1, last) : last;
};

/** A call's function expression on $1 state, $2 city (for totals read inside a larger statement). */
const inner = (c: typeof CALLS.events | typeof CALLS.posts) =>
  apiSql(c, { state: 1, city: 2 })
    .text.replace(/^select /, '')
    .replace(/::text as body$/, '');

/** A call as the routes send it (server/contract/calls.ts; p_now left to the database's now()). */
function stmt<C extends ApiCall>(c: C, args: CallArgs<C>): { sql: string; values: unknown[] } {
  const { text, values } = apiSql(c, args);
  return { sql: text, values };
}

const CLASSIFICATIONS = ['live_music', 'dj', 'trivia', 'karaoke', 'happy_hour', 'sports', 'comedy', 'special'];

/** The filters of GET bars and GET bars_by_city (decisions.md v1.1). */
interface Filters {
  openNow?: boolean;
  openAt?: string;
  priceLevels?: number[];
  minRating?: number;
  statuses?: string[];
}
const filterQuery = (f: Filters = {}) => ({
  open_now: f.openNow === undefined ? undefined : String(f.openNow),
  open_at: f.openAt,
  price_level: f.priceLevels?.join(','),
  min_rating: f.minRating,
  status: f.statuses?.join(','),
});
const filterValues = (f: Filters = {}) => ({
  open_now: f.openNow ?? null,
  open_at: f.openAt ?? null,
  price_levels: f.priceLevels ?? null,
  min_rating: f.minRating ?? null,
  statuses: f.statuses ?? null,
});
/** Tuesday 10:30 UTC: 05:30 in New York, 02:30 in Los Angeles (few bars open). */
const DAWN = '2026-11-24T10:30:00Z';
/** A realistic filter mix: open now (most common), price, rating, busy bars, an evening instant. */
function someFilters(): Filters {
  const f: Filters = {};
  const r = Math.random();
  if (r < 0.45) f.openNow = true;
  else if (r < 0.6) {
    const at = new Date(Date.now() + int(1, 72) * 3600_000);
    at.setUTCMinutes(0, 0, 0);
    f.openAt = at.toISOString().replace('.000Z', 'Z');
  }
  if (chance(0.35)) f.priceLevels = pick([[1], [1, 2], [2, 3], [3, 4]]);
  if (chance(0.35)) f.minRating = pick([3.5, 4, 4.5]);
  if (chance(0.2)) f.statuses = pick([['busy', 'very_busy'], ['quiet'], ['very_busy']]);
  if (Object.keys(f).length === 0) f.openNow = true;
  return f;
}

interface BarsParams {
  ids?: string[];
  category?: string;
  latitude?: number;
  longitude?: number;
  radius?: number;
  box?: [number, number, number, number];
  limit: number;
  filters?: Filters;
}
function barsCall(p: BarsParams, label?: string): Call {
  const path = `/bars${query({
    ids: p.ids?.join(','),
    category: p.category,
    latitude: p.latitude,
    longitude: p.longitude,
    radius: p.radius,
    'corner1[latitude]': p.box?.[0],
    'corner1[longitude]': p.box?.[1],
    'corner2[latitude]': p.box?.[2],
    'corner2[longitude]': p.box?.[3],
    limit: p.limit,
    ...filterQuery(p.filters),
  })}`;
  return {
    path,
    label,
    ...stmt(CALLS.bars, {
      ids: p.ids ?? null,
      category: p.category ?? null,
      latitude: p.latitude ?? null,
      longitude: p.longitude ?? null,
      radius: p.radius ?? null,
      corner1_latitude: p.box?.[0] ?? null,
      corner1_longitude: p.box?.[1] ?? null,
      corner2_latitude: p.box?.[2] ?? null,
      corner2_longitude: p.box?.[3] ?? null,
      limit: p.limit,
      ...filterValues(p.filters),
    }),
  };
}
function cityCall(
  kind: 'bars_by_city' | 'events' | 'posts' | 'feed',
  c: City,
  q: {
    group?: string;
    page: number;
    perPage: number;
    classification?: string;
    filters?: Filters;
    /** bars_by_city's events_today_limit (absent: all of today's events, the v1 default). */
    eventsTodayLimit?: number;
  },
  label?: string,
): Call {
  const base = `/${kind}/${cityPath(c)}`;
  switch (kind) {
    case 'bars_by_city':
      return {
        label,
        path:
          base +
          query({
            group_slug: q.group,
            ...filterQuery(q.filters),
            page: q.page,
            per_page: q.perPage,
            events_today_limit: q.eventsTodayLimit,
          }),
        ...stmt(CALLS.barsByCity, {
          state: c.state,
          city: c.name,
          group_slug: q.group ?? null,
          page: q.page,
          per_page: q.perPage,
          ...filterValues(q.filters),
          events_today_limit: q.eventsTodayLimit ?? null,
        }),
      };
    case 'events':
      return {
        label,
        path:
          base + query({ classification: q.classification, group_slug: q.group, page: q.page, per_page: q.perPage }),
        ...stmt(CALLS.events, {
          state: c.state,
          city: c.name,
          start_date: null,
          end_date: null,
          classification: q.classification ?? null,
          group_slug: q.group ?? null,
          page: q.page,
          per_page: q.perPage,
        }),
      };
    case 'posts':
      return {
        label,
        path: base + query({ group_slug: q.group, page: q.page, per_page: q.perPage }),
        ...stmt(CALLS.posts, {
          state: c.state,
          city: c.name,
          start_date: null,
          end_date: null,
          group_slug: q.group ?? null,
          page: q.page,
          per_page: q.perPage,
        }),
      };
    case 'feed':
      return {
        label,
        path: base + query({ page: q.page, per_page: q.perPage }),
        ...stmt(CALLS.feed, { state: c.state, city: c.name, page: q.page, per_page: q.perPage }),
      };
  }
}
function searchCall(
  q: string,
  at: { lat: number; lon: number } | undefined,
  pg: number,
  perPage: number,
  label?: string,
  type?: 'bar' | 'city',
): Call {
  return {
    label,
    path: `/search${query({ q, latitude: at?.lat, longitude: at?.lon, type, page: pg, per_page: perPage })}`,
    ...stmt(CALLS.search, {
      q,
      latitude: at?.lat ?? null,
      longitude: at?.lon ?? null,
      page: pg,
      per_page: perPage,
      type: type ?? null,
    }),
  };
}
/** A one-letter typo: a letter dropped from the middle of a word. */
const typo = (q: string) => {
  const i = Math.max(1, Math.floor(q.length / 2));
  return q.length > 3 ? q.slice(0, i) + q.slice(i + 1) : q;
};

/** Half the traffic to the five biggest cities, half to any city. */
function someCity(s: Sample): City {
  return chance(0.5) ? pick(s.big) : pick(s.cities);
}

export function endpoints(s: Sample): Endpoint[] {
  const biggest = s.big[0]!;
  const jitter = (d: number) => (Math.random() - 0.5) * 2 * d;
  const randomId = () => String(int(1, s.maxBarId));
  return [
    {
      name: 'test_endpoint',
      next: () => ({ path: '/test_endpoint', ...stmt(CALLS.testEndpoint, { subscriber_id: 'bench', plan: 'bench' }) }),
      fixed: { path: '/test_endpoint', ...stmt(CALLS.testEndpoint, { subscriber_id: 'bench', plan: 'bench' }) },
      worst: [],
    },
    {
      name: 'bars',
      next: () => {
        const c = someCity(s);
        const r = Math.random();
        if (r < 0.4)
          return barsCall({
            latitude: c.lat + jitter(0.05),
            longitude: c.lon + jitter(0.05),
            radius: int(1, 25),
            limit: pick([20, 100, 250]),
            category: chance(0.3) ? pick(s.categories) : undefined,
          });
        if (r < 0.6) return barsCall({ ids: Array.from({ length: int(1, 100) }, randomId), limit: 100 });
        if (r < 0.8) return barsCall({ box: [c.lat - 0.02, c.lon - 0.02, c.lat + 0.02, c.lon + 0.02], limit: 100 });
        return barsCall({ category: pick(s.categories), limit: pick([20, 100]) });
      },
      fixed: barsCall({ latitude: biggest.lat, longitude: biggest.lon, radius: 5, limit: 20 }),
      worst: [
        barsCall(
          { latitude: biggest.lat, longitude: biggest.lon, radius: 25, limit: 250 },
          'radius25-densest-limit250',
        ),
        barsCall(
          { latitude: biggest.lat, longitude: biggest.lon, radius: 25, category: s.categories.at(-1), limit: 250 },
          'radius25-densest-rare-category',
        ),
        barsCall(
          { box: [biggest.lat - 0.3, biggest.lon - 0.3, biggest.lat + 0.3, biggest.lon + 0.3], limit: 250 },
          'big-box-limit250',
        ),
        barsCall(
          { ids: Array.from({ length: 100 }, (_, i) => String(1 + i * Math.floor(s.maxBarId / 100))), limit: 250 },
          'ids100',
        ),
        barsCall({ category: s.categories.at(-1), limit: 250 }, 'rare-category-limit250'),
      ],
    },
    {
      name: 'bar',
      next: () => {
        const id = randomId();
        return { path: `/bars/${id}`, ...stmt(CALLS.bar, { id }) };
      },
      fixed: { path: '/bars/12345', ...stmt(CALLS.bar, { id: '12345' }) },
      worst: [{ path: `/bars/${s.maxBarId}`, ...stmt(CALLS.bar, { id: String(s.maxBarId) }), label: 'last-bar' }],
    },
    ...(['bars_by_city', 'events', 'posts', 'feed'] as const).map((kind): Endpoint => {
      const count = (c: City) => (kind === 'bars_by_city' ? c.bars : kind === 'events' ? c.events : c.posts);
      return {
        name: kind,
        next: () => {
          const c = someCity(s);
          const perPage = pick([20, 20, 50, 100]);
          const group = kind !== 'feed' && c.groups.length && chance(0.2) ? pick(c.groups) : undefined;
          const classification = kind === 'events' && chance(0.25) ? pick(CLASSIFICATIONS) : undefined;
          return cityCall(kind, c, {
            group,
            classification,
            perPage,
            page: group || classification ? 1 : page(count(c), perPage),
          });
        },
        fixed: cityCall(kind, biggest, { page: 1, perPage: 20 }),
        worst: [
          cityCall(kind, biggest, { page: 1, perPage: 100 }, 'largest-city-first-page'),
          cityCall(kind, biggest, { page: lastPage(count(biggest), 20), perPage: 20 }, 'largest-city-last-page'),
          ...(kind === 'events'
            ? [
                cityCall(
                  kind,
                  biggest,
                  { page: 1, perPage: 100, classification: 'special' },
                  'largest-city-classification',
                ),
              ]
            : []),
          ...(kind !== 'feed' && biggest.groups[0]
            ? [cityCall(kind, biggest, { page: 1, perPage: 100, group: biggest.groups[0] }, 'largest-city-group')]
            : []),
        ],
      };
    }),
    // Filters (decisions.md v1.1): a realistic filter mix on GET bars and GET bars_by_city.
    {
      name: 'bars_filtered',
      next: () => {
        const c = someCity(s);
        const filters = someFilters();
        return chance(0.6)
          ? barsCall({
              latitude: c.lat + jitter(0.05),
              longitude: c.lon + jitter(0.05),
              radius: int(1, 25),
              limit: pick([20, 100]),
              filters,
            })
          : barsCall({ box: [c.lat - 0.05, c.lon - 0.05, c.lat + 0.05, c.lon + 0.05], limit: 100, filters });
      },
      fixed: barsCall({
        latitude: biggest.lat,
        longitude: biggest.lon,
        radius: 5,
        limit: 20,
        filters: { openNow: true },
      }),
      worst: [
        barsCall(
          {
            latitude: biggest.lat,
            longitude: biggest.lon,
            radius: 25,
            limit: 250,
            filters: { statuses: ['very_busy'], minRating: 4.5, priceLevels: [4] },
          },
          'radius25-densest-rare-filters',
        ),
        barsCall({ category: s.categories.at(-1), limit: 250, filters: { openNow: false } }, 'rare-category-closed'),
        barsCall({ limit: 250, filters: { statuses: ['very_busy'], minRating: 4.5 } }, 'no-location-rare-filters'),
        // few bars open (dawn in the US): the open slots' index, not a pass over the region
        barsCall({ limit: 250, filters: { openAt: DAWN } }, 'no-location-open-at-dawn'),
        barsCall(
          { latitude: biggest.lat, longitude: biggest.lon, radius: 25, limit: 100, filters: { openAt: DAWN } },
          'radius25-densest-open-at-dawn',
        ),
      ],
    },
    {
      name: 'bars_by_city_filtered',
      next: () => {
        const c = someCity(s);
        return cityCall('bars_by_city', c, { page: 1, perPage: pick([20, 50]), filters: someFilters() });
      },
      fixed: cityCall('bars_by_city', biggest, { page: 1, perPage: 20, filters: { openNow: true } }),
      worst: [
        cityCall(
          'bars_by_city',
          biggest,
          { page: 1, perPage: 100, filters: { statuses: ['very_busy'], minRating: 4.5, priceLevels: [4] } },
          'largest-city-rare-filters',
        ),
        cityCall(
          'bars_by_city',
          biggest,
          { page: 20, perPage: 100, filters: { openNow: true } },
          'largest-city-open-deep',
        ),
        cityCall(
          'bars_by_city',
          biggest,
          { page: 1, perPage: 20, filters: { openAt: DAWN } },
          'largest-city-open-at-dawn',
        ),
      ],
    },
    // Compression (decisions.md v1.1): the realistic GET bars mix again with Accept-Encoding; compare
    // with "bars" (no Accept-Encoding: identity) for the CPU cost of gzip and br.
    ...(['gzip', 'br'] as const).map((encoding): Endpoint => ({
      name: `bars_${encoding}`,
      headers: { 'accept-encoding': encoding },
      next: () => {
        const c = someCity(s);
        return barsCall({
          latitude: c.lat + jitter(0.05),
          longitude: c.lon + jitter(0.05),
          radius: int(1, 25),
          limit: pick([20, 100, 250]),
        });
      },
      fixed: barsCall({ latitude: biggest.lat, longitude: biggest.lon, radius: 5, limit: 100 }),
      worst: [],
    })),
    {
      name: 'search',
      next: () => {
        const r = Math.random();
        const q =
          r < 0.35
            ? pick(s.popularTerms)
            : r < 0.6
              ? pick(s.rareTerms)
              : r < 0.75
                ? pick(s.cities).name
                : r < 0.9
                  ? pick(s.popularTerms).slice(0, 3)
                  : typo(pick(s.rareTerms));
        const c = someCity(s);
        // pages 2-10 of 20 stay inside the 1,000-match cap (decisions.md v1.1)
        return searchCall(
          q,
          chance(0.5) ? { lat: c.lat, lon: c.lon } : undefined,
          chance(0.8) ? 1 : int(2, 10),
          20,
          undefined,
          chance(0.1) ? 'city' : undefined,
        );
      },
      fixed: searchCall(s.rareTerms[0] ?? 'tavern', undefined, 1, 20),
      worst: [
        searchCall(s.popularTerms[0] ?? 'the', undefined, 1, 100, 'broadest-term'),
        // the deepest page the 1,000-match cap allows: results 901-1000
        searchCall(
          s.popularTerms[0] ?? 'the',
          { lat: biggest.lat, lon: biggest.lon },
          10,
          100,
          'broadest-term-deep-page-with-position',
        ),
        searchCall((s.popularTerms[0] ?? 'the').slice(0, 2), undefined, 1, 100, 'two-letters'),
        searchCall('t', { lat: biggest.lat, lon: biggest.lon }, 10, 100, 'one-letter-deep-page-with-position'),
        searchCall(biggest.name, undefined, 1, 20, 'biggest-city-name'),
        searchCall(s.rareTerms[0] ?? 'The Velvet Lion', { lat: biggest.lat, lon: biggest.lon }, 1, 20, 'whole-name'),
        searchCall(typo(s.rareTerms[0] ?? 'The Velvet Lion'), undefined, 1, 20, 'typo'),
      ],
    },
  ];
}

/**
 * The requests of the serving-path targets (issue 34; docs/PERFORMANCE.md), one shape each, run only
 * when named in --only: `bars/:id` over 250 hot ids; `bars` radius 5 mi, limit 50, around the biggest
 * city's centre; `search` of one popular word; the biggest city's first page of `bars_by_city` (with
 * the announced default events_today_limit=100), `events` and `feed`.
 */
export function targetEndpoints(s: Sample): Endpoint[] {
  const biggest = s.big[0]!;
  const step = Math.max(1, Math.floor(s.maxBarId / 250));
  const hot = Array.from({ length: 250 }, (_, i) => String(1 + i * step));
  const jitter = (d: number) => (Math.random() - 0.5) * 2 * d;
  const near = () =>
    barsCall({ latitude: biggest.lat + jitter(0.01), longitude: biggest.lon + jitter(0.01), radius: 5, limit: 50 });
  const word = () => searchCall(pick(s.popularTerms.slice(0, 50)), undefined, 1, 20);
  const barCall = (id: string): Call => ({ path: `/bars/${id}`, ...stmt(CALLS.bar, { id }) });
  const cityPage = (kind: 'bars_by_city' | 'events' | 'feed') =>
    cityCall(kind, biggest, { page: 1, perPage: 20, eventsTodayLimit: kind === 'bars_by_city' ? 100 : undefined });
  const fixedOnly = (name: string, call: () => Call): Endpoint => ({ name, next: call, fixed: call(), worst: [] });
  return [
    fixedOnly('hot_bar', () => barCall(pick(hot))),
    fixedOnly('radius5', near),
    fixedOnly('search_word', word),
    fixedOnly('city_page', () => cityPage('bars_by_city')),
    fixedOnly('city_events', () => cityPage('events')),
    fixedOnly('city_feed', () => cityPage('feed')),
  ];
}

/** What partners send: the compressed runs of every endpoint (bench --no-compressed: identity only). */
export const PARTNER_ACCEPT_ENCODING = 'gzip, br';

/**
 * Each endpoint as it is, then (with `compressed`) each again with `Accept-Encoding: gzip, br`,
 * named `<name> (gzip, br)` (`base` is its name without the suffix, for --only).
 */
export function withEncodings(list: Endpoint[], compressed: boolean): (Endpoint & { base: string })[] {
  const plain = list.map((e) => ({ ...e, base: e.name }));
  if (!compressed) return plain;
  const encoded = list
    .filter((e) => !e.headers)
    .map((e) => ({
      ...e,
      base: e.name,
      name: `${e.name} (${PARTNER_ACCEPT_ENCODING})`,
      headers: { 'accept-encoding': PARTNER_ACCEPT_ENCODING },
    }));
  return [...plain, ...encoded];
}

/**
 * The cases measured together: an endpoint and its `(gzip, br)` twin, in the list's order. The HTTP
 * phase alternates their runs (plain, compressed, plain, ...), so a machine whose speed drifts
 * during the bench moves both sides of their ratio alike. Run one after the other, the identity
 * cases came minutes before their twins, and on machine AX (2026-12-07) a slowing machine put
 * `search` with `gzip, br` at 0.77 of identity in one judging run and 1.05 in the other.
 */
export function alternationGroups<E extends { name: string; base?: string }>(list: E[]): E[][] {
  const groups = new Map<string, E[]>();
  for (const e of list) {
    const key = e.base ?? e.name;
    const group = groups.get(key);
    if (group) group.push(e);
    else groups.set(key, [e]);
  }
  return [...groups.values()];
}
