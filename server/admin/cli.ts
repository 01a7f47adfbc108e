/**
 * The admin command line (operators.md): `npm run --silent admin -- <command>`.
 * One JSON document on stdout, exit 0; on error a one-line {"error": ...} on
 * stderr and exit 1. Talks to DATABASE_URL, or to the embedded database (shared
 * with a running `npm start`, or started here, migrated, and stopped after).
 * Every change goes through the same admin.* SQL functions the operator
 * GraphQL endpoint calls.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { loadConfig } from '../config';
import { locateDatabase } from '../db/database';
import { migrateDatabase } from '../db/migrate';
import { createPool, type Pool } from '../db/pools';

export class UsageError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

export const USAGE = `usage: npm run --silent admin -- <command>
  plan create NAME --per-minute N|unlimited --per-day N|unlimited --per-month N|unlimited
  plan list
  subscriber create --name NAME [--plan PLAN] [--ends-at ISO]
  subscriber list
  subscriber suspend ID | subscriber activate ID
  subscriber set-plan ID PLAN | subscriber set-ends-at ID ISO|none
  key issue SUBSCRIBER_ID | key issue --new-subscriber NAME [--plan PLAN] [--ends-at ISO]
  key revoke KEY_ID
  key list [--subscriber ID]
  operator create NAME
  alerts [--subscriber ID] [--since ISO]
  usage [--subscriber ID] [--days N]`;

type Options = NonNullable<ParseArgsConfig['options']>;

function parse(args: string[], options: Options, positionals: string[]) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message.split('\n')[0]!);
  }
  if (parsed.positionals.length !== positionals.length) {
    throw new UsageError(positionals.length
      ? `expected ${positionals.join(' ')}, got ${parsed.positionals.length} argument(s)`
      : `unexpected argument "${parsed.positionals[0]}"`);
  }
  return { values: parsed.values as Record<string, string | undefined>, positionals: parsed.positionals };
}

function uuid(value: string | undefined, what: string): string {
  if (!value || !UUID.test(value)) throw new UsageError(`${what} must be a UUID, got "${value ?? ''}"`);
  return value.toLowerCase();
}

function time(value: string | undefined, what: string): Date {
  const date = value && ISO_TIME.test(value) ? new Date(value) : undefined;
  if (!date || Number.isNaN(date.getTime())) throw new UsageError(`${what} must be an ISO 8601 date or date-time, got "${value ?? ''}"`);
  return date;
}

function limit(value: string | undefined, what: string): number | null {
  if (value === undefined) throw new UsageError(`${what} is required (a positive integer or "unlimited")`);
  if (value === 'unlimited') return null;
  if (!/^[1-9]\d{0,9}$/.test(value) || Number(value) > 2147483647) {
    throw new UsageError(`${what} must be a positive integer or "unlimited", got "${value}"`);
  }
  return Number(value);
}

function required(value: string | undefined, what: string): string {
  if (value === undefined || value.trim() === '') throw new UsageError(`${what} is required`);
  return value;
}

// Every query is a constant; values travel as bind parameters.
const SUBSCRIBER_JSON = `s.id, s.name, p.name as plan, s.status, s.subscription_ends_at, s.created_at, s.updated_at`;
const KEY_JSON = `k.id, k.subscriber_id, k.key_prefix, k.status, k.created_at, k.revoked_at, k.last_used_at`;

async function one<T>(pool: Pool, sql: string, values: unknown[]): Promise<T> {
  const { rows } = await pool.query(sql, values);
  return rows[0] as T;
}

async function many(pool: Pool, sql: string, values: unknown[] = []): Promise<unknown[]> {
  return (await pool.query(sql, values)).rows;
}

const subscriberSql = (fn: string) =>
  `select ${SUBSCRIBER_JSON} from ${fn} s join admin.plans p on p.id = s.plan_id`;

/** Runs one command against the database; returns the JSON document to print. */
export async function runCommand(pool: Pool, argv: string[]): Promise<unknown> {
  const [group, action, ...rest] = argv;
  const command = `${group ?? ''} ${action ?? ''}`.trim();
  switch (group === 'alerts' || group === 'usage' ? group : command) {
    case 'plan create': {
      const { values, positionals } = parse(rest, {
        'per-minute': { type: 'string' }, 'per-day': { type: 'string' }, 'per-month': { type: 'string' },
      }, ['NAME']);
      return one(pool, 'select id, name, per_minute, per_day, per_month, created_at from admin.create_plan($1, $2, $3, $4)',
        [positionals[0], limit(values['per-minute'], '--per-minute'), limit(values['per-day'], '--per-day'),
          limit(values['per-month'], '--per-month')]);
    }
    case 'plan list':
      parse(rest, {}, []);
      return many(pool, 'select id, name, per_minute, per_day, per_month, created_at from admin.plans order by name');
    case 'subscriber create': {
      const { values } = parse(rest, { name: { type: 'string' }, plan: { type: 'string' }, 'ends-at': { type: 'string' } }, []);
      return one(pool, subscriberSql('admin.create_subscriber($1, $2, $3)'), [
        required(values.name, '--name'), values.plan ?? 'standard',
        values['ends-at'] === undefined ? null : time(values['ends-at'], '--ends-at')]);
    }
    case 'subscriber list':
      parse(rest, {}, []);
      return many(pool, `${subscriberSql('admin.subscribers')} order by s.created_at, s.id`);
    case 'subscriber suspend':
    case 'subscriber activate': {
      const { positionals } = parse(rest, {}, ['ID']);
      const fn = action === 'suspend' ? 'admin.suspend_subscriber($1)' : 'admin.activate_subscriber($1)';
      return one(pool, subscriberSql(fn), [uuid(positionals[0], 'ID')]);
    }
    case 'subscriber set-plan': {
      const { positionals } = parse(rest, {}, ['ID', 'PLAN']);
      return one(pool, subscriberSql('admin.set_subscriber_plan($1, $2)'), [uuid(positionals[0], 'ID'), positionals[1]]);
    }
    case 'subscriber set-ends-at': {
      const { positionals } = parse(rest, {}, ['ID', 'ISO']);
      const endsAt = positionals[1] === 'none' ? null : time(positionals[1], 'ISO');
      return one(pool, subscriberSql('admin.set_subscription_ends_at($1, $2)'), [uuid(positionals[0], 'ID'), endsAt]);
    }
    case 'key issue': {
      const { values, positionals } = parse(rest, {
        'new-subscriber': { type: 'string' }, plan: { type: 'string' }, 'ends-at': { type: 'string' },
      }, rest.some((a) => a.startsWith('--new-subscriber')) ? [] : ['SUBSCRIBER_ID']);
      if (values['new-subscriber'] === undefined) {
        if (values.plan !== undefined || values['ends-at'] !== undefined) throw new UsageError('--plan and --ends-at go with --new-subscriber');
        return one(pool, 'select k.* from admin.issue_key($1) k', [uuid(positionals[0], 'SUBSCRIBER_ID')]);
      }
      // A subscriber and its first key in one transaction.
      const client = await pool.connect();
      try {
        await client.query('begin');
        const { rows: [subscriber] } = await client.query(subscriberSql('admin.create_subscriber($1, $2, $3)'), [
          required(values['new-subscriber'], '--new-subscriber'), values.plan ?? 'standard',
          values['ends-at'] === undefined ? null : time(values['ends-at'], '--ends-at')]);
        const { rows: [key] } = await client.query('select k.* from admin.issue_key($1) k', [subscriber.id]);
        await client.query('commit');
        return { ...key, subscriber };
      } catch (e) {
        await client.query('rollback').catch(() => undefined);
        throw e;
      } finally {
        client.release();
      }
    }
    case 'key revoke': {
      const { positionals } = parse(rest, {}, ['KEY_ID']);
      return one(pool, `select ${KEY_JSON} from admin.revoke_key($1) k`, [uuid(positionals[0], 'KEY_ID')]);
    }
    case 'key list': {
      const { values } = parse(rest, { subscriber: { type: 'string' } }, []);
      const subscriber = values.subscriber === undefined ? null : uuid(values.subscriber, '--subscriber');
      return many(pool, `select ${KEY_JSON} from admin.api_keys k where $1::uuid is null or k.subscriber_id = $1
        order by k.created_at, k.id`, [subscriber]);
    }
    case 'operator create': {
      const { positionals } = parse(rest, {}, ['NAME']);
      return one(pool, 'select o.* from admin.create_operator($1) o', [positionals[0]]);
    }
    case 'alerts': {
      const { values } = parse(argv.slice(1), { subscriber: { type: 'string' }, since: { type: 'string' } }, []);
      return many(pool, `select a.id, a.created_at, a.level, a.bucket, a.window_start, a.used, a."limit",
          a.subscriber_id, s.name as subscriber, a.api_key_id, k.key_prefix
        from admin.usage_alerts a
        join admin.subscribers s on s.id = a.subscriber_id
        join admin.api_keys k on k.id = a.api_key_id
        where ($1::uuid is null or a.subscriber_id = $1) and ($2::timestamptz is null or a.created_at >= $2)
        order by a.created_at desc, a.id desc`, [
        values.subscriber === undefined ? null : uuid(values.subscriber, '--subscriber'),
        values.since === undefined ? null : time(values.since, '--since')]);
    }
    case 'usage': {
      const { values } = parse(argv.slice(1), { subscriber: { type: 'string' }, days: { type: 'string' } }, []);
      const days = values.days === undefined ? 30 : Number(values.days);
      if (!Number.isInteger(days) || days < 1 || days > 3660 || !/^\d+$/.test(values.days ?? '30')) {
        throw new UsageError(`--days must be a whole number from 1 to 3660, got "${values.days}"`);
      }
      // The last N UTC days, today included; per subscriber, key and day, with the endpoints' split.
      return many(pool, `select u.day::text as day, u.subscriber_id, s.name as subscriber, u.api_key_id, k.key_prefix,
          sum(u.requests)::bigint as requests, sum(u.rate_limited)::bigint as rate_limited,
          jsonb_object_agg(u.endpoint, u.requests) as endpoints
        from admin.daily_usage u
        join admin.subscribers s on s.id = u.subscriber_id
        join admin.api_keys k on k.id = u.api_key_id
        where u.day > (now() at time zone 'UTC')::date - $2::int and ($1::uuid is null or u.subscriber_id = $1)
        group by u.day, u.subscriber_id, s.name, u.api_key_id, k.key_prefix
        order by u.day desc, s.name, u.subscriber_id, k.key_prefix, u.api_key_id`, [
        values.subscriber === undefined ? null : uuid(values.subscriber, '--subscriber'), days]);
    }
    default:
      throw new UsageError(command ? `unknown command "${command}"\n${USAGE}` : USAGE);
  }
}

/** A database error meant for the operator (raised by an admin function), or a generic one. */
function messageOf(e: unknown): string {
  const err = e as { code?: string; message?: string };
  if (err.code === '3F000' || err.code === '42883' || err.code === '42P01') {
    return `the database is not migrated (${err.message}); run npm run db:migrate`;
  }
  return err.message ?? String(e);
}

export async function main(argv: string[]): Promise<number> {
  // Nothing but the JSON result may reach stdout.
  console.log = console.info = console.warn;
  let result: unknown;
  let failure: string | undefined;
  let db: Awaited<ReturnType<typeof locateDatabase>> | undefined;
  let pool: Pool | undefined;
  try {
    if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') throw new UsageError(USAGE);
    db = await locateDatabase(loadConfig());
    if (db.embedded) await migrateDatabase(db.url);
    pool = createPool(db.url, { max: 2, applicationName: 'admin-cli' });
    result = await runCommand(pool, argv);
    if (result === undefined) throw new Error('not found');
  } catch (e) {
    failure = e instanceof UsageError ? e.message : messageOf(e);
  } finally {
    await pool?.end().catch(() => undefined);
    await db?.stop().catch(() => undefined);
  }
  if (failure !== undefined) {
    process.stderr.write(`${JSON.stringify({ error: failure })}\n`);
    return 1;
  }
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  return 0;
}

if (require.main === module) {
  void main(process.argv.slice(2)).then((code) => process.exit(code));
}
