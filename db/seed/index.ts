/**
 * The demo data generator: real US cities, bars around their centres, hours,
 * occupancy, events, users, posts and groups, deterministic for a seed and a
 * scale. The work happens in PostgreSQL (see sql.ts) inside one transaction:
 * a failed run leaves the database as it was.
 */
import pg from 'pg';
import { selectCities, zipArea } from './cities';
import { hoursTemplates, profileVariants, weeklyProfile, type HoursTemplate } from './hours';
import * as sql from './sql';
import { acts, categories, eventKinds, groups, words, type HoursKind, type HoursMix } from './vocabulary';

export interface SeedOptions {
  bars: number;
  /** Same seed and bars: same data. Default 1. */
  seed?: number;
  onProgress?: (message: string) => void;
  /** Replace existing bar data instead of refusing. */
  reset?: boolean;
  /** Time the relative dates are anchored to (truncated to the hour). Default: now. */
  now?: Date;
}

export const maxBars = 10_000_000;

/** The database already holds bar data and no reset was asked for. */
export class SeedRefusedError extends Error {
  override name = 'SeedRefusedError';
}

/** Every table the generator fills, children first (the order TRUNCATE and the load use). */
export const barDataTables = [
  'post_media',
  'posts',
  'users',
  'events',
  'occupancy',
  'photos',
  'opening_hours',
  'bar_groups',
  'groups',
  'bar_categories',
  'bars',
  'categories',
  'cities',
];

/** Tables derived from the bar data that the load fills (private.bar_live_rebuild). */
const derivedTables = ['bar_live', 'bar_open_slots'];

export async function seedDemoData(databaseUrl: string, options: SeedOptions): Promise<void> {
  const { bars } = options;
  const seed = options.seed ?? 1;
  if (!Number.isInteger(bars) || bars < 1 || bars > maxBars)
    throw new RangeError(`bars must be an integer from 1 to ${maxBars}, got ${bars}`);
  if (!Number.isInteger(seed) || seed < 0 || seed > 2 ** 31 - 1)
    throw new RangeError(`seed must be an integer from 0 to ${2 ** 31 - 1}, got ${seed}`);
  const anchor = new Date(options.now ?? Date.now());
  anchor.setUTCMinutes(0, 0, 0);
  const progress = progressReporter(options.onProgress);

  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'demo-seed' });
  await client.connect();
  try {
    await client.query('begin');
    // Bulk work: no statement timeout from the role's defaults, memory for sorts and index builds.
    await client.query(
      "set local statement_timeout = 0; set local work_mem = '256MB'; set local maintenance_work_mem = '512MB'; set local jit = off",
    );
    // The load's bar documents are built once at the end (not by their triggers per statement).
    await client.query("select set_config('private.defer_bar_documents', 'on', true)");
    // Likewise the search structure (db/migrations/functions/27-search-terms.sql): built once after the load.
    await client.query("select set_config('private.defer_search', 'on', true)");
    // And bar_live with the open slots (db/migrations/functions/11-bar-live.sql): one insert per table
    // after the load, not an insert by the bars and an update by each of opening_hours and occupancy.
    await client.query("select set_config('private.defer_bar_live', 'on', true)");
    await client.query(`lock table ${barDataTables.map((t) => `private.${t}`).join(', ')} in exclusive mode`);
    await refuseOrReset(client, options.reset ?? false, progress);

    for (const statement of sql.helperFunctions(seed, anchor.toISOString(), userCount(bars)))
      await client.query(statement);
    await stage(client, bars);
    progress.phase('prepare');

    const restore = await dropBulkLoadObstacles(client);
    await progress.run('cities', () => client.query(sql.cities));
    await progress.run('categories', () => client.query(sql.categories));
    await progress.run('bar choices', () => client.query(sql.seedBars));
    await client.query('analyze seed_bars');
    await progress.run('bars', () => client.query(sql.bars));
    await progress.run('bar_categories', () => client.query(sql.barCategories));
    await progress.run('opening_hours', () => client.query(sql.openingHours));
    await progress.run('occupancy', () => client.query(sql.occupancy));
    await progress.run('photos', () => client.query(sql.photos));
    await progress.run('events', () => client.query(sql.events));
    await progress.run('users', () => client.query(sql.users));
    await progress.run('posts', () => client.query(sql.posts));
    await progress.run('post_media', () => client.query(sql.postMedia));
    await progress.run('groups', () => client.query(sql.groups));
    await progress.run('bar_groups', () => client.query(sql.barGroups));
    await client.query(sql.dropEmptyGroups);
    // before their indexes are back: one build each instead of a million insertions
    await progress.run(
      'bar_live and open slots',
      () =>
        client.query(`do $$ begin
        if to_regprocedure('private.bar_live_rebuild()') is not null then perform private.bar_live_rebuild(); end if;
      end $$`),
      countOf(client, 'private.bar_live'),
    );
    for (const statement of restore) await client.query(statement);
    progress.phase(`indexes and foreign keys (${restore.length})`);
    // Bar documents (db/migrations/functions/10-bar-documents.sql): their triggers were deferred for
    // the load; one set-based build now, after the indexes it probes are back.
    await progress.run(
      'bar documents',
      () =>
        client.query(`do $$ begin
        if to_regprocedure('private.bar_documents_rebuild()') is not null then perform private.bar_documents_rebuild(); end if;
        if to_regprocedure('private.bar_next_events_rebuild()') is not null then perform private.bar_next_events_rebuild(); end if;
      end $$`),
      countOf(client, 'private.bar_documents'),
    );
    await progress.run(
      'search terms',
      () =>
        client.query(`do $$ begin
        if to_regprocedure('private.search_rebuild()') is not null then perform private.search_rebuild(); end if;
      end $$`),
      countOf(client, 'private.search_terms'),
    );
    for (const table of sql.identityTables) await client.query(sql.syncIdentity(table));
    await client.query('commit');
    progress.phase('commit');
  } catch (e) {
    await client.query('rollback').catch(() => undefined);
    throw e;
  } finally {
    await client.end().catch(() => undefined);
  }

  const analyzer = new pg.Client({ connectionString: databaseUrl, application_name: 'demo-seed' });
  await analyzer.connect();
  try {
    await analyzer.query(`analyze ${[...barDataTables, ...derivedTables].map((t) => `private.${t}`).join(', ')}`);
  } finally {
    await analyzer.end().catch(() => undefined);
  }
  progress.phase('analyze');
  progress.done(bars);
}

/** About one user for every four bars (each posting ~40 times over the 60 days). */
export function userCount(bars: number): number {
  return Math.max(50, Math.round(bars / 4));
}

async function refuseOrReset(client: pg.Client, reset: boolean, progress: ProgressReporter): Promise<void> {
  const { rows } = await client.query<{ bars: number; other: boolean }>(`
    select (select count(*)::integer from private.bars) as bars,
           exists (select from private.cities) or exists (select from private.categories)
             or exists (select from private.users) as other`);
  const { bars, other } = rows[0]!;
  if (bars === 0 && !other) return;
  if (!reset) {
    throw new SeedRefusedError(
      bars > 0
        ? `the database already has ${bars} bars; run the seed with --reset to replace all bar data`
        : 'the database already has bar data (cities, categories or users); run the seed with --reset to replace it',
    );
  }
  await client.query(`truncate ${barDataTables.map((t) => `private.${t}`).join(', ')} restart identity`);
  progress.phase(`reset (removed ${bars} bars)`);
}

/**
 * A category's templates as the list the SQL draws one from uniformly: each kind of hours takes its
 * share of the list (HoursMix), spread evenly over that kind's templates.
 */
export function templateLottery(mix: HoursMix, templateIds: (kind: HoursKind) => number[]): number[] {
  const size = 1200;
  return Object.entries(mix).flatMap(([kind, share]) => {
    const ids = templateIds(kind as HoursKind);
    if (ids.length === 0) throw new Error(`no hours templates of kind ${kind}`);
    const each = Math.max(1, Math.round(((share ?? 0) * size) / 100 / ids.length));
    return ids.flatMap((id) => Array<number>(each).fill(id));
  });
}

/** Fills the temp tables the SQL draws from: cities with their bar ranges, categories, hours, profiles, words. */
async function stage(client: pg.Client, bars: number): Promise<void> {
  let next = 1;
  const cities = selectCities(bars).map((c, i) => {
    const row = {
      no: i + 1,
      name: c.name,
      state: c.state,
      time_zone: c.timeZone,
      latitude: c.latitude,
      longitude: c.longitude,
      population: c.population,
      bars: c.bars,
      first_bar: next,
      zip_digit: zipArea(c.state),
    };
    next += c.bars;
    return row;
  });
  const templates = hoursTemplates();
  const templateIds = (kind: HoursTemplate['kind']) => templates.filter((t) => t.kind === kind).map((t) => t.id);
  const categoryNo = (slug: string) => {
    const i = categories.findIndex((c) => c.slug === slug);
    if (i < 0) throw new Error(`unknown category ${slug}`);
    return i + 1;
  };
  const hhmm = (hour: number) => `${String(hour).padStart(2, '0')}:00`;
  const lottery = (weights: number[]) => weights.flatMap((w, i) => Array<number>(w).fill(i + 1));

  const payloads: [string, unknown][] = [
    [sql.stagingTables.cities, cities],
    [
      sql.stagingTables.categories,
      categories.map((c, i) => ({
        no: i + 1,
        slug: c.slug,
        name: c.name,
        noun: c.noun,
        price: c.price,
        name_words: c.nameWords,
        templates: templateLottery(c.hours, templateIds),
      })),
    ],
    [
      sql.stagingTables.hours,
      templates.flatMap((t) =>
        t.slots.map((s) => ({ template: t.id, day: s.day, opens: hhmm(s.opens), closes: hhmm(s.closes) })),
      ),
    ],
    [sql.stagingTables.templates, templates.map((t) => ({ template: t.id, late: t.late }))],
    [
      sql.stagingTables.profiles,
      templates.flatMap((t) =>
        profileVariants.map((v, i) => ({ template: t.id, variant: i + 1, profile: weeklyProfile(t, v) })),
      ),
    ],
    [
      sql.stagingTables.kinds,
      eventKinds.map((k, i) => ({
        no: i + 1,
        classification: k.classification,
        titles: k.titles,
        descriptions: k.descriptions,
        start_minute: k.startMinute,
        start_steps: k.startSteps,
        min_minutes: k.minMinutes,
        duration_steps: k.durationSteps,
      })),
    ],
    [
      sql.stagingTables.groups,
      groups.map((g, i) => ({
        no: i + 1,
        slug: g.slug,
        name: g.name,
        min_bars: g.minBars,
        rule: g.rule,
        size: g.size,
        category_nos: (g.categories ?? []).map(categoryNo),
      })),
    ],
  ];
  for (const [statement, payload] of payloads) await client.query(statement, [JSON.stringify(payload)]);

  const lists: [string, unknown[], 'text[]' | 'integer[]'][] = [
    ...Object.entries({ ...words, act_first: acts.first, act_second: acts.second, djs: acts.djs }).map(
      ([name, list]): [string, unknown[], 'text[]'] => [snakeCase(name), list, 'text[]'],
    ),
    ['category_lottery', lottery(categories.map((c) => c.weight)), 'integer[]'],
    ['kind_lottery', lottery(eventKinds.map((k) => k.weight)), 'integer[]'],
  ];
  for (const [name, list, type] of lists) {
    const { rows } = await client.query<{ ddl: string }>(sql.constantFunction, [name, JSON.stringify(list), type]);
    await client.query(rows[0]!.ddl);
  }
  await client.query(
    `create function pg_temp.profile_variants() returns integer language sql immutable as 'select ${profileVariants.length}'`,
  );
}

const snakeCase = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Drops the secondary indexes and the foreign keys of the bar-data tables and
 * returns the statements that put them back exactly as they were (their own
 * definitions, read from the catalog). Building an index once over loaded
 * rows, and checking a foreign key with one join, beats maintaining them row
 * by row; the transaction keeps this invisible to everyone else.
 */
async function dropBulkLoadObstacles(client: pg.Client): Promise<string[]> {
  const tables = [...barDataTables, ...derivedTables].map((t) => `private.${t}`);
  const { rows: fks } = await client.query<{ drop: string; restore: string }>(
    `
    select format('alter table %s drop constraint %I', conrelid::regclass, conname) as drop,
           format('alter table %s add constraint %I %s', conrelid::regclass, conname, pg_get_constraintdef(oid)) as restore
    from pg_constraint
    where contype = 'f' and conrelid = any ($1::regclass[])
    order by conrelid::regclass::text, conname`,
    [tables],
  );
  const { rows: indexes } = await client.query<{ drop: string; restore: string }>(
    `
    select format('drop index %s', i.indexrelid::regclass) as drop, pg_get_indexdef(i.indexrelid) as restore
    from pg_index i
    where i.indrelid = any ($1::regclass[])
      and not exists (select from pg_constraint c where c.conindid = i.indexrelid)
    order by i.indexrelid::regclass::text`,
    [tables],
  );
  for (const { drop } of [...fks, ...indexes]) await client.query(drop);
  return [...indexes, ...fks].map((r) => r.restore);
}

/** The rows of a table a DO block filled (one of ours, named by a constant), counted in the load's transaction. */
function countOf(client: pg.Client, table: string): () => Promise<number> {
  return async () => (await client.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]!.n;
}

interface ProgressReporter {
  /** Runs one step and reports its rows: the statement's row count, or `rows()` for a DO block (it has none). */
  run(phase: string, work: () => Promise<pg.QueryResult>, rows?: () => Promise<number>): Promise<void>;
  phase(name: string): void;
  done(bars: number): void;
}

function progressReporter(onProgress: ((message: string) => void) | undefined): ProgressReporter {
  const start = Date.now();
  let last = start;
  const seconds = (ms: number) => (ms / 1000).toFixed(1);
  const report = (text: string) => {
    const now = Date.now();
    onProgress?.(`seed: ${text} in ${seconds(now - last)} s (elapsed ${seconds(now - start)} s)`);
    last = now;
  };
  return {
    async run(phase, work, rows) {
      const result = await work();
      const n = rows ? await rows() : (result.rowCount ?? 0);
      report(`${phase}: ${n.toLocaleString('en-US')} rows`);
    },
    phase: (name) => report(name),
    done: (bars) =>
      onProgress?.(`seed: done, ${bars.toLocaleString('en-US')} bars in ${seconds(Date.now() - start)} s`),
  };
}
