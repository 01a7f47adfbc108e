/**
 * `npm start`: find (or start) the database, migrate it, seed demo data on a
 * first embedded start, then serve the partner API until SIGINT/SIGTERM.
 */
import pg from 'pg';
import { seedDemoData } from '../db/seed';
import { loadConfig } from './config';
import { locateDatabase, type DatabaseLocation } from './db/database';
import { migrateDatabase } from './db/migrate';
import { createPool } from './db/pools';
import { createPartnerGuard } from './credentials/guard';
import { createPartnerApp } from './http/app';
import { createPartnerServer } from './http/server';
import { createLogger } from './log';
import { firstKeyHint } from './admin/hint';
import { startOperatorServer } from './operator/server';

/** The demo generator only seeds an empty database: no cities, bars, categories or users. */
async function hasBarData(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ any: boolean }>(`select exists (select 1 from private.cities) or exists (select 1 from private.bars)
      or exists (select 1 from private.categories) or exists (select 1 from private.users) as any`);
    return rows[0]?.any ?? false;
  } finally {
    await client.end();
  }
}

// Run last-registered first: listeners close, then pending usage is written, then pools and the database stop.
const cleanups: (() => Promise<unknown>)[] = [];

async function runCleanups(onError: (err: unknown) => void): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(onError);
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  let shuttingDown = false;

  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    await runCleanups((err) => logger.error({ err }, 'cleanup failed'));
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  let db: DatabaseLocation;
  try {
    db = await locateDatabase(config);
  } catch (e) {
    fail(`cannot start the embedded PostgreSQL: ${(e as Error).message}`);
  }
  cleanups.push(() => db.stop());
  try {
    await migrateDatabase(db.url);
  } catch (e) {
    await db.stop();
    fail(`migration failed: ${(e as Error).message}`);
  }

  if (config.seedDemo && !(await hasBarData(db.url))) {
    logger.info({ bars: config.demoBars }, 'seeding demo data (first start)');
    await seedDemoData(db.url, { bars: config.demoBars, onProgress: (m) => process.stderr.write(`${m}\n`) });
  }

  const pool = createPool(db.url, {
    max: config.pgPoolMax, role: 'bar_partner', applicationName: 'partner-api', statementTimeoutMs: config.pgStatementTimeoutMs,
  });
  cleanups.push(() => pool.end());

  const guard = await createPartnerGuard({ pool, databaseUrl: db.url, redisUrl: config.redisUrl, logger });
  cleanups.push(() => guard.close()); // writes pending usage counts
  const app = createPartnerApp({ config, logger, pool, guard: guard.handlers });
  const server = createPartnerServer(config, app); // HTTPS when TLS_CERT_FILE + TLS_KEY_FILE are set
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  }).catch((e: NodeJS.ErrnoException) => {
    void db.stop().finally(() => fail(e.code === 'EADDRINUSE' ? `port ${config.port} is already in use; set PORT` : e.message));
  });
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));

  // Operator GraphQL endpoint: its own listener (ADMIN_HOST:ADMIN_PORT, loopback by default).
  const operatorGraphql = await startOperatorServer({ databaseUrl: db.url, config, logger }).catch(async (e: NodeJS.ErrnoException) => {
    await db.stop();
    return fail(e.code === 'EADDRINUSE' ? `port ${config.adminPort} is already in use; set ADMIN_PORT` : `operator GraphQL: ${e.message}`);
  });
  cleanups.push(() => operatorGraphql.close());
  logger.info({ url: `${operatorGraphql.url}/graphql` }, 'operator GraphQL listening');

  logger.info({ port: config.port, embeddedDatabase: db.embedded }, 'partner API listening');
  if (db.embedded) {
    process.stderr.write(
      `\nPartner API on ${config.tls ? 'https' : 'http'}://localhost:${config.port}/api/v1/partner (embedded PostgreSQL, demo data)\n`,
    );
    process.stderr.write(`${firstKeyHint(`${config.tls ? 'https' : 'http'}://localhost:${config.port}`)}\n`);
  }
}

function fail(reason: string): never {
  process.stderr.write(`error: ${reason}\n`);
  process.exit(1);
}

// A failure after the embedded database started must not leave it running.
main().catch(async (e) => {
  await runCleanups(() => undefined);
  fail((e as Error).message ?? String(e));
});
