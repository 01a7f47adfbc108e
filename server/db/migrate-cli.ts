/**
 * `npm run db:migrate [-- --include-current] [--force-functions]`: bring DATABASE_URL's database (or the
 * embedded one) to the latest committed migration, then apply the function files (db/CONVENTIONS.md).
 */
import { loadConfig } from '../config';
import { locateDatabase } from './database';
import { migrateDatabase } from './migrate';

async function run(): Promise<void> {
  const db = await locateDatabase(loadConfig());
  try {
    await migrateDatabase(db.url, {
      verbose: true,
      includeCurrent: process.argv.includes('--include-current'),
      forceFunctions: process.argv.includes('--force-functions'),
    });
  } finally {
    await db.stop();
  }
}

run().catch((e: Error) => {
  process.stderr.write(`error: ${e.message}\n`);
  process.exit(1);
});
