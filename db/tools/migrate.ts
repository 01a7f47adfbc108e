import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { Logger, migrate, watch, type Settings } from 'graphile-migrate';
import { Logger as WorkerLogger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import { projectRoot } from '../../server/config';

// graphile-migrate keeps its pool for 200 ms after use, and exits the process
// if that pool sees an error (e.g. the embedded server stopping right after a
// migration); release it as soon as we are done.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { clearAllPools } = require('graphile-migrate/dist/pgReal') as { clearAllPools(): void };

export interface MigrateOptions {
  /** Also run db/migrations/current (development and tests; production runs committed migrations only). */
  includeCurrent?: boolean;
  /** Print graphile-migrate's progress (it is quiet otherwise: the admin CLI keeps stdout for JSON). */
  verbose?: boolean;
  /** Re-apply the function files even when their checksum says they are applied already. */
  forceFunctions?: boolean;
}

export const migrationsFolder = path.join(projectRoot, 'db', 'migrations');
/** Repeatable files: the current source of every function (db/CONVENTIONS.md). */
export const functionsFolder = path.join(migrationsFolder, 'functions');

// Only warnings and errors, and on stderr.
const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') process.stderr.write(`${message}\n`);
});

const workerLogger = new WorkerLogger(() => (level, message) => {
  if (level === 'error' || level === 'warning') process.stderr.write(`${message}\n`);
});

export function migrationSettings(connectionString: string, verbose = false): Settings {
  return {
    connectionString,
    migrationsFolder,
    manageGraphileMigrateSchema: true,
    ...(verbose ? {} : { logger: quietLogger }),
  };
}

/**
 * Brings the database to the latest committed migration (then `current/` when
 * asked), then applies the function files. Several instances may start at
 * once: graphile-migrate's own lock is a try-lock, so a second migrator waits
 * for the first instead of failing.
 */
export async function migrateDatabase(connectionString: string, options: MigrateOptions = {}): Promise<void> {
  const settings = migrationSettings(connectionString, options.verbose ?? false);
  try {
    await whileLocked(() => migrate(settings));
    if (options.includeCurrent) await whileLocked(() => watch(settings, true));
  } finally {
    clearAllPools();
  }
  // The webhook queue's schema (graphile_worker): function files call graphile_worker.add_job.
  await runWorkerMigrations({ connectionString, logger: workerLogger });
  const applied = await applyFunctionFiles(connectionString, { force: options.forceFunctions });
  if (options.verbose) {
    process.stderr.write(applied ? `function files: applied ${applied} files\n` : 'function files: up to date\n');
  }
}

async function whileLocked(run: () => Promise<void>, deadline = Date.now() + 120_000): Promise<void> {
  for (;;) {
    try {
      return await run();
    } catch (e) {
      if (!/Failed to get exclusive lock/.test((e as Error).message) || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 250 + Math.random() * 250));
    }
  }
}

export interface FunctionFile {
  name: string;
  sql: string;
}

/** The function files in the order they are applied (by name: NN-family.sql). */
export function readFunctionFiles(folder = functionsFolder): FunctionFile[] {
  if (!fs.existsSync(folder)) return [];
  return fs
    .readdirSync(folder)
    .filter((f) => /^\d+-[\w-]+\.sql$/.test(f))
    .sort()
    .map((name) => ({ name, sql: fs.readFileSync(path.join(folder, name), 'utf8') }));
}

export function functionFilesChecksum(files: FunctionFile[]): string {
  const hash = createHash('sha256');
  for (const f of files) hash.update(`${f.name}\0${f.sql}\0`);
  return hash.digest('hex');
}

// Any 64-bit number unique to this job; graphile-migrate uses another.
const FUNCTION_FILES_LOCK = '7284652301938475';

/**
 * Applies every function file, in name order, in one transaction, unless the
 * database records the same checksum already (or `force`). Returns how many
 * files were applied (0: up to date).
 */
export async function applyFunctionFiles(
  connectionString: string,
  options: { force?: boolean; folder?: string } = {},
): Promise<number> {
  const files = readFunctionFiles(options.folder);
  if (files.length === 0) return 0;
  const checksum = functionFilesChecksum(files);
  const client = new pg.Client({ connectionString, application_name: 'migrate-functions' });
  await client.connect();
  try {
    await client.query('begin');
    await client.query('select pg_advisory_xact_lock($1)', [FUNCTION_FILES_LOCK]);
    await client.query(`create table if not exists private.function_files (
      singleton boolean primary key default true check (singleton),
      checksum text not null,
      files text[] not null,
      applied_at timestamptz not null default now())`);
    const { rows } = await client.query<{ checksum: string }>('select checksum from private.function_files');
    if (!options.force && rows[0]?.checksum === checksum) {
      await client.query('rollback');
      return 0;
    }
    for (const file of files) {
      try {
        await client.query(file.sql);
      } catch (e) {
        throw new Error(`db/migrations/functions/${file.name}: ${(e as Error).message}`, { cause: e });
      }
    }
    await client.query(
      `insert into private.function_files (checksum, files) values ($1, $2)
       on conflict (singleton) do update set checksum = excluded.checksum, files = excluded.files, applied_at = now()`,
      [checksum, files.map((f) => f.name)],
    );
    await client.query('commit');
    return files.length;
  } catch (e) {
    await client.query('rollback').catch(() => undefined);
    throw e;
  } finally {
    await client.end();
  }
}
