/**
 * The eight partner endpoints (partner-api-v1.md). Each route reads and checks
 * its parameters, calls its api.* function with bind parameters, and writes the
 * JSON text the database built as the body, untouched.
 */
import { Router, type Request, type Response } from 'express';
import { systemClock } from '../../clock';
import type { PartnerAppDeps } from '../app';
import { sendCacheable } from '../caching';
import { E, expressPath, strictQuery, type Endpoint } from '../endpoints';
import { HttpError } from '../errors';
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
} from '../params';
import type { PartnerIdentity } from '../partner';
import { exportRoutes } from './export';
import { usageRoutes } from './usage';

const BARS_LIMIT = { min: 1, max: 250, default: 100 };
const RADIUS = { min: 0, max: 100, minExclusive: true };
const MAX_IDS = 100;
const MAX_Q = 200;
const SEARCH_TYPES = ['bar', 'city'] as const;
const SEARCH_CAP = 1000;

export function partnerRoutes(deps: PartnerAppDeps): Router {
  const router = Router();
  const clock = deps.clock ?? systemClock;

  /** Runs one api function (SQL text is a constant) and sends its json, or 404 when it returns NULL. */
  async function respond(res: Response, sql: string, values: unknown[], notFound = 'Not found'): Promise<void> {
    const { rows } = await deps.pool.query<{ body: string | null }>(sql, values);
    const body = rows[0]?.body;
    if (body == null) throw new HttpError(404, notFound);
    await sendCacheable(res.req, res, body);
  }
  /** GET route of a declared endpoint: unknown query parameters are a 400 before the handler runs. */
  const get = (e: Endpoint, handler: (req: Request, res: Response) => Promise<void>) =>
    router.get(expressPath(e), strictQuery(e), handler);

  const params = (req: Request) => new QueryParams(req.query);
  const city = (req: Request) => [req.params.state, req.params.city];

  get(E.testEndpoint, async (_req, res) => {
    const partner = res.locals.partner as PartnerIdentity;
    await respond(res, 'select api.test_endpoint(p_subscriber_id => $1, p_plan => $2, p_now => $3)::text as body', [
      partner.subscriberId,
      partner.plan,
      clock(),
    ]);
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
    await respond(
      res,
      `select api.bars(p_ids => $1, p_category => $2, p_latitude => $3, p_longitude => $4, p_radius => $5,
        p_corner1_latitude => $6, p_corner1_longitude => $7, p_corner2_latitude => $8, p_corner2_longitude => $9,
        p_limit => $10, p_open_now => $11, p_open_at => $12, p_price_levels => $13, p_min_rating => $14,
        p_statuses => $15, p_now => $16)::text as body`,
      [
        ids ?? null,
        category ?? null,
        latitude ?? null,
        longitude ?? null,
        radius ?? null,
        ...corners.map((c) => c ?? null),
        limit,
        f.openNow,
        f.openAt,
        f.priceLevels,
        f.minRating,
        f.statuses,
        clock(),
      ],
    );
  });

  get(E.bar, async (req, res) => {
    await respond(
      res,
      'select api.bar(p_id => $1, p_now => $2)::text as body',
      [req.params.id, clock()],
      'Bar not found',
    );
  });

  get(E.barsByCity, async (req, res) => {
    const q = params(req);
    const groupSlug = q.nonEmpty('group_slug') ?? null;
    const f = barFilters(q);
    const values = [
      ...city(req),
      groupSlug,
      q.int('page', PAGE),
      q.int('per_page', PER_PAGE),
      f.openNow,
      f.openAt,
      f.priceLevels,
      f.minRating,
      f.statuses,
      clock(),
    ];
    await respond(
      res,
      `select api.bars_by_city(p_state => $1, p_city => $2, p_group_slug => $3,
        p_page => $4, p_per_page => $5, p_open_now => $6, p_open_at => $7, p_price_levels => $8,
        p_min_rating => $9, p_statuses => $10, p_now => $11)::text as body`,
      values,
      'City not found',
    );
  });

  get(E.events, async (req, res) => {
    const q = params(req);
    const values = [
      ...city(req),
      q.date('start_date') ?? null,
      q.date('end_date') ?? null,
      q.oneOf('classification', CLASSIFICATIONS) ?? null,
      q.nonEmpty('group_slug') ?? null,
      q.int('page', PAGE),
      q.int('per_page', PER_PAGE),
      clock(),
    ];
    await respond(
      res,
      `select api.events(p_state => $1, p_city => $2, p_start_date => $3, p_end_date => $4,
        p_classification => $5, p_group_slug => $6, p_page => $7, p_per_page => $8, p_now => $9)::text as body`,
      values,
      'City not found',
    );
  });

  get(E.posts, async (req, res) => {
    const q = params(req);
    const values = [
      ...city(req),
      q.date('start_date') ?? null,
      q.date('end_date') ?? null,
      q.nonEmpty('group_slug') ?? null,
      q.int('page', PAGE),
      q.int('per_page', PER_PAGE),
      clock(),
    ];
    await respond(
      res,
      `select api.posts(p_state => $1, p_city => $2, p_start_date => $3, p_end_date => $4,
        p_group_slug => $5, p_page => $6, p_per_page => $7, p_now => $8)::text as body`,
      values,
      'City not found',
    );
  });

  get(E.feed, async (req, res) => {
    const q = params(req);
    const values = [...city(req), q.int('page', PAGE), q.int('per_page', PER_PAGE), clock()];
    await respond(
      res,
      'select api.feed(p_state => $1, p_city => $2, p_page => $3, p_per_page => $4, p_now => $5)::text as body',
      values,
      'City not found',
    );
  });

  get(E.categories, async (_req, res) => {
    await respond(res, 'select api.categories()::text as body', []);
  });

  get(E.cities, async (req, res) => {
    const q = params(req);
    const state = q.string('state');
    if (state !== undefined && !/^[A-Za-z]{2}$/.test(state))
      throw badRequest('state must be a two-letter state abbreviation');
    const prefix = q.string('q');
    if (prefix !== undefined && prefix.trim() === '') throw badRequest('q must not be blank');
    if (prefix !== undefined && [...prefix].length > MAX_Q) throw badRequest(`q must be at most ${MAX_Q} characters`);
    await respond(res, 'select api.cities(p_state => $1, p_q => $2, p_page => $3, p_per_page => $4)::text as body', [
      state ?? null,
      prefix ?? null,
      q.int('page', PAGE),
      q.int('per_page', PER_PAGE),
    ]);
  });

  get(E.groups, async (req, res) => {
    await respond(res, 'select api.groups(p_state => $1, p_city => $2)::text as body', city(req), 'City not found');
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
    const values = [q, at?.latitude ?? null, at?.longitude ?? null, page, perPage, type ?? null];
    await respond(
      res,
      `select api.search(p_q => $1, p_latitude => $2, p_longitude => $3,
        p_page => $4, p_per_page => $5, p_type => $6)::text as body`,
      values,
    );
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
