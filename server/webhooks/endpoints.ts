/**
 * Operator actions on webhook endpoints (admin CLI `webhook ...`): the URL is
 * checked against the SSRF rules (syntax and, unless private addresses are
 * allowed, the resolved addresses), a fresh whsec_ secret is generated,
 * encrypted with WEBHOOK_SECRET_KEY and stored; the secret is returned once.
 */
import type { Pool } from 'pg';
import { checkWebhookTarget } from './address';
import { encryptSecret, generateSecret } from './signing';
import type { WebhookSettings } from './settings';

export interface SetEndpointResult {
  subscriber_id: string;
  url: string;
  secret: string;
}

export async function setWebhookEndpoint(
  pool: Pool,
  settings: WebhookSettings,
  subscriberId: string,
  rawUrl: string,
): Promise<SetEndpointResult> {
  const { url } = await checkWebhookTarget(rawUrl, settings); // throws WebhookUrlError
  const secret = generateSecret();
  const { rows } = await pool.query<{ subscriber_id: string; url: string }>(
    'select subscriber_id, url from admin.set_webhook_endpoint($1, $2, $3)',
    [subscriberId, url.href, encryptSecret(settings.key, secret)],
  );
  return { subscriber_id: rows[0]!.subscriber_id, url: rows[0]!.url, secret };
}

export interface RotateSecretResult {
  subscriber_id: string;
  url: string;
  secret: string;
  previous_secret_valid_until: string;
}

/** A new secret for the endpoint; the replaced one still signs (beside it) for 24 h. */
export async function rotateWebhookSecret(
  pool: Pool,
  settings: WebhookSettings,
  subscriberId: string,
): Promise<RotateSecretResult> {
  const secret = generateSecret();
  const { rows } = await pool.query<{ subscriber_id: string; url: string; previous_secret_valid_until: Date }>(
    'select subscriber_id, url, previous_secret_valid_until from admin.rotate_webhook_secret($1, $2)',
    [subscriberId, encryptSecret(settings.key, secret)],
  );
  const row = rows[0]!;
  return {
    subscriber_id: row.subscriber_id,
    url: row.url,
    secret,
    previous_secret_valid_until: row.previous_secret_valid_until.toISOString(),
  };
}

export async function removeWebhookEndpoint(pool: Pool, subscriberId: string): Promise<boolean> {
  const { rows } = await pool.query<{ removed: boolean }>('select admin.remove_webhook_endpoint($1) as removed', [
    subscriberId,
  ]);
  return rows[0]!.removed;
}

export interface DeliveryFilter {
  subscriberId?: string;
  status?: 'pending' | 'delivered' | 'failed';
  limit?: number;
}

export async function listDeliveries(pool: Pool, filter: DeliveryFilter = {}) {
  const { rows } = await pool.query(
    `select id, subscriber_id, type, status, attempts, last_status_code, last_error, url,
            created_at, last_attempt_at, delivered_at, payload as data
       from admin.webhook_deliveries
      where ($1::uuid is null or subscriber_id = $1) and ($2::text is null or status = $2)
      order by created_at desc, id
      limit $3`,
    [filter.subscriberId ?? null, filter.status ?? null, filter.limit ?? 100],
  );
  return rows;
}
