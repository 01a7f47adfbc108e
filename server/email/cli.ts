/**
 * Admin CLI commands for alert contacts and e-mails (operators.md §5),
 * registered in server/admin/cli.ts: `subscriber contacts [set|clear-bounce]`,
 * `email deliveries`. Addresses are validated by admin.set_alert_contacts
 * (the same function the operator GraphQL mutation calls).
 */
import { parse, uuid, UsageError, type AdminCommand } from '../cli/args';
import type { Pool } from '../db/pools';

const STATUSES = ['pending', 'sent', 'failed'] as const;
const CONTACT_JSON = 'c.subscriber_id, c.email, c.state, c.state_reason, c.state_changed_at, c.created_at';

async function contacts(pool: Pool, subscriberId: string) {
  const { rows } = await pool.query(
    `select ${CONTACT_JSON} from admin.subscribers s
       left join admin.alert_contacts c on c.subscriber_id = s.id
      where s.id = $1 order by c.email`,
    [subscriberId],
  );
  if (rows.length === 0) throw new UsageError(`unknown subscriber ${subscriberId}`);
  return rows.filter((r: { email: string | null }) => r.email !== null);
}

/** "a@x.com,b@y.org" → ['a@x.com', 'b@y.org']; empty entries are an error. */
export function emailList(raw: string): string[] {
  const list = raw.split(',').map((s) => s.trim());
  if (list.some((e) => e === ''))
    throw new UsageError('EMAIL list must be comma-separated addresses without empty entries');
  return list;
}

export const EMAIL_COMMANDS: AdminCommand[] = [
  {
    name: 'subscriber contacts',
    synopsis: 'SUBSCRIBER_ID | set SUBSCRIBER_ID EMAIL[,EMAIL...] | clear-bounce SUBSCRIBER_ID EMAIL',
    description:
      'Prints the alert contacts with their state (active, unsubscribed, bouncing). `set` replaces them (at most 5; an invalid address is an error and nothing changes; kept addresses keep their state); `clear-bounce` makes a bouncing contact active again.',
    async run(pool, args) {
      const sub = args[0];
      if (sub === 'set') {
        const { positionals } = parse(
          args.slice(1),
          {},
          ['SUBSCRIBER_ID', 'EMAIL[,EMAIL...]'],
          'subscriber contacts set',
        );
        const subscriberId = uuid(positionals[0], 'SUBSCRIBER_ID');
        const { rows } = await pool.query(`select ${CONTACT_JSON} from admin.set_alert_contacts($1, $2) c`, [
          subscriberId,
          emailList(positionals[1]!),
        ]);
        return rows;
      }
      if (sub === 'clear-bounce') {
        const { positionals } = parse(
          args.slice(1),
          {},
          ['SUBSCRIBER_ID', 'EMAIL'],
          'subscriber contacts clear-bounce',
        );
        const { rows } = await pool.query(`select ${CONTACT_JSON} from admin.clear_contact_bounce($1, $2) c`, [
          uuid(positionals[0], 'SUBSCRIBER_ID'),
          positionals[1],
        ]);
        return rows[0];
      }
      const { positionals } = parse(args, {}, ['SUBSCRIBER_ID'], this.name);
      return contacts(pool, uuid(positionals[0], 'SUBSCRIBER_ID'));
    },
  },
  {
    name: 'email deliveries',
    synopsis: '[--subscriber ID] [--status pending|sent|failed]',
    description:
      'Prints the latest 100 usage-alert e-mails (address, alert, how many alerts it covers, status, attempts, last SMTP reply or error), newest first.',
    async run(pool, args) {
      const { values } = parse(args, { subscriber: { type: 'string' }, status: { type: 'string' } }, [], this.name);
      const status = values.status;
      if (status !== undefined && !(STATUSES as readonly string[]).includes(status)) {
        throw new UsageError(`--status must be pending, sent or failed, got "${status}"`);
      }
      const { rows } = await pool.query(
        `select d.id, d.subscriber_id, d.email, d.api_key_id, k.key_prefix, d.bucket, d.level, d.alert_count,
                d.first_alert_at, d.last_alert_at, d.send_after, d.status, d.attempts, d.last_response_code,
                d.last_result, d.created_at, d.last_attempt_at, d.sent_at
           from admin.email_deliveries d join admin.api_keys k on k.id = d.api_key_id
          where ($1::uuid is null or d.subscriber_id = $1) and ($2::text is null or d.status = $2)
          order by d.created_at desc, d.id
          limit 100`,
        [values.subscriber === undefined ? null : uuid(values.subscriber, '--subscriber'), status ?? null],
      );
      return rows;
    },
  },
];
