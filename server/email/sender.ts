/**
 * The e-mail side of an instance: the mailer (SMTP pool or outbox) and the
 * email_send task, handed to the shared graphile-worker runner
 * (startWebhookRunner({ tasks })). close() ends the SMTP pool after the
 * runner stopped.
 */
import type pg from 'pg';
import type { TaskList } from 'graphile-worker';
import type { Logger } from '../log';
import type { EmailConfig } from './settings';
import { emailSendTask } from './task';
import { deprecationEmailTask } from './deprecation-task';
import { createMailer, type Mailer } from './transport';

export interface EmailSender {
  mailer: Mailer;
  tasks: (pool: pg.Pool) => TaskList;
  close(): void;
}

export function createEmailSender(config: EmailConfig, logger?: Logger, retryForMs?: number): EmailSender {
  const mailer = createMailer(config, logger);
  if (mailer.kind === 'outbox')
    logger?.info({ outbox: config.outboxDir }, 'SMTP_URL is not set: e-mails are written to the outbox');
  return {
    mailer,
    tasks: (pool) => ({
      email_send: emailSendTask({ pool, mailer, config, logger, retryForMs }),
      deprecation_email: deprecationEmailTask({ pool, mailer, config, logger }), // docs/COMPATIBILITY.md
    }),
    close: () => mailer.close(),
  };
}
