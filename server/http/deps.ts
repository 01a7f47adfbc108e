/** What the partner HTTP application is built from (app.ts createPartnerApp; the routes read it too). */
import type { RequestHandler } from 'express';
import type { Clock } from '../clock';
import type { Config } from '../config';
import type { Deprecation } from '../contract/endpoints';
import type { Pool } from '../db/pools';
import type { Logger } from '../log';
import type { ChangelogEntry } from './changelog';
import type { ReadinessCheck } from './health';
import type { KnownRefusal } from './refused-shortcut';
import type { RequestLog } from '../usage/request-log';
import type { ExportOptions } from './routes/export';

export interface PartnerAppDeps {
  config: Pick<Config, 'env'> & Partial<Pick<Config, 'trustProxy' | 'refusalHold'>>;
  logger: Logger;
  /** Runs as the bar_partner role: may only EXECUTE api functions. */
  pool: Pool;
  /** Authentication and rate limiting for every partner path. */
  guard: RequestHandler[];
  /** The guard's answer for a key this process refuses (guard.knownRefusal): given first (refused-shortcut.ts). */
  knownRefusal?: KnownRefusal;
  /** GET /readyz checks (default: PostgreSQL on `pool`) and whether shutdown began. */
  health?: { checks?: ReadinessCheck[]; draining?: () => boolean };
  /** The GraphQL endpoint (beta; server/graphql/endpoint.ts): its own methods, body and guard order. */
  graphql?: RequestHandler;
  /** GET export/*: the pool (the primary), concurrent-export slots (Redis), batch size (routes/export.ts). */
  export?: ExportOptions;
  /** The request log (usage/request-log.ts): records answers on `finish` (the shortcut's once written), off the request's path. */
  requestLog?: Pick<RequestLog, 'middleware' | 'record'>;
  /** Alert e-mails' unsubscribe links: the signing key (default: EMAIL_LINK_KEY or the development key) and the primary. */
  email?: { linkKey?: Buffer; pool?: Pool };
  /** The instant answers are computed at (open now, events today, ...; default: the system clock). */
  clock?: Clock;
  /** Deprecations in force (default: endpoints.ts DEPRECATIONS) and the clock that judges them (tests inject both). */
  deprecations?: { list?: readonly Deprecation[]; now?: () => number };
  /** The changelog's entries (default: docs/changelog.yml). */
  changelog?: ChangelogEntry[];
}
