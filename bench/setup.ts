/**
 * The bench database: migrated (committed + current), seeded at the asked
 * scale when it has no bars yet (an existing seed is reused whatever its size),
 * and a subscriber on a plan whose limits never interfere.
 */
import pg from 'pg';
import { seedDemoData } from '../db/seed';
import { migrateDatabase } from '../db/tools/migrate';

export interface BenchDatabase {
  bars: number;
  events: number;
  posts: number;
  apiKey: string;
}

async function ensureDatabaseExists(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) {
      process.stderr.write(`bench: creating database ${name}\n`);
      await client.query(`create database "${name.replace(/"/g, '""')}"`);
    }
  } finally {
    await client.end();
  }
}

export async function prepareDatabase(url: string, bars: number, seed: number): Promise<BenchDatabase> {
  await ensureDatabaseExists(url);
  await migrateDatabase(url);
  try {
    // Benchmark work in progress too: db/migrations/current (blank when everything is committed).
    await migrateDatabase(url, { includeCurrent: true });
  } catch (e) {
    process.stderr.write(
      `bench: applying db/migrations/current failed (${(e as Error).message}); benchmarking the committed schema\n`,
    );
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const count = async () => Number((await client.query('select count(*) as n from private.bars')).rows[0].n);
    if ((await count()) === 0) {
      process.stderr.write(`bench: seeding ${bars} bars (this takes a while at 1M)\n`);
      await seedDemoData(url, { bars, seed, onProgress: (m) => process.stderr.write(`${m}\n`) });
    }
    // Estimates are fine for the header line; exact counts of 10M rows would take seconds.
    const { rows } = await client.query(`select relname, reltuples::bigint as n from pg_class
      where oid in ('private.bars'::regclass, 'private.events'::regclass, 'private.posts'::regclass)`);
    const n = (t: string) => Number(rows.find((r) => r.relname === t)?.n ?? 0);
    return { bars: await count(), events: n('events'), posts: n('posts'), apiKey: await benchKey(client) };
  } finally {
    await client.end();
  }
}

/** A key on the `bench` plan: every bucket limited (all three are counted in Redis) but never reached. */
async function benchKey(client: pg.Client): Promise<string> {
  return (await issueKeyOnPlan(client, 'bench', UNREACHABLE)).apiKey;
}

/** A limit no bench run reaches (2^31 − 1). */
export const UNREACHABLE = 2147483647;

/**
 * A key of a new subscriber on `plan` (created when missing: `perMinute` a minute, unreachable a
 * day and a month).
 */
export async function issueKeyOnPlan(
  client: pg.Client,
  plan: string,
  perMinute: number,
): Promise<{ apiKey: string; keyId: string }> {
  await client.query(
    `select admin.create_plan($1, $2, $3, $3)
    where not exists (select from admin.plans where name = $1)`,
    [plan, perMinute, UNREACHABLE],
  );
  const {
    rows: [subscriber],
  } = await client.query(`select id from admin.create_subscriber($1 || ' ' || now()::text, $2)`, [plan, plan]);
  const {
    rows: [key],
  } = await client.query('select k.api_key, k.id from admin.issue_key($1) k', [subscriber.id]);
  return { apiKey: key.api_key as string, keyId: key.id as string };
}
