/**
 * `npm run db:migrate [-- --include-current] [--force-functions]`: bring DATABASE_URL's database (or the
 * embedded one) to the latest committed migration, then apply the function files (db/CONVENTIONS.md).
 * In development it then rewrites db/schema/ from the migrated database (when that database has
 * everything the description covers: current/ included, or current/ empty).
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../server/config';
import { locateDatabase } from '../../server/db/database';
import { migrateDatabase, migrationsFolder } from './migrate';
import { describeSchemas, writeSchemaFiles } from './schema-description';

function currentIsEmpty(): boolean {
  const folder = path.join(migrationsFolder, 'current');
  return !fs.existsSync(folder) || fs.readdirSync(folder).every((f) => !f.endsWith('.sql'));
}

async function run(): Promise<void> {
  const config = loadConfig();
  const db = await locateDatabase(config);
  const includeCurrent = process.argv.includes('--include-current');
  try {
    await migrateDatabase(db.url, {
      verbose: true,
      includeCurrent,
      forceFunctions: process.argv.includes('--force-functions'),
    });
    if (config.env === 'development') {
      if (includeCurrent || currentIsEmpty()) {
        try {
          const changed = writeSchemaFiles(await describeSchemas(db.url));
          process.stderr.write(
            changed.length ? `db/schema: rewrote ${changed.join(', ')}\n` : 'db/schema: unchanged\n',
          );
        } catch (e) {
          // the database is migrated; only the description could not be written (e.g. a read-only checkout)
          process.stderr.write(`db/schema: not rewritten: ${(e as Error).message}\n`);
        }
      } else {
        process.stderr.write('db/schema: not rewritten (current/ not included); `npm run db:schema` rebuilds it\n');
      }
    }
  } finally {
    await db.stop();
  }
}

run().catch((e: Error) => {
  process.stderr.write(`error: ${e.message}\n`);
  process.exit(1);
});
