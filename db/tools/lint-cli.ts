/**
 * `npm run db:lint`: migrates a throwaway database on DATABASE_URL's server (or
 * the embedded one) from scratch and runs plpgsql_check over every plpgsql
 * function of api, private and admin. Errors: exit 1, each with its function
 * file and line. Warnings are listed. Without the extension on the server (the
 * embedded PostgreSQL ships none) a local run says so and exits 0; in CI (CI=true)
 * it exits 1 (missingExtensionOutcome in lint.ts).
 */
import pg from 'pg';
import { loadConfig } from '../../server/config';
import { locateDatabase } from '../../server/db/database';
import { formatFinding, lintDatabase, missingExtensionOutcome, plpgsqlCheckAvailable } from './lint';
import { createScratchDatabase } from './scratch-database';

async function available(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await plpgsqlCheckAvailable(client);
  } finally {
    await client.end();
  }
}

async function run(): Promise<number> {
  const db = await locateDatabase(loadConfig());
  try {
    if (!(await available(db.url))) {
      const outcome = missingExtensionOutcome();
      (outcome.exitCode ? process.stderr : process.stdout).write(outcome.message);
      return outcome.exitCode;
    }
    const scratch = await createScratchDatabase(db.url, 'bars_lint');
    try {
      const result = await lintDatabase(scratch.url);
      for (const w of result.warnings) process.stdout.write(`${formatFinding(w)}\n`);
      for (const fn of result.unattached)
        process.stdout.write(`not checked (trigger function without a trigger): ${fn}\n`);
      for (const e of result.errors) process.stderr.write(`${formatFinding(e)}\n`);
      process.stdout.write(
        `db:lint: ${result.checked} plpgsql functions checked: ${result.errors.length} errors, ${result.warnings.length} warnings\n`,
      );
      return result.errors.length > 0 ? 1 : 0;
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
    process.stderr.write(`db:lint: ${e.message}\n`);
    process.exit(1);
  },
);
