import path from 'node:path';
import { Logger, migrate, watch, type Settings } from 'graphile-migrate';
import { projectRoot } from '../config';

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
}

// Only warnings and errors, and on stderr.
const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') process.stderr.write(`${message}\n`);
});

export function migrationSettings(connectionString: string, verbose = false): Settings {
  return {
    connectionString,
    migrationsFolder: path.join(projectRoot, 'db', 'migrations'),
    manageGraphileMigrateSchema: true,
    ...(verbose ? {} : { logger: quietLogger }),
  };
}

/** Brings the database to the latest committed migration (a no-op when it is there). */
export async function migrateDatabase(connectionString: string, options: MigrateOptions = {}): Promise<void> {
  const settings = migrationSettings(connectionString, options.verbose ?? false);
  try {
    await migrate(settings);
    if (options.includeCurrent) await watch(settings, true);
  } finally {
    clearAllPools();
  }
}
