/**
 * The partner endpoints (partner-api-v1.md). Each route is its declaration
 * (contract/endpoints.ts): the declared parameters read and checked by
 * `readArgs`, the api.* call of contract/calls.ts with bind parameters, and
 * the JSON text the database built written as the body, untouched.
 */
import { Router, type Request, type Response } from 'express';
import { systemClock } from '../../clock';
import type { PartnerAppDeps } from '../deps';
import { sendCacheable } from '../caching';
import { E, expressPath, strictQuery, type Endpoint } from '../../contract/endpoints';
import { readArgs } from '../../contract/declared-params';
import { HttpError } from '../../contract/errors';
import { CALLS, apiSql, takeRows, type PartnerCall } from '../../contract/calls';
import { partnerStatements } from '../../db/prepared-statements';
import type { PartnerIdentity } from '../../contract/identity';
import { exportRoutes } from './export';
import { usageRoutes } from './usage';

export function partnerRoutes(deps: PartnerAppDeps): Router {
  const router = Router();
  const clock = deps.clock ?? systemClock;

  /** The arguments the server supplies besides the request's (a call's `extras`). */
  const supplied: Record<string, (res: Response) => unknown> = {
    now: () => clock(),
    subscriber_id: (res) => (res.locals.partner as PartnerIdentity).subscriberId,
    plan: (res) => (res.locals.partner as PartnerIdentity).plan,
  };

  /** GET route of a declared endpoint: its checked parameters → its api function → its json, or its 404 when NULL. */
  const serve = (e: Endpoint, c: PartnerCall) => {
    if (c.endpoint !== e) throw new Error(`${c.fn} is not the call of ${e.path}`);
    const unknown = c.extras.filter((x) => !supplied[x]);
    if (unknown.length) throw new Error(`${c.fn}: no value for ${unknown.join(', ')}`);
    router.get(expressPath(e), strictQuery(e), async (req: Request, res: Response) => {
      const args = { ...readArgs(e, req), ...Object.fromEntries(c.extras.map((x) => [x, supplied[x]!(res)])) };
      const rows = takeRows(await deps.pool.query<{ body: string | null }>(partnerStatements.query(apiSql(c, args))));
      const body = rows[0]?.body;
      if (body == null) throw new HttpError(404, e.notFound ?? 'Not found');
      await sendCacheable(req, res, body, e.seldomRepeats?.(args) === true);
    });
  };

  serve(E.testEndpoint, CALLS.testEndpoint);
  serve(E.bars, CALLS.bars);
  serve(E.bar, CALLS.bar);
  serve(E.barsByCity, CALLS.barsByCity);
  serve(E.events, CALLS.events);
  serve(E.posts, CALLS.posts);
  serve(E.feed, CALLS.feed);
  serve(E.categories, CALLS.categories);
  serve(E.cities, CALLS.cities);
  serve(E.groups, CALLS.groups);
  serve(E.search, CALLS.search);

  router.use(exportRoutes(deps)); // GET export/bars, export/events (NDJSON streams)
  router.use(usageRoutes(deps)); // GET usage (counts against no bucket)

  return router;
}
