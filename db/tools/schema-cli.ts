/**
 * `npm run db:schema`: regenerates db/schema/ from a scratch database migrated
 * from scratch (committed, current/, function files) on DATABASE_URL's server
 * or the embedded one, so the text does not depend on a development database's
 * history. `-- --check` only compares (exit 1 when a file is out of date).
 */
import fs from 'node:fs';
import { loadConfig } from '../../server/config';
import { locateDatabase } from '../../server/db/database';
import { createScratchDatabase } from './scratch-database';
import { describeSchemas, schemaFile, writeSchemaFiles } from './schema-description';

async function run(): Promise<number> {
  const check = process.argv.includes('--check');
  const db = await locateDatabase(loadConfig());
  try {
    const scratch = await createScratchDatabase(db.url, 'bars_schema');
    try {
      const texts = await describeSchemas(scratch.url);
      if (check) {
        const stale = Object.entries(texts).filter(
          ([s, t]) => !fs.existsSync(schemaFile(s)) || fs.readFileSync(schemaFile(s), 'utf8') !== t,
        );
        for (const [s] of stale) process.stderr.write(`db/schema/${s}.txt is out of date: run npm run db:schema\n`);
        return stale.length ? 1 : 0;
      }
      const changed = writeSchemaFiles(texts);
      process.stdout.write(changed.length ? `db:schema: wrote ${changed.join(', ')}\n` : 'db:schema: up to date\n');
      return 0;
    } finally {
      await scratch.drop();
    }
  } finally {
    await db.stop();
  }
}

run().then(
  (code) => process.exit(code),
  (e: Error) => {
    process.stderr.write(`db:schema: ${e.message}\n`);
    process.exit(1);
  },
);
