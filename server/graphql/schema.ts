/**
 * The partner GraphQL schema (grafast): the SDL of type-defs.ts and resolvers
 * that read the REST functions' JSON (data.ts) and map its snake_case fields to
 * camelCase. A bar reached through a short form (an event's bar, a search
 * match, a busiest bar) reads GET bars/:id's object for the fields that form
 * lacks, batched per tick. The resolvers run as grafast steps (ResolverStep,
 * at the end), not through grafast's emulation of graphql-js resolvers.
 */
import { deprecateSdl } from '../contract/deprecations';
import { DEPRECATIONS, type Deprecation } from '../contract/endpoints';
import {
  UnbatchedStep,
  context,
  makeGrafastSchema,
  type FieldPlanResolver,
  type Step,
  type UnbatchedExecutionExtra,
} from 'postgraphile/grafast';
import type { GraphQLResolveInfo, GraphQLSchema } from 'postgraphile/graphql';
import { HttpError } from '../contract/errors';
import {
  BARS_LIMIT,
  LATITUDE,
  LONGITUDE,
  MAX_IDS,
  RADIUS,
  SEARCH_CAP,
  barFilterArgs,
  checkedBarFilters,
  rules,
  type BarFilters,
  type FilterNames,
  type NumberRule,
} from '../contract/params';
import {
  connection,
  notFound,
  pagedWindow,
  sliceConnection,
  userError,
  windowOf,
  type Page,
  type Window,
} from './connection';
import { CALLS } from '../contract/calls';
import { type Json, type RequestData } from './data';
import { TYPE_DEFS } from './type-defs';

export interface RateLimitView {
  cost: number;
  limit: number;
  remaining: number;
  used: number;
  resetAt: string;
  nodeCount: number;
}

export interface GraphqlContext {
  data: RequestData;
  rateLimit(): RateLimitView;
}

type Args = Record<string, unknown>;
type Resolver = (source: Json, args: Args, ctx: GraphqlContext, info: GraphQLResolveInfo) => unknown;

const BARS_CAP = BARS_LIMIT.max; // the list ends at GET bars' limit maximum

/** A contract rule's 400 (the argument named as in GraphQL) as a GraphQL input error. */
function checked<T>(check: () => T): T {
  try {
    return check();
  } catch (e) {
    if (e instanceof HttpError && e.status === 400) throw userError(e.message);
    throw e;
  }
}

const FILTER_NAMES: FilterNames = {
  openNow: 'filters.openNow',
  openAt: 'filters.openAt',
  priceLevels: 'filters.priceLevels',
  minRating: 'filters.minRating',
  statuses: 'filters.statuses',
};

/** The filters, checked by the contract's rules (the same as GET bars'), named as GraphQL arguments. */
function filtersOf(input: unknown): BarFilters {
  const f = (input ?? {}) as {
    openNow?: boolean | null;
    openAt?: string | null;
    priceLevels?: number[] | null;
    minRating?: number | null;
    statuses?: string[] | null;
  };
  return checked(() =>
    checkedBarFilters(
      {
        openNow: () => f.openNow ?? undefined,
        openAt: () => f.openAt ?? undefined,
        priceLevels: () => f.priceLevels?.map(String),
        minRating: () => f.minRating ?? undefined,
        statuses: () => f.statuses ?? undefined,
      },
      FILTER_NAMES,
    ),
  );
}

function dateOf(name: string, value: unknown): string | null {
  return value == null ? null : checked(() => rules.date(name, String(value)));
}

/** A coordinate or radius by the contract's rule (GET bars' latitude, longitude, radius). */
function checkNumber(name: string, value: number, rule: NumberRule): void {
  checked(() => rules.number(name, value, rule));
}

function checkText(name: string, value: unknown): string {
  return checked(() => rules.text(name, String(value)));
}

function nonEmpty(name: string, value: unknown): string | null {
  if (value == null) return null;
  if (String(value).trim() === '') throw userError(`${name} must not be empty`);
  return String(value);
}

/** Does the connection field select `totalCount` (fragments included)? */
function selectsTotalCount(info: GraphQLResolveInfo): boolean {
  const visit = (selections: readonly { kind: string }[]): boolean =>
    selections.some((s) => {
      const node = s as {
        kind: string;
        name?: { value: string };
        selectionSet?: { selections: readonly { kind: string }[] };
      };
      if (node.kind === 'Field') return node.name?.value === 'totalCount';
      if (node.kind === 'InlineFragment') return visit(node.selectionSet!.selections);
      if (node.kind === 'FragmentSpread') {
        const fragment = info.fragments[node.name!.value];
        return fragment ? visit(fragment.selectionSet.selections) : false;
      }
      return false;
    });
  return info.fieldNodes.some((f) => (f.selectionSet ? visit(f.selectionSet.selections) : false));
}

// ---------------------------------------------------------------- sources

/**
 * `then(value)` now when the value is at hand, else when its promise settles. Most of a bar's
 * fields are in the object at hand; a plain value spares grafast awaiting a promise per field.
 */
function whenReady<T, R>(value: T | Promise<T>, then: (value: T) => R): R | Promise<R> {
  return value instanceof Promise ? value.then(then) : then(value);
}

/** A bar field: from the object at hand, else (a promise) from GET bars/:id's object. */
function barValue(bar: Json, key: string, ctx: GraphqlContext): unknown {
  if (key in bar) return bar[key];
  return ctx.data.barDetail(String(bar.id)).then((detail) => detail?.[key] ?? null);
}
const barField =
  (key: string): Resolver =>
  (bar, _args, ctx) =>
    barValue(bar, key, ctx);

/** A REST page's items and total_count. */
function page(body: Json | null, items: string, pagination = 'pagination'): Page<Json> | null {
  if (!body) return null;
  return {
    items: body[items] as Json[],
    total: (body[pagination] as { total_count: number }).total_count,
  };
}

interface CityKey {
  state: string;
  name: string;
}

function cityValues(city: Json): { state: string; city: string } {
  return { state: String(city.state), city: String(city.name) };
}

/** The city's events today (the first `eventsLimit`, and their total) and busiest bars: api.graphql_city_highlights. */
function cityHighlights(ctx: GraphqlContext, city: Json, eventsLimit: number): Promise<Json | null> {
  return ctx.data.call(CALLS.cityHighlights, { ...cityValues(city), events_today_limit: eventsLimit });
}

function barsByCityPage(ctx: GraphqlContext, city: CityKey, group: string | null, f: BarFilters, w: Window) {
  return pagedWindow(w, async (p, perPage) =>
    page(
      await ctx.data.call(CALLS.barsByCity, {
        state: city.state,
        city: city.name,
        group_slug: group,
        page: p,
        per_page: perPage,
        ...barFilterArgs(f),
      }),
      'bars',
    ),
  );
}

const eventNode = (event: Json, bar?: Json): Json => (bar && !event.bar ? { ...event, bar } : event);

// ---------------------------------------------------------------- resolvers

const Query: Record<string, Resolver> = {
  async bar(_s, args, ctx) {
    const bar = await ctx.data.bar(String(args.id));
    if (!bar) throw notFound(`Could not resolve to a Bar with the id '${String(args.id)}'`);
    return bar;
  },

  async bars(_s, args, ctx, info) {
    const w = windowOf(args);
    const ids = args.ids as string[] | null | undefined;
    if (ids) {
      if (ids.length > MAX_IDS) throw userError(`ids must have at most ${MAX_IDS} entries`);
      if (ids.some((id) => id.trim() === '')) throw userError('ids must not contain empty entries');
    }
    const category = nonEmpty('category', args.category);
    const near = args.near as { latitude: number; longitude: number; radiusMiles?: number | null } | null;
    const box = args.box as {
      corner1: { latitude: number; longitude: number };
      corner2: { latitude: number; longitude: number };
    } | null;
    if (near) {
      checkNumber('near.latitude', near.latitude, LATITUDE);
      checkNumber('near.longitude', near.longitude, LONGITUDE);
      if (near.radiusMiles != null) checkNumber('near.radiusMiles', near.radiusMiles, RADIUS);
      if (near.radiusMiles != null && box) throw userError('near.radiusMiles cannot be combined with box');
    }
    if (box) {
      for (const c of ['corner1', 'corner2'] as const) {
        checkNumber(`box.${c}.latitude`, box[c].latitude, LATITUDE);
        checkNumber(`box.${c}.longitude`, box[c].longitude, LONGITUDE);
      }
    }
    const f = filtersOf(args.filters);
    if (w.offset >= BARS_CAP) return connection([], w, 0, false);
    // the list ends at GET bars' 250; totalCount asks for all of them, otherwise one more than the window
    const limit = selectsTotalCount(info) ? BARS_CAP : Math.min(BARS_CAP, w.offset + w.first + 1);
    const body = await ctx.data.call(CALLS.bars, {
      ids: ids ?? null,
      category,
      latitude: near?.latitude ?? null,
      longitude: near?.longitude ?? null,
      radius: near?.radiusMiles ?? null,
      corner1_latitude: box?.corner1.latitude ?? null,
      corner1_longitude: box?.corner1.longitude ?? null,
      corner2_latitude: box?.corner2.latitude ?? null,
      corner2_longitude: box?.corner2.longitude ?? null,
      limit,
      ...barFilterArgs(f),
    });
    const all = ((body?.bars as Json[] | undefined) ?? []).slice(0, BARS_CAP);
    const items = all.slice(w.offset, w.offset + w.first);
    return connection(items, w, all.length, w.offset + items.length < all.length);
  },

  async city(_s, args, ctx) {
    const body = await ctx.data.call(CALLS.groups, { state: args.state, city: args.name });
    if (!body) throw notFound(`Could not resolve to a City '${String(args.state)}/${String(args.name)}'`);
    return body.city;
  },

  async events(_s, args, ctx) {
    const w = windowOf(args);
    const values = {
      state: args.state,
      city: args.city,
      start_date: dateOf('startDate', args.startDate),
      end_date: dateOf('endDate', args.endDate),
      classification: args.classification ?? null,
      group_slug: nonEmpty('groupSlug', args.groupSlug),
    };
    const p = await pagedWindow(w, async (pg, perPage) =>
      page(await ctx.data.call(CALLS.events, { ...values, page: pg, per_page: perPage }), 'events'),
    );
    if (!p) throw notFound('City not found');
    return connection(p.items, w, p.total);
  },

  async posts(_s, args, ctx) {
    const w = windowOf(args);
    const values = {
      state: args.state,
      city: args.city,
      start_date: dateOf('startDate', args.startDate),
      end_date: dateOf('endDate', args.endDate),
      group_slug: nonEmpty('groupSlug', args.groupSlug),
    };
    const p = await pagedWindow(w, async (pg, perPage) =>
      page(await ctx.data.call(CALLS.posts, { ...values, page: pg, per_page: perPage }), 'posts'),
    );
    if (!p) throw notFound('City not found');
    return connection(p.items, w, p.total);
  },

  async feed(_s, args, ctx) {
    const body = await ctx.data.call(CALLS.feed, { state: args.state, city: args.city, page: 1, per_page: 1 });
    if (!body) throw notFound('City not found');
    return { city: body.city, state: args.state, name: args.city };
  },

  async search(_s, args, ctx) {
    const w = windowOf(args);
    const q = checkText('q', args.q);
    const near = args.near as { latitude: number; longitude: number } | null;
    if (near) {
      checkNumber('near.latitude', near.latitude, LATITUDE);
      checkNumber('near.longitude', near.longitude, LONGITUDE);
    }
    if (w.offset >= SEARCH_CAP) return connection([], w, 0, false);
    const p = await pagedWindow(w, async (pg, perPage) =>
      (pg - 1) * perPage >= SEARCH_CAP
        ? { items: [], total: 0 }
        : page(
            await ctx.data.call(CALLS.search, {
              q,
              latitude: near?.latitude ?? null,
              longitude: near?.longitude ?? null,
              page: pg,
              per_page: perPage,
              type: args.type ?? null,
            }),
            'results',
          ),
    );
    const items = p!.items.slice(0, SEARCH_CAP - w.offset);
    return connection(items, w, p!.total, w.offset + items.length < Math.min(p!.total, SEARCH_CAP));
  },

  async categories(_s, args, ctx) {
    const w = windowOf(args);
    const body = await ctx.data.call(CALLS.categories, {});
    return sliceConnection((body?.categories as Json[]) ?? [], w);
  },

  async cities(_s, args, ctx) {
    const w = windowOf(args);
    const state = args.state == null ? null : String(args.state);
    if (state !== null && !/^[A-Za-z]{2}$/.test(state))
      throw userError('state must be a two-letter state abbreviation');
    const q = args.q == null ? null : checkText('q', args.q);
    const p = await pagedWindow(w, async (pg, perPage) =>
      page(await ctx.data.call(CALLS.cities, { state, q, page: pg, per_page: perPage }), 'cities'),
    );
    return connection(p!.items, w, p!.total);
  },

  rateLimit(_s, _a, ctx) {
    return ctx.rateLimit();
  },
};

const Bar: Record<string, Resolver> = {
  id: (bar) => String(bar.id),
  name: barField('name'),
  address: barField('address'),
  city(bar, _a, ctx) {
    return whenReady(barValue(bar, 'city', ctx), (name) =>
      whenReady(barValue(bar, 'state', ctx), (state) => ({ name, state })),
    );
  },
  state: barField('state'),
  zipCode: barField('zip_code'),
  latitude: barField('latitude'),
  longitude: barField('longitude'),
  phone: barField('phone'),
  website: barField('website'),
  googleRating: barField('google_rating'),
  googleRatingsTotal: barField('google_ratings_total'),
  primaryCategory: barField('primary_category'),
  categories(bar, args, ctx) {
    return whenReady(barValue(bar, 'categories', ctx), (c) => sliceConnection((c as Json[]) ?? [], windowOf(args)));
  },
  hours: barField('hours'),
  profilePictureUrl: barField('profile_picture_url'),
  photos(bar, args, ctx) {
    return whenReady(barValue(bar, 'photos', ctx), (p) => sliceConnection((p as Json[]) ?? [], windowOf(args)));
  },
  occupancy(bar, _a, ctx) {
    return whenReady(barValue(bar, 'occupancy', ctx), (o) => ({ ...(o as Json), barId: String(bar.id) }));
  },
  description: barField('description'),
  priceLevel: barField('price_level'),
  events(bar, args, ctx) {
    const w = windowOf(args);
    return whenReady(barValue(bar, 'events', ctx), (events) =>
      sliceConnection(
        ((events as Json[] | null) ?? []).map((e) => eventNode(e, bar)),
        w,
      ),
    );
  },
  async posts(bar, args, ctx) {
    const w = windowOf(args);
    const body = await ctx.data.call(CALLS.graphqlBarPosts, {
      bar_id: String(bar.id),
      limit: w.first,
      offset: w.offset,
    });
    if (!body) return connection([], w, 0);
    return connection(body.posts as Json[], w, body.total_count as number);
  },
};

const Category: Record<string, Resolver> = {
  barCount: (c) => c.bar_count ?? null,
};

const Occupancy: Record<string, Resolver> = {
  currentIntensity: (o) => o.current_intensity,
  hourly(o, _a, ctx) {
    if (o.hourly_data) return o.hourly_data;
    return ctx.data
      .barDetail(String(o.barId))
      .then((detail) => (detail?.occupancy as Json | undefined)?.hourly_data ?? []);
  },
};

const City: Record<string, Resolver> = {
  async bars(city, args, ctx) {
    const w = windowOf(args);
    const f = filtersOf(args.filters);
    const group = nonEmpty('groupSlug', args.groupSlug);
    const { state, city: name } = cityValues(city);
    const p = await barsByCityPage(ctx, { state, name }, group, f, w);
    if (!p) throw notFound('City not found');
    return connection(p.items, w, p.total);
  },
  async busiestBars(city, args, ctx) {
    const w = windowOf(args);
    const listing = await cityHighlights(ctx, city, 0);
    const busiest = ((listing?.busiest_bars as Json[] | undefined) ?? []).map((b) => ({
      currentIntensity: b.current_intensity,
      bar: { id: b.id, name: b.name },
    }));
    return sliceConnection(busiest, w);
  },
  async eventsToday(city, args, ctx) {
    const w = windowOf(args);
    const listing = await cityHighlights(ctx, city, w.offset + w.first);
    const events = (listing?.events_today as Json[] | undefined) ?? [];
    return connection(events.slice(w.offset), w, (listing?.events_today_total as number | undefined) ?? 0);
  },
  async groups(city, args, ctx) {
    const w = windowOf(args);
    const body = await ctx.data.call(CALLS.groups, cityValues(city));
    return sliceConnection(
      ((body?.groups as Json[] | undefined) ?? []).map((g) => ({ ...g, barCount: g.bar_count })),
      w,
    );
  },
};

const Event: Record<string, Resolver> = {
  id: (e) => String(e.id),
  title: (e) => e.title ?? e.name,
  name: (e) => e.name ?? e.title,
  // the short forms (a bar's detail, events today, the feed) lack these: GET events' full form has them
  classification: (e, _a, ctx) =>
    e.classification ?? ctx.data.eventFull(String(e.id)).then((full) => full?.classification ?? null),
  startAt: (e) => e.start_at,
  endAt: (e) => e.end_at,
  createdAt: (e, _a, ctx) => e.created_at ?? ctx.data.eventFull(String(e.id)).then((full) => full?.created_at ?? null),
};

const Post: Record<string, Resolver> = {
  id: (p) => String(p.id),
  text: (p) => p.text ?? p.content,
  content: (p) => p.content ?? p.text,
  createdAt: (p) => p.created_at,
  user: (p) => p.user ?? null,
  media: (p) => p.media ?? null,
};

const Feed: Record<string, Resolver> = {
  async posts(feed, args, ctx) {
    const w = windowOf(args);
    const p = await pagedWindow(w, async (pg, perPage) =>
      page(
        await ctx.data.call(CALLS.feed, { state: feed.state, city: feed.name, page: pg, per_page: perPage }),
        'posts',
        'posts_pagination',
      ),
    );
    return connection(p!.items, w, p!.total);
  },
  async events(feed, args, ctx) {
    const w = windowOf(args);
    const p = await pagedWindow(w, async (pg, perPage) =>
      page(
        await ctx.data.call(CALLS.feed, { state: feed.state, city: feed.name, page: pg, per_page: perPage }),
        'events',
        'events_pagination',
      ),
    );
    return connection(p!.items, w, p!.total);
  },
};

const SearchResult: Record<string, Resolver> = {
  id: (r) => String(r.id),
  latitude: (r) => (r.location as { coordinates: number[] }).coordinates[1] ?? null,
  longitude: (r) => (r.location as { coordinates: number[] }).coordinates[0] ?? null,
  address: (r) => r.address ?? null,
  state: (r) => r.state ?? null,
  priceLevel: (r) => r.price_level ?? null,
  distance: (r) => r.distance ?? null,
  imageUrl: (r) => r.image_url ?? null,
  bar: (r) => (r.type === 'bar' ? { id: r.id, name: r.name } : null),
};

const resolvers: Record<string, Record<string, Resolver>> = {
  Query,
  Bar,
  Category,
  Occupancy,
  City,
  Event,
  Post,
  Feed,
  SearchResult,
};

/**
 * A field's resolver run as a grafast step instead of grafast's emulation of
 * graphql-js resolvers: no resolve info is built per call, a plain value (the
 * common case: the field is in the object at hand) is taken as it is, and the
 * fields below one without a resolver of their own (a bar's hours, a
 * connection's nodes, ...) are read as plain properties, where emulation runs
 * an emulated default resolver for each. The one-bar query's execution took
 * a third less CPU (docs/performance/2026-11-27-v1.3.md, machine P).
 */
class ResolverStep extends UnbatchedStep {
  override isSyncAndSafe = false; // a resolver may return a promise or throw
  private readonly root: boolean;

  constructor(
    private readonly resolver: Resolver,
    $source: Step | null,
    $args: Step,
  ) {
    super();
    this.root = $source === null;
    if ($source) this.addDependency($source);
    this.addDependency($args);
    this.addUnaryDependency(context());
  }

  override unbatchedExecute(_extra: UnbatchedExecutionExtra, ...values: unknown[]): unknown {
    if (this.root) return this.resolver(undefined as never, values[0] as Args, values[1] as GraphqlContext, NO_INFO);
    const [source, args, ctx] = values;
    if (source == null) return null; // under a null parent (as graphql-js, which never calls it)
    return this.resolver(source as Json, args as Args, ctx as GraphqlContext, NO_INFO);
  }
}
/** Only Query.bars reads the resolve info; it stays an emulated resolver (RESOLVERS_READING_INFO). */
const NO_INFO = undefined as unknown as GraphQLResolveInfo;
const RESOLVERS_READING_INFO = new Set([Query.bars]);

/** The schema; `deprecations` (default: endpoints.ts DEPRECATIONS) mark their `graphql` targets @deprecated. */
export function makePartnerSchema(deprecations: readonly Deprecation[] = DEPRECATIONS): GraphQLSchema {
  const objects: Record<string, { plans: Record<string, FieldPlanResolver | { resolve: Resolver }> }> = {};
  for (const [type, fields] of Object.entries(resolvers)) {
    objects[type] = { plans: {} };
    for (const [field, resolve] of Object.entries(fields))
      objects[type].plans[field] = RESOLVERS_READING_INFO.has(resolve)
        ? { resolve }
        : ($source, fieldArgs) => new ResolverStep(resolve, type === 'Query' ? null : $source, fieldArgs.getRaw());
  }
  return makeGrafastSchema({ typeDefs: deprecateSdl(TYPE_DEFS, deprecations), objects });
}
