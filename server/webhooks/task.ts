/**
 * The graphile-worker task `webhook_deliver` (payload {"event_id"}): reads the
 * event from admin.webhook_deliveries and its subscriber's endpoint, POSTs
 * {"id","type","created_at","data"} signed the Standard Webhooks way (the same
 * id on every attempt), records the attempt in the delivery log and throws on
 * failure so that graphile-worker retries with its exponential backoff
 * (max_attempts 14 ≈ 28 h, set by private.enqueue_webhook).
 */
import type { Pool } from 'pg';
import type { Task } from 'graphile-worker';
import { webhookFailures } from '../metrics';
import { attemptDelivery } from './deliver';
import { decryptSecret, signedHeaders } from './signing';
import type { WebhookSettings } from './settings';

interface EventRow {
  id: string;
  type: string;
  created_at: string;
  payload: unknown;
  status: string;
  url: string | null;
  secret_encrypted: string | null;
  /** The current secret, and the replaced one while a rotation's overlap lasts. */
  secrets: string[] | null;
}

export function webhookBody(e: { id: string; type: string; created_at: string; payload: unknown }): string {
  return JSON.stringify({ id: e.id, type: e.type, created_at: e.created_at, data: e.payload });
}

export function deliverTask(pool: Pool, settings: WebhookSettings, timeoutMs?: number): Task {
  return async (payload, helpers) => {
    const eventId = (payload as { event_id?: unknown } | null)?.event_id;
    if (typeof eventId !== 'string') throw new Error('webhook_deliver: payload without event_id');
    const { rows } = await pool.query<EventRow>(
      `select d.id, d.type, to_char(d.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
              d.payload, d.status, e.url, e.secret_encrypted, admin.webhook_signing_secrets(d.subscriber_id) as secrets
         from admin.webhook_deliveries d
         left join admin.webhook_endpoints e on e.subscriber_id = d.subscriber_id
        where d.id = $1`,
      [eventId],
    );
    const event = rows[0];
    if (!event || event.status !== 'pending') return; // unknown, or already settled: nothing to do
    const record = (ok: boolean, status: number | null, error: string | null, final: boolean) =>
      pool.query(
        `update admin.webhook_deliveries
            set attempts = attempts + 1, last_attempt_at = now(), last_status_code = $2, last_error = $3,
                status = case when $4 then 'delivered' when $5 then 'failed' else 'pending' end,
                delivered_at = case when $4 then now() end
          where id = $1`,
        [event.id, status, error, ok, final],
      );
    if (!event.url || !event.secret_encrypted) {
      await record(false, null, 'endpoint removed', true);
      return; // no retry: there is nowhere to send it
    }
    const body = webhookBody(event);
    const secrets = (event.secrets ?? [event.secret_encrypted]).map((s) => decryptSecret(settings.key, s));
    const result = await attemptDelivery(
      event.url,
      { ...signedHeaders(secrets, event.id, body) },
      body,
      settings,
      timeoutMs,
      helpers.abortSignal, // the runner is stopping: abandoned, retried later
    );
    const final = !result.ok && helpers.job.attempts >= helpers.job.max_attempts;
    await record(result.ok, result.status, result.error, final);
    if (!result.ok) {
      webhookFailures.inc();
      throw new Error(`webhook ${event.id} to ${event.url}: ${result.error ?? `HTTP ${result.status}`}`);
    }
  };
}
