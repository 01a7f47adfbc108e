/**
 * The eight partner endpoints (partner-api-v1.md). Each route reads and checks
 * its parameters, calls its api.* function with bind parameters, and writes the
 * JSON text the database built as the body, untouched.
 */
import { Router, type Request, type Response } from 'express';
import { systemClock } from '../../clock';
import type { PartnerAppDeps } from '../deps';
import { sendCacheable } from '../caching';
import { E, expressPath, strictQuery, type Endpoint } from '../../contract/endpoints';
import { HttpError } from '../../contract/errors';
import { CALLS, apiSql, type ApiCall, type CallArgs } from '../../contract/calls';
import {
  CLASSIFICATIONS,
  LATITUDE,
  LONGITUDE,
  PAGE,
  PER_PAGE,
  QueryParams,
  badRequest,
  barFilters,
  position,
  BARS_LIMIT,
  RADIUS,
  MAX_IDS,
  MAX_Q,
  SEARCH_TYPES,
  SEARCH_CAP,
  barFilterArgs,
} from '../../contract/params';
import type { PartnerIdentity } from '../../contract/identity';
import { exportRoutes } from './export';
import { usageRoutes } from './usage';

export function partnerRoutes(deps: PartnerAppDeps): Router {
  const router = Router();
  const clock = deps.clock ?? systemClock;

  /** Runs one api function (SQL text is a constant) and sends its json, or 404 when it returns NULL. */
  async function respond<C extends ApiCall>(
    res: Response,
    c: C,
    args: CallArgs<C>,
    notFound = 'Not found',
  ): Promise<void> {
    const { text, values } = apiSql(c, args);
    const { rows } = await deps.pool.query<{ body: string | null }>(text, values);
    const body = rows[0]?.body;
    if (body == null) throw new HttpError(404, notFound);
    await sendCacheable(res.req, res, body);
  }
  /** GET route of a declared endpoint: unknown query parameters are a 400 before the handler runs. */
  const get = (e: Endpoint, handler: (req: Request, res: Response) => Promise<void>) =>
    router.get(expressPath(e), strictQuery(e), handler);

  const params = (req: Request) => new QueryParams(req.query);
  const city = (req: Request) => ({ state: req.params.state, city: req.params.city });
  const paging = (q: QueryParams) => ({ page: q.int('page', PAGE), per_page: q.int('per_page', PER_PAGE) });

  get(E.testEndpoint, async (_req, res) => {
    const partner = res.locals.partner as PartnerIdentity;
    await respond(res, CALLS.testEndpoint, {
      subscriber_id: partner.subscriberId,
      plan: partner.plan,
      now: clock(),
    });
  });

  get(E.bars, async (req, res) => {
    const q = params(req);
    const ids = barIds(q.string('ids'));
    const category = q.nonEmpty('category');
    const latitude = q.number('latitude', LATITUDE);
    const longitude = q.number('longitude', LONGITUDE);
    const radius = q.number('radius', RADIUS);
    const corners = [
      q.nestedNumber('corner1', 'latitude', LATITUDE),
      q.nestedNumber('corner1', 'longitude', LONGITUDE),
      q.nestedNumber('corner2', 'latitude', LATITUDE),
      q.nestedNumber('corner2', 'longitude', LONGITUDE),
    ];
    const limit = q.int('limit', BARS_LIMIT);
    const hasCenter = latitude !== undefined && longitude !== undefined;
    if (radius !== undefined && !hasCenter) throw badRequest('radius requires latitude and longitude');
    if ((latitude === undefined) !== (longitude === undefined))
      throw badRequest('latitude and longitude must be given together');
    const cornersGiven = corners.filter((c) => c !== undefined).length;
    if (cornersGiven > 0 && cornersGiven < 4) {
      throw badRequest(
        'a bounding box needs all of corner1[latitude], corner1[longitude], corner2[latitude] and corner2[longitude]',
      );
    }
    if (radius !== undefined && cornersGiven === 4)
      throw badRequest('radius cannot be combined with a bounding box (corner1, corner2)');
    const f = barFilters(q);
    await respond(res, CALLS.bars, {
      ids: ids ?? null,
      category: category ?? null,
      latitude: latitude ?? null,
      longitude: longitude ?? null,
      radius: radius ?? null,
      corner1_latitude: corners[0] ?? null,
      corner1_longitude: corners[1] ?? null,
      corner2_latitude: corners[2] ?? null,
      corner2_longitude: corners[3] ?? null,
      limit,
      ...barFilterArgs(f),
      now: clock(),
    });
  });

  get(E.bar, async (req, res) => {
    await respond(res, CALLS.bar, { id: req.params.id, now: clock() }, 'Bar not found');
  });

  get(E.barsByCity, async (req, res) => {
    const q = params(req);
    const groupSlug = q.nonEmpty('group_slug') ?? null;
    const f = barFilters(q);
    const args = {
      ...city(req),
      group_slug: groupSlug,
      ...paging(q),
      ...barFilterArgs(f),
      now: clock(),
    };
    await respond(res, CALLS.barsByCity, args, 'City not found');
  });

  get(E.events, async (req, res) => {
    const q = params(req);
    const args = {
      ...city(req),
      start_date: q.date('start_date') ?? null,
      end_date: q.date('end_date') ?? null,
      classification: q.oneOf('classification', CLASSIFICATIONS) ?? null,
      group_slug: q.nonEmpty('group_slug') ?? null,
      ...paging(q),
      now: clock(),
    };
    await respond(res, CALLS.events, args, 'City not found');
  });

  get(E.posts, async (req, res) => {
    const q = params(req);
    const args = {
      ...city(req),
      start_date: q.date('start_date') ?? null,
      end_date: q.date('end_date') ?? null,
      group_slug: q.nonEmpty('group_slug') ?? null,
      ...paging(q),
      now: clock(),
    };
    await respond(res, CALLS.posts, args, 'City not found');
  });

  get(E.feed, async (req, res) => {
    const q = params(req);
    await respond(res, CALLS.feed, { ...city(req), ...paging(q), now: clock() }, 'City not found');
  });

  get(E.categories, async (_req, res) => {
    await respond(res, CALLS.categories, {});
  });

  get(E.cities, async (req, res) => {
    const q = params(req);
    const state = q.string('state');
    if (state !== undefined && !/^[A-Za-z]{2}$/.test(state))
      throw badRequest('state must be a two-letter state abbreviation');
    const prefix = q.string('q');
    if (prefix !== undefined && prefix.trim() === '') throw badRequest('q must not be blank');
    if (prefix !== undefined && [...prefix].length > MAX_Q) throw badRequest(`q must be at most ${MAX_Q} characters`);
    await respond(res, CALLS.cities, { state: state ?? null, q: prefix ?? null, ...paging(q) });
  });

  get(E.groups, async (req, res) => {
    await respond(res, CALLS.groups, city(req), 'City not found');
  });

  get(E.search, async (req, res) => {
    const p = params(req);
    const q = p.string('q');
    if (q === undefined || q.trim() === '') throw badRequest('q is required and must not be blank');
    if ([...q].length > MAX_Q) throw badRequest(`q must be at most ${MAX_Q} characters`);
    const at = position(p);
    const type = p.oneOf('type', SEARCH_TYPES);
    const page = p.int('page', PAGE);
    const perPage = p.int('per_page', PER_PAGE);
    // decisions.md v1.1: the 1,000 best matches at most (api.search checks it too)
    if ((page - 1) * perPage >= SEARCH_CAP)
      throw badRequest('search results end at the 1,000th match; narrow q (or use GET bars filters)');
    await respond(res, CALLS.search, {
      q,
      latitude: at?.latitude ?? null,
      longitude: at?.longitude ?? null,
      page,
      per_page: perPage,
      type: type ?? null,
    });
  });

  router.use(exportRoutes(deps)); // GET export/bars, export/events (NDJSON streams)
  router.use(usageRoutes(deps)); // GET usage (counts against no bucket)

  return router;
}

/** `ids`: comma-separated, at most 100 entries; unknown ids are the database's business (skipped). */
function barIds(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const ids = raw.split(',').map((s) => s.trim());
  if (ids.some((id) => id === ''))
    throw badRequest('ids must be a comma-separated list of bar ids without empty entries');
  if (ids.length > MAX_IDS) throw badRequest(`ids must have at most ${MAX_IDS} entries`);
  return ids;
}
