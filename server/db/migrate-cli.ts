/** `npm run db:migrate`: bring DATABASE_URL's database (or the embedded one) to the latest committed migration. */
import { loadConfig } from '../config';
import { locateDatabase } from './database';
import { migrateDatabase } from './migrate';

async function run(): Promise<void> {
  const db = await locateDatabase(loadConfig());
  try {
    await migrateDatabase(db.url, { verbose: true, includeCurrent: process.argv.includes('--include-current') });
  } finally {
    await db.stop();
  }
}

run().catch((e: Error) => {
  process.stderr.write(`error: ${e.message}\n`);
  process.exit(1);
});
