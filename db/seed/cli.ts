/**
 * `npm run db:seed -- --bars N [--seed S] [--reset]`: migrate DATABASE_URL's
 * database (or the embedded one), then fill it with demo data. Progress on stderr.
 */
import { loadConfig } from '../../server/config';
import { locateDatabase } from '../../server/db/database';
import { migrateDatabase } from '../tools/migrate';
import { parseSeedArgs, usage } from './args';
import { seedDemoData } from './index';

async function run(): Promise<void> {
  const config = loadConfig();
  let args;
  try {
    args = parseSeedArgs(process.argv.slice(2), config.demoBars);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${usage}`, { cause: e });
  }
  const db = await locateDatabase(config);
  try {
    await migrateDatabase(db.url);
    await seedDemoData(db.url, { ...args, onProgress: (message) => process.stderr.write(`${message}\n`) });
  } finally {
    await db.stop();
  }
}

run().catch((e: Error) => {
  process.stderr.write(`error: ${e.message}\n`);
  process.exit(1);
});
