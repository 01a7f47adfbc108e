/**
 * Throwaway databases for tests: each is a clone of the run's migrated
 * template (fast), or an empty database for migration tests.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPool, type Pool } from '../../server/db/pools';
import { databaseUrl } from './urls';

export interface TestDatabase {
  name: string;
  /** Owner (superuser) connection string: migrations, fixtures, direct SQL. */
  url: string;
  /** A pool connected as the owner, for fixtures and assertions. */
  owner: Pool;
  /** A pool that runs as bar_partner, like the partner server. */
  partnerPool(): Pool;
  drop(): Promise<void>;
}

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests through jest (globalSetup)`);
  return value;
}

export function adminUrl(): string {
  return env('TEST_PG_ADMIN_URL');
}

async function adminQuery(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const name = `bars_test_${env('TEST_PG_RUN')}_${randomBytes(4).toString('hex')}`;
  const template = options.empty ? 'template0' : env('TEST_PG_TEMPLATE');
  for (let attempt = 0; ; attempt++) {
    try {
      await adminQuery(`create database ${name} template ${template}`);
      break;
    } catch (e) {
      // 55006: the template is briefly in use by a concurrent clone
      if ((e as { code?: string }).code !== '55006' || attempt > 20) throw e;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
  const url = databaseUrl(adminUrl(), name);
  const owner = createPool(url, { max: 4, applicationName: 'tests-owner' });
  const pools: Pool[] = [owner];
  return {
    name,
    url,
    owner,
    partnerPool() {
      const pool = createPool(url, { max: 4, role: 'bar_partner', applicationName: 'tests-partner' });
      pools.push(pool);
      return pool;
    },
    async drop() {
      await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
      await adminQuery(`drop database if exists ${name} with (force)`);
    },
  };
}
