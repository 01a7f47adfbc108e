/**
 * The graphile-worker task `email_send` (payload {"delivery_id"}), run by the
 * same runner as the webhooks (server/webhooks/runner.ts). It seals the
 * delivery (private.email_claim: its content is fixed, later minute alerts
 * open a new e-mail), renders it, sends it, and records the attempt:
 * - accepted: sent;
 * - the contact is no longer active (unsubscribed, bouncing, removed): failed, nothing sent;
 * - a permanent SMTP reply (5xx but 503; nodemailer's err.permanent) to the
 *   envelope or the message: the contact is marked bouncing, the e-mail failed;
 * - anything else (4xx such as 421, connection refused, timeouts, a lost
 *   connection): retried with graphile-worker's exponential backoff until 24 h
 *   after the e-mail was due, then failed.
 * Every attempt is bounded (mailer.attemptTimeoutMs; a silent server costs
 * SMTP_TIMEOUT_MS). When the runner stops (SIGTERM), an attempt still running
 * after its grace (graphile-worker's abort signal) is abandoned: its connection
 * closed before the message was accepted, recorded as a temporary failure and
 * retried later; an attempt the server already accepted is recorded sent.
 * The Message-ID is the delivery id, the same on every attempt.
 */
import type { Pool } from 'pg';
import type { Task } from 'graphile-worker';
import type { Logger } from '../log';
import { emailsFailed, emailsSent } from '../metrics';
import type { Bucket } from '../ratelimit/windows';
import { renderAlertEmail, type AlertEmailFacts } from './render';
import type { EmailConfig } from './settings';
import { signUnsubscribeToken } from './token';
import type { Mailer } from './transport';

export const RETRY_FOR_MS = 24 * 3600_000;
export const UNSUBSCRIBE_PATH = '/email/unsubscribe';
export const USAGE_PATH = '/api/v1/partner/usage';

interface ClaimRow {
  id: string;
  email: string;
  contact_state: string | null;
  subscriber_id: string;
  subscriber_name: string;
  key_prefix: string;
  bucket: Bucket;
  level: AlertEmailFacts['level'];
  window_start: Date;
  used: number;
  limit: number;
  alert_count: number;
  first_alert_at: Date;
  last_alert_at: Date;
  send_after: Date;
}

type Outcome = 'sent' | 'retry' | 'bounce' | 'skip' | 'failed';

interface SmtpError {
  message?: string;
  code?: string;
  originalCode?: string;
  responseCode?: number;
  permanent?: boolean;
  command?: string;
}

/** A permanent rejection of this recipient or message (not of our login or configuration). */
export function isBounce(err: SmtpError): boolean {
  return err.permanent === true && err.code !== 'EAUTH' && err.code !== 'ENOAUTH';
}

export function unsubscribeUrl(
  config: Pick<EmailConfig, 'publicBaseUrl' | 'linkKey'>,
  subscriberId: string,
  email: string,
) {
  const token = signUnsubscribeToken(config.linkKey, { subscriberId, email });
  return `${config.publicBaseUrl}${UNSUBSCRIBE_PATH}?token=${token}`;
}

function messageIdDomain(from: string): string {
  return /@([A-Za-z0-9.-]+)>?\s*$/.exec(from)?.[1] ?? 'localhost';
}

export interface EmailTaskOptions {
  pool: Pool;
  mailer: Mailer;
  config: Pick<EmailConfig, 'publicBaseUrl' | 'linkKey' | 'mailFrom'>;
  logger?: Logger;
  retryForMs?: number;
}

export function emailSendTask(options: EmailTaskOptions): Task {
  const { pool, mailer, config, logger } = options;
  const retryForMs = options.retryForMs ?? RETRY_FOR_MS;
  return async (payload, helpers) => {
    const deliveryId = (payload as { delivery_id?: unknown } | null)?.delivery_id;
    if (typeof deliveryId !== 'string') throw new Error('email_send: payload without delivery_id');
    const { rows } = await pool.query<ClaimRow>('select * from private.email_claim($1)', [deliveryId]);
    const d = rows[0];
    if (!d) return; // unknown, or already settled
    const record = (outcome: Outcome, code: number | null, error: string | null) =>
      pool.query('select private.email_record_attempt($1, $2, $3, $4)', [d.id, outcome, code, error]);
    if (d.contact_state !== 'active') {
      await record('skip', null, `not sent: the contact is ${d.contact_state ?? 'no longer a contact'}`);
      return;
    }
    const unsubscribe = unsubscribeUrl(config, d.subscriber_id, d.email);
    const rendered = renderAlertEmail(
      {
        subscriberName: d.subscriber_name,
        keyPrefix: d.key_prefix,
        bucket: d.bucket,
        level: d.level,
        windowStart: d.window_start,
        used: d.used,
        limit: d.limit,
        alertCount: d.alert_count,
        firstAlertAt: d.first_alert_at,
        lastAlertAt: d.last_alert_at,
      },
      { unsubscribeUrl: unsubscribe, usageUrl: `${config.publicBaseUrl}${USAGE_PATH}` },
    );
    const attempt = AbortSignal.any([helpers.abortSignal, AbortSignal.timeout(mailer.attemptTimeoutMs)]);
    try {
      const result = await mailer.send(
        {
          to: d.email,
          ...rendered,
          messageId: `<${d.id}@${messageIdDomain(config.mailFrom)}>`,
          headers: {
            'List-Unsubscribe': `<${unsubscribe}>`,
            'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
            'Auto-Submitted': 'auto-generated',
            'X-Bar-Data-Alert': `${d.bucket}; ${d.level}; ${d.alert_count}`,
          },
        },
        attempt,
      );
      await record('sent', 250, result.response.slice(0, 500));
      emailsSent.inc();
    } catch (e) {
      const err = e as SmtpError;
      if (err.code === 'EABORT' && helpers.abortSignal.aborted) {
        // The server is shutting down: nothing was accepted; the job is retried later (by any instance).
        const message = 'abandoned: the server was shutting down; retried later';
        await record('retry', null, message);
        emailsFailed.inc({ reason: 'abandoned' });
        logger?.warn({ deliveryId: d.id }, 'e-mail attempt abandoned by the shutdown; retried later');
        throw new Error(`e-mail ${d.id}: ${message}`, { cause: e });
      }
      const message = (
        err.code === 'EABORT'
          ? `no answer from the SMTP server within ${mailer.attemptTimeoutMs} ms`
          : (err.message ?? String(e))
      ).slice(0, 500);
      const code = err.responseCode ?? null;
      if (isBounce(err)) {
        await record('bounce', code, message);
        emailsFailed.inc({ reason: 'bounce' });
        logger?.warn({ deliveryId: d.id, responseCode: code, err: message }, 'e-mail bounced; contact marked bouncing');
        return;
      }
      const expired =
        Date.now() - d.send_after.getTime() >= retryForMs || helpers.job.attempts >= helpers.job.max_attempts;
      await record(expired ? 'failed' : 'retry', code, message);
      emailsFailed.inc({ reason: expired ? 'expired' : 'temporary' });
      if (expired) {
        logger?.error({ deliveryId: d.id, err: message }, 'e-mail failed after 24 hours of retries');
        return;
      }
      throw new Error(`e-mail ${d.id}: ${message} (${err.originalCode ?? err.code ?? 'no code'})`, { cause: e });
    }
  };
}
