/**
 * A throwaway database on the same server as a connection string, migrated
 * from scratch (committed, current/, function files): what `npm run db:lint`
 * and `npm run db:schema` look at, so their answer depends on the repository
 * and not on the state of somebody's development database.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrateDatabase } from './migrate';

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

function withDatabase(connectionString: string, database: string): string {
  const url = new URL(connectionString);
  url.pathname = `/${database}`;
  return url.toString();
}

async function onServer(connectionString: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString, application_name: 'scratch-database' });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Creates `<prefix>_<pid>_<random>` next to `serverUrl`'s database and migrates it with current/. */
export async function createScratchDatabase(serverUrl: string, prefix: string): Promise<ScratchDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(3).toString('hex')}`;
  await onServer(serverUrl, `create database ${name} template template0`);
  const url = withDatabase(serverUrl, name);
  const drop = () => onServer(serverUrl, `drop database if exists ${name} with (force)`);
  try {
    await migrateDatabase(url, { includeCurrent: true });
  } catch (e) {
    await drop().catch(() => undefined);
    throw e;
  }
  return { url, drop };
}
