/**
 * One PostgreSQL for the whole run: TEST_DATABASE_URL or DATABASE_URL (a
 * connection with the right to create databases), otherwise an embedded
 * server under .data/test-postgres. A template database is migrated once;
 * each test file clones it (see db.ts), so files never share data.
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { projectRoot } from '../../server/config';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../db/tools/embedded';
import { plpgsqlCheckAvailable } from '../../db/tools/lint';
import { migrateDatabase } from '../../db/tools/migrate';
import { DEFAULT_TEST_CLOCK } from './clock';
import { databaseUrl } from './urls';

declare global {
  var __embeddedTestPostgres: EmbeddedDatabase | undefined;
}

export default async function globalSetup(): Promise<void> {
  let adminUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (!adminUrl) {
    const embedded = await startEmbeddedPostgres({
      dataDir: path.join(projectRoot, '.data', 'test-postgres'),
      port: Number(process.env.TEST_EMBEDDED_PG_PORT || 54339),
      startTimeoutMs: 60000,
      database: 'postgres',
    });
    globalThis.__embeddedTestPostgres = embedded;
    adminUrl = embedded.adminUrl;
    process.stdout.write(
      '\n[tests] PostgreSQL: embedded server (set TEST_DATABASE_URL or DATABASE_URL to use another)\n',
    );
  } else {
    process.stdout.write(`\n[tests] PostgreSQL: ${new URL(adminUrl).host}\n`);
  }
  process.env.TEST_CLOCK ||= DEFAULT_TEST_CLOCK;
  process.stdout.write(`[tests] answers computed at TEST_CLOCK=${process.env.TEST_CLOCK}\n`);
  const redisUrl = process.env.TEST_REDIS_URL || process.env.REDIS_URL || '';
  process.stdout.write(
    redisUrl
      ? `[tests] Redis: ${redisUrl.startsWith('/') ? redisUrl : new URL(redisUrl).host}\n`
      : '[tests] Redis: none (set TEST_REDIS_URL or REDIS_URL); tests that need Redis are SKIPPED\n',
  );

  const run = `${process.pid}_${Date.now().toString(36)}`;
  const template = `bars_test_${run}_tpl`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${template}`);
  } finally {
    await admin.end();
  }
  await migrateDatabase(databaseUrl(adminUrl, template), { includeCurrent: true });
  await createReferenceRecomputations(databaseUrl(adminUrl, template));

  process.env.TEST_PG_ADMIN_URL = adminUrl;
  process.env.TEST_PG_TEMPLATE = template;
  process.env.TEST_PG_RUN = run;
  process.env.TEST_REDIS_URL = redisUrl;
  process.env.TEST_PG_PLPGSQL_CHECK = (await plpgsqlCheckOn(adminUrl)) ? '1' : '';
  if (!process.env.TEST_PG_PLPGSQL_CHECK) {
    process.stdout.write('[tests] plpgsql_check: not on this server; the db:lint tests are SKIPPED\n');
  }
}

/**
 * The test-only oracles of the derived-table tests (schema test_ref), in the template only:
 * they are not part of the production schema (test/support/reference-recomputations.sql).
 */
async function createReferenceRecomputations(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(fs.readFileSync(path.join(__dirname, 'reference-recomputations.sql'), 'utf8'));
  } finally {
    await client.end();
  }
}

async function plpgsqlCheckOn(adminUrl: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await plpgsqlCheckAvailable(client);
  } finally {
    await client.end();
  }
}
