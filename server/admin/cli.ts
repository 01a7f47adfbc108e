/**
 * The admin command line (operators.md): `npm run --silent admin -- <command>`.
 * One JSON document on stdout, exit 0; on error a one-line {"error": ...} on
 * stderr and exit 1. `help`, `--help` and `<command> --help` print plain text
 * on stdout, exit 0. Talks to DATABASE_URL, or to the embedded database
 * (shared with a running `npm start`, or started here, migrated, and stopped
 * after). Every change goes through the same admin.* SQL functions the
 * operator GraphQL endpoint calls.
 *
 * `npm run admin` runs the built file (scripts/run-built.mjs builds only when
 * a source changed), so a command answers in a fraction of a second.
 * Commands are a table (COMMANDS); another module adds its own commands by
 * exporting an AdminCommand[] and adding it to COMMANDS in one line.
 */
import { loadConfig } from '../config';
import { locateDatabase } from '../db/database';
import { migrateDatabase } from '../../db/tools/migrate';
import { createPool, type Pool } from '../db/pools';
import { limit, parse, required, time, UsageError, uuid, type AdminCommand } from '../cli/args';

import { WEBHOOK_COMMANDS } from '../webhooks/cli';
import { EMAIL_COMMANDS } from '../email/cli';
export { UsageError } from '../cli/args';
export type { AdminCommand } from '../cli/args';

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

const subscriberSql = (fn: string) => `select ${SUBSCRIBER_JSON} from ${fn} s join admin.plans p on p.id = s.plan_id`;

const PLAN_JSON = 'id, name, per_minute, per_day, per_month, created_at';

/** The built-in commands, in the order help lists them. */
const BUILT_IN: AdminCommand[] = [
  {
    name: 'plan create',
    synopsis: 'NAME --per-minute N|unlimited --per-day N|unlimited --per-month N|unlimited',
    description: 'Creates a plan with its three limits; prints the plan.',
    run(pool, args) {
      const { values, positionals } = parse(
        args,
        { 'per-minute': { type: 'string' }, 'per-day': { type: 'string' }, 'per-month': { type: 'string' } },
        ['NAME'],
        this.name,
      );
      return one(pool, `select ${PLAN_JSON} from admin.create_plan($1, $2, $3, $4)`, [
        positionals[0],
        limit(values['per-minute'], '--per-minute'),
        limit(values['per-day'], '--per-day'),
        limit(values['per-month'], '--per-month'),
      ]);
    },
  },
  {
    name: 'plan list',
    synopsis: '',
    description: 'Prints every plan, by name.',
    run(pool, args) {
      parse(args, {}, [], this.name);
      return many(pool, `select ${PLAN_JSON} from admin.plans order by name`);
    },
  },
  {
    name: 'subscriber create',
    synopsis: '--name NAME [--plan PLAN] [--ends-at ISO]',
    description: 'Creates a subscriber (plan "standard" unless given); prints it.',
    run(pool, args) {
      const { values } = parse(
        args,
        { name: { type: 'string' }, plan: { type: 'string' }, 'ends-at': { type: 'string' } },
        [],
        this.name,
      );
      return one(pool, subscriberSql('admin.create_subscriber($1, $2, $3)'), [
        required(values.name, '--name'),
        values.plan ?? 'standard',
        values['ends-at'] === undefined ? null : time(values['ends-at'], '--ends-at'),
      ]);
    },
  },
  {
    name: 'subscriber list',
    synopsis: '',
    description: 'Prints every subscriber (id, name, plan, status, subscription end), oldest first.',
    run(pool, args) {
      parse(args, {}, [], this.name);
      return many(pool, `${subscriberSql('admin.subscribers')} order by s.created_at, s.id`);
    },
  },
  ...(['suspend', 'activate'] as const).map((action): AdminCommand => ({
    name: `subscriber ${action}`,
    synopsis: 'ID',
    description:
      action === 'suspend'
        ? 'Suspends a subscriber: its keys get 403 until it is activated; prints it.'
        : 'Activates a suspended subscriber; prints it.',
    run(pool, args) {
      const { positionals } = parse(args, {}, ['ID'], this.name);
      const fn = action === 'suspend' ? 'admin.suspend_subscriber($1)' : 'admin.activate_subscriber($1)';
      return one(pool, subscriberSql(fn), [uuid(positionals[0], 'ID')]);
    },
  })),
  {
    name: 'subscriber set-plan',
    synopsis: 'ID PLAN',
    description: 'Moves a subscriber to another plan (limits apply at once); prints it.',
    run(pool, args) {
      const { positionals } = parse(args, {}, ['ID', 'PLAN'], this.name);
      return one(pool, subscriberSql('admin.set_subscriber_plan($1, $2)'), [
        uuid(positionals[0], 'ID'),
        positionals[1],
      ]);
    },
  },
  {
    name: 'subscriber set-ends-at',
    synopsis: 'ID ISO|none',
    description: 'Sets (or clears, with none) the end of the subscription; prints the subscriber.',
    run(pool, args) {
      const { positionals } = parse(args, {}, ['ID', 'ISO'], this.name);
      const endsAt = positionals[1] === 'none' ? null : time(positionals[1], 'ISO');
      return one(pool, subscriberSql('admin.set_subscription_ends_at($1, $2)'), [uuid(positionals[0], 'ID'), endsAt]);
    },
  },
  {
    name: 'key issue',
    synopsis: 'SUBSCRIBER_ID | key issue --new-subscriber NAME [--plan PLAN] [--ends-at ISO]',
    description: 'Issues an API key (shown once, in api_key), optionally for a new subscriber.',
    async run(pool, args) {
      const { values, positionals } = parse(
        args,
        { 'new-subscriber': { type: 'string' }, plan: { type: 'string' }, 'ends-at': { type: 'string' } },
        args.some((a) => a.startsWith('--new-subscriber')) ? [] : ['SUBSCRIBER_ID'],
        this.name,
      );
      if (values['new-subscriber'] === undefined) {
        if (values.plan !== undefined || values['ends-at'] !== undefined)
          throw new UsageError('--plan and --ends-at go with --new-subscriber');
        return one(pool, 'select k.* from admin.issue_key($1) k', [uuid(positionals[0], 'SUBSCRIBER_ID')]);
      }
      // A subscriber and its first key in one transaction.
      const client = await pool.connect();
      try {
        await client.query('begin');
        const {
          rows: [subscriber],
        } = await client.query(subscriberSql('admin.create_subscriber($1, $2, $3)'), [
          required(values['new-subscriber'], '--new-subscriber'),
          values.plan ?? 'standard',
          values['ends-at'] === undefined ? null : time(values['ends-at'], '--ends-at'),
        ]);
        const {
          rows: [key],
        } = await client.query('select k.* from admin.issue_key($1) k', [subscriber.id]);
        await client.query('commit');
        return { ...key, subscriber };
      } catch (e) {
        await client.query('rollback').catch(() => undefined);
        throw e;
      } finally {
        client.release();
      }
    },
  },
  {
    name: 'key revoke',
    synopsis: 'KEY_ID',
    description: 'Revokes a key (403 from then on); prints it.',
    run(pool, args) {
      const { positionals } = parse(args, {}, ['KEY_ID'], this.name);
      return one(pool, `select ${KEY_JSON} from admin.revoke_key($1) k`, [uuid(positionals[0], 'KEY_ID')]);
    },
  },
  {
    name: 'key list',
    synopsis: '[--subscriber ID]',
    description: 'Prints keys (prefix, status, last use; never the key), oldest first.',
    run(pool, args) {
      const { values } = parse(args, { subscriber: { type: 'string' } }, [], this.name);
      const subscriber = values.subscriber === undefined ? null : uuid(values.subscriber, '--subscriber');
      return many(
        pool,
        `select ${KEY_JSON} from admin.api_keys k where $1::uuid is null or k.subscriber_id = $1
        order by k.created_at, k.id`,
        [subscriber],
      );
    },
  },
  {
    name: 'operator create',
    synopsis: 'NAME',
    description: 'Creates an operator and its bearer token for the operator listener (shown once).',
    run(pool, args) {
      const { positionals } = parse(args, {}, ['NAME'], this.name);
      return one(pool, 'select o.* from admin.create_operator($1) o', [positionals[0]]);
    },
  },
  {
    name: 'alerts',
    synopsis: '[--subscriber ID] [--since ISO]',
    description: 'Prints usage alerts (80 % / 100 % of a limit), newest first.',
    run(pool, args) {
      const { values } = parse(args, { subscriber: { type: 'string' }, since: { type: 'string' } }, [], this.name);
      return many(
        pool,
        `select a.id, a.created_at, a.level, a.bucket, a.window_start, a.used, a."limit",
          a.subscriber_id, s.name as subscriber, a.api_key_id, k.key_prefix
        from admin.usage_alerts a
        join admin.subscribers s on s.id = a.subscriber_id
        join admin.api_keys k on k.id = a.api_key_id
        where ($1::uuid is null or a.subscriber_id = $1) and ($2::timestamptz is null or a.created_at >= $2)
        order by a.created_at desc, a.id desc`,
        [
          values.subscriber === undefined ? null : uuid(values.subscriber, '--subscriber'),
          values.since === undefined ? null : time(values.since, '--since'),
        ],
      );
    },
  },
  {
    name: 'usage',
    synopsis: '[--subscriber ID] [--days N]',
    description: 'Prints requests per UTC day, subscriber and key over the last N days (default 30), newest first.',
    run(pool, args) {
      const { values } = parse(args, { subscriber: { type: 'string' }, days: { type: 'string' } }, [], this.name);
      const days = values.days === undefined ? 30 : Number(values.days);
      if (!Number.isInteger(days) || days < 1 || days > 3660 || !/^\d+$/.test(values.days ?? '30')) {
        throw new UsageError(`--days must be a whole number from 1 to 3660, got "${values.days}"`);
      }
      // The last N UTC days, today included; per subscriber, key and day, with the endpoints' split.
      return many(
        pool,
        `select u.day::text as day, u.subscriber_id, s.name as subscriber, u.api_key_id, k.key_prefix,
          sum(u.requests)::bigint as requests, sum(u.rate_limited)::bigint as rate_limited,
          jsonb_object_agg(u.endpoint, u.requests) as endpoints
        from admin.daily_usage u
        join admin.subscribers s on s.id = u.subscriber_id
        join admin.api_keys k on k.id = u.api_key_id
        where u.day > (now() at time zone 'UTC')::date - $2::int and ($1::uuid is null or u.subscriber_id = $1)
        group by u.day, u.subscriber_id, s.name, u.api_key_id, k.key_prefix
        order by u.day desc, s.name, u.subscriber_id, k.key_prefix, u.api_key_id`,
        [values.subscriber === undefined ? null : uuid(values.subscriber, '--subscriber'), days],
      );
    },
  },
];

/** Every command: the built-in ones, then those other modules register (one line each). */
export const COMMANDS: AdminCommand[] = [...BUILT_IN, ...WEBHOOK_COMMANDS, ...EMAIL_COMMANDS];

const usageLine = (c: AdminCommand) => `  ${c.name}${c.synopsis ? ` ${c.synopsis}` : ''}`;

export const USAGE = `usage: npm run --silent admin -- <command>
${COMMANDS.map(usageLine).join('\n')}
  help | --help | <command> --help`;

/** Plain-text help: every command, or one command's usage and description. */
export function helpText(command?: AdminCommand): string {
  if (!command)
    return `${USAGE}\n\nEach command prints one JSON document on stdout (exit 0); an error prints {"error": ...} on stderr (exit 1).\nDATABASE_URL selects the database; unset, the embedded one is used.\n`;
  return `usage: npm run --silent admin -- ${usageLine(command).trim()}\n\n${command.description}\n`;
}

/** The command argv names and the rest of argv, or undefined. */
function find(argv: string[]): { command: AdminCommand; args: string[] } | undefined {
  const two = `${argv[0] ?? ''} ${argv[1] ?? ''}`;
  const byTwo = COMMANDS.find((c) => c.name === two);
  if (byTwo) return { command: byTwo, args: argv.slice(2) };
  const byOne = COMMANDS.find((c) => c.name === argv[0]);
  return byOne ? { command: byOne, args: argv.slice(1) } : undefined;
}

/** Runs one command against the database; returns the JSON document to print. */
export async function runCommand(pool: Pool, argv: string[]): Promise<unknown> {
  const found = find(argv);
  if (!found) {
    const command = argv.slice(0, 2).join(' ');
    throw new UsageError(command ? `unknown command "${command}"\n${USAGE}` : USAGE);
  }
  return found.command.run(pool, found.args);
}

/** A database error meant for the operator (raised by an admin function), or a generic one. */
function messageOf(e: unknown): string {
  const err = e as { code?: string; message?: string };
  if (err.code === '3F000' || err.code === '42883' || err.code === '42P01') {
    return `the database is not migrated (${err.message}); run npm run db:migrate`;
  }
  return err.message ?? String(e);
}

/** The help text asked for (help, --help, -h, help <command>, <command> --help), or undefined. */
export function helpRequest(argv: string[]): string | undefined {
  const wantsHelp = argv[0] === 'help' || argv.includes('--help') || argv.includes('-h');
  if (!wantsHelp) return undefined;
  const rest = argv.filter((a) => a !== 'help' && a !== '--help' && a !== '-h');
  if (rest.length === 0) return helpText();
  const found = find(rest);
  return found ? helpText(found.command) : undefined; // an unknown command stays an error
}

export async function main(argv: string[]): Promise<number> {
  // Nothing but the JSON result may reach stdout.
  console.log = console.info = console.warn;
  let result: unknown;
  let failure: string | undefined;
  let db: Awaited<ReturnType<typeof locateDatabase>> | undefined;
  let pool: Pool | undefined;
  const help = helpRequest(argv);
  if (help !== undefined) {
    process.stdout.write(help);
    return 0;
  }
  try {
    if (argv.length === 0) throw new UsageError('no command given; `npm run --silent admin -- help` lists them');
    if (!find(argv)) throw new UsageError(`unknown command "${argv.slice(0, 2).join(' ')}"; \`help\` lists them`);
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
