import pg from 'pg';

/** Drops every database this run created (clones and template), then stops the embedded server. */
export default async function globalTeardown(): Promise<void> {
  const adminUrl = process.env.TEST_PG_ADMIN_URL;
  const run = process.env.TEST_PG_RUN;
  if (adminUrl && run) {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ datname: string }>(
        "select datname from pg_database where datname like 'bars\\_test\\_' || $1 || '\\_%'",
        [run],
      );
      for (const { datname } of rows) {
        await admin.query(`drop database if exists ${admin.escapeIdentifier(datname)} with (force)`);
      }
    } finally {
      await admin.end();
    }
  }
  await globalThis.__embeddedTestPostgres?.stop();
}
