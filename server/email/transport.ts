/**
 * Where e-mails go: SMTP through nodemailer's connection pool (SMTP_URL), or,
 * without SMTP_URL, .eml files in the outbox folder (nodemailer's stream
 * transport renders the same RFC 5322 message; the file is logged), so the
 * embedded default needs no mail server.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type { Logger } from '../log';
import type { EmailConfig } from './settings';

export interface OutgoingEmail {
  to: string;
  subject: string;
  text: string;
  html: string;
  messageId: string;
  headers: Record<string, string>;
}

export interface SendResult {
  messageId: string;
  /** The SMTP server's final reply, or the outbox file. */
  response: string;
}

export interface Mailer {
  readonly kind: 'smtp' | 'outbox';
  send(email: OutgoingEmail): Promise<SendResult>;
  close(): void;
}

export const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

export function createMailer(config: Pick<EmailConfig, 'smtpUrl' | 'mailFrom' | 'outboxDir'>, logger?: Logger): Mailer {
  if (config.smtpUrl) {
    const transport = nodemailer.createTransport({
      pool: true,
      url: config.smtpUrl,
      maxConnections: 2,
      ...SMTP_TIMEOUTS,
    });
    return {
      kind: 'smtp',
      async send(email) {
        const info = await transport.sendMail({ from: config.mailFrom, ...email });
        return { messageId: info.messageId, response: info.response };
      },
      close: () => transport.close(),
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    kind: 'outbox',
    async send(email) {
      const info = await transport.sendMail({ from: config.mailFrom, ...email });
      await mkdir(config.outboxDir, { recursive: true });
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const id = email.messageId.replace(/^<|@.*$/g, '');
      const file = path.join(config.outboxDir, `${stamp}-${id}.eml`);
      await writeFile(file, info.message as Buffer);
      logger?.info({ email: { to: email.to, subject: email.subject, file } }, 'e-mail written to the outbox');
      return { messageId: info.messageId, response: `written to ${file}` };
    },
    close: () => transport.close(),
  };
}
