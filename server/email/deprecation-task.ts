/**
 * The graphile-worker task `deprecation_email` (payload {"notice_id"}), run by the shared runner
 * beside email_send: tells one alert contact that a deprecation affects its subscriber (queued by
 * api.record_deprecated_calls the first time the subscriber's calls of it are recorded;
 * docs/COMPATIBILITY.md "How partners are told"). Outcomes as for the alert e-mails (task.ts): sent;
 * not sent when the contact is no longer active; a permanent SMTP refusal marks the contact
 * bouncing; anything else is retried with graphile-worker's backoff (at most 14 attempts).
 */
import type { Pool } from 'pg';
import type { Task } from 'graphile-worker';
import type { Logger } from '../log';
import { emailsFailed, emailsSent } from '../metrics';
import { renderDeprecationEmail } from './render';
import type { EmailConfig } from './settings';
import { isBounce, unsubscribeUrl, USAGE_PATH } from './task';
import type { Mailer } from './transport';

export const CHANGELOG_URL_PATH = '/api/v1/partner/changelog.atom';

interface NoticeRow {
  id: string;
  email: string;
  contact_state: string | null;
  subscriber_id: string;
  subscriber_name: string;
  what: string;
  sunset: string | Date;
  replacement: string;
  changelog: string;
  first_call_at: Date;
}

export interface DeprecationEmailTaskOptions {
  pool: Pool;
  mailer: Mailer;
  config: Pick<EmailConfig, 'publicBaseUrl' | 'linkKey' | 'mailFrom'>;
  logger?: Logger;
}

const day = (d: string | Date) => (typeof d === 'string' ? d.slice(0, 10) : d.toISOString().slice(0, 10));

export function deprecationEmailTask(options: DeprecationEmailTaskOptions): Task {
  const { pool, mailer, config, logger } = options;
  return async (payload, helpers) => {
    const noticeId = (payload as { notice_id?: unknown } | null)?.notice_id;
    if (typeof noticeId !== 'string') throw new Error('deprecation_email: payload without notice_id');
    const { rows } = await pool.query<NoticeRow>(
      'select id, email, contact_state, subscriber_id, subscriber_name, what, sunset::text as sunset, replacement, ' +
        'changelog, first_call_at from private.deprecation_notice_claim($1)',
      [noticeId],
    );
    const n = rows[0];
    if (!n) return; // unknown, or already settled
    const record = (outcome: string, result: string) =>
      pool.query('select private.deprecation_notice_record($1, $2, $3)', [n.id, outcome, result]);
    if (n.contact_state !== 'active') {
      await record('skip', `not sent: the contact is ${n.contact_state ?? 'no longer a contact'}`);
      return;
    }
    const unsubscribe = unsubscribeUrl(config, n.subscriber_id, n.email);
    const rendered = renderDeprecationEmail(
      {
        subscriberName: n.subscriber_name,
        what: n.what,
        sunset: day(n.sunset),
        replacement: n.replacement,
        changelog: n.changelog,
        firstCallAt: n.first_call_at,
      },
      {
        unsubscribeUrl: unsubscribe,
        usageUrl: `${config.publicBaseUrl}${USAGE_PATH}`,
        changelogUrl: `${config.publicBaseUrl}${CHANGELOG_URL_PATH}`,
      },
    );
    try {
      const result = await mailer.send({
        to: n.email,
        ...rendered,
        messageId: `<${n.id}@${/@([A-Za-z0-9.-]+)>?\s*$/.exec(config.mailFrom)?.[1] ?? 'localhost'}>`,
        headers: {
          'List-Unsubscribe': `<${unsubscribe}>`,
          'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
          'Auto-Submitted': 'auto-generated',
          'X-Bar-Data-Deprecation': n.what,
        },
      });
      await record('sent', result.response.slice(0, 500));
      emailsSent.inc();
    } catch (e) {
      const err = e as { message?: string; code?: string; permanent?: boolean };
      const message = (err.message ?? String(e)).slice(0, 500);
      if (isBounce(err)) {
        await record('bounce', message);
        emailsFailed.inc({ reason: 'bounce' });
        return;
      }
      const last = helpers.job.attempts >= helpers.job.max_attempts;
      await record(last ? 'failed' : 'retry', message);
      emailsFailed.inc({ reason: last ? 'expired' : 'temporary' });
      if (last) {
        logger?.error({ noticeId: n.id, err: message }, 'deprecation e-mail failed after its last attempt');
        return;
      }
      throw new Error(`deprecation e-mail ${n.id}: ${message}`, { cause: e });
    }
  };
}
