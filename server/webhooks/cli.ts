/**
 * Admin CLI commands for webhooks (operators.md §4), registered in
 * server/admin/cli.ts: `webhook set`, `webhook rotate-secret`, `webhook remove`, `webhook deliveries`.
 */
import { parse, uuid, UsageError, type AdminCommand } from '../cli/args';
import { WebhookUrlError } from './address';
import { listDeliveries, removeWebhookEndpoint, rotateWebhookSecret, setWebhookEndpoint } from './endpoints';
import { webhookSettings } from './settings';

const STATUSES = ['pending', 'delivered', 'failed'] as const;

export const WEBHOOK_COMMANDS: AdminCommand[] = [
  {
    name: 'webhook set',
    synopsis: 'SUBSCRIBER_ID URL',
    description:
      'Sets the subscriber\'s webhook endpoint (https only unless WEBHOOK_ALLOW_HTTP=true; private, loopback and link-local addresses refused unless WEBHOOK_ALLOW_PRIVATE=true) with a new secret; prints {"subscriber_id","url","secret"}: the whsec_ secret is shown once.',
    async run(pool, args) {
      const { positionals } = parse(args, {}, ['SUBSCRIBER_ID', 'URL'], this.name);
      const subscriberId = uuid(positionals[0], 'SUBSCRIBER_ID');
      try {
        return await setWebhookEndpoint(pool, webhookSettings(), subscriberId, positionals[1]!);
      } catch (e) {
        if (e instanceof WebhookUrlError) throw new UsageError(`URL refused: ${e.message}`);
        throw e;
      }
    },
  },
  {
    name: 'webhook rotate-secret',
    synopsis: 'SUBSCRIBER_ID',
    description:
      'Gives the subscriber\'s endpoint a new secret; the old one stays valid for 24 h (deliveries carry both signatures meanwhile); prints {"subscriber_id","url","secret","previous_secret_valid_until"}: the new whsec_ secret is shown once.',
    async run(pool, args) {
      const { positionals } = parse(args, {}, ['SUBSCRIBER_ID'], this.name);
      return rotateWebhookSecret(pool, webhookSettings(), uuid(positionals[0], 'SUBSCRIBER_ID'));
    },
  },
  {
    name: 'webhook remove',
    synopsis: 'SUBSCRIBER_ID',
    description:
      'Removes the subscriber\'s webhook endpoint (pending deliveries then fail); prints {"subscriber_id","removed"}.',
    async run(pool, args) {
      const { positionals } = parse(args, {}, ['SUBSCRIBER_ID'], this.name);
      const subscriberId = uuid(positionals[0], 'SUBSCRIBER_ID');
      return { subscriber_id: subscriberId, removed: await removeWebhookEndpoint(pool, subscriberId) };
    },
  },
  {
    name: 'webhook deliveries',
    synopsis: '[--subscriber ID] [--status pending|delivered|failed]',
    description:
      'Prints the latest 100 webhook events and their delivery (status, attempts, last status code or error), newest first.',
    async run(pool, args) {
      const { values } = parse(args, { subscriber: { type: 'string' }, status: { type: 'string' } }, [], this.name);
      const status = values.status;
      if (status !== undefined && !(STATUSES as readonly string[]).includes(status)) {
        throw new UsageError(`--status must be pending, delivered or failed, got "${status}"`);
      }
      return listDeliveries(pool, {
        ...(values.subscriber !== undefined ? { subscriberId: uuid(values.subscriber, '--subscriber') } : {}),
        ...(status !== undefined ? { status: status as (typeof STATUSES)[number] } : {}),
      });
    },
  },
];
