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
import { DEFAULT_SMTP_TIMEOUT_MS, type EmailConfig } from './settings';

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
  /** `signal` abandons the attempt (nodemailer closes its connection): error name AbortError, code EABORT. */
  send(email: OutgoingEmail, signal?: AbortSignal): Promise<SendResult>;
  close(): void;
  /** The longest one attempt may take (the task aborts it then). */
  readonly attemptTimeoutMs: number;
}

/**
 * SMTP_TIMEOUT_MS (t, default 10 s): connecting and the greeting t each, a connection silent for
 * 3t, and the whole attempt at most 3t (a server that trickles its replies defeats the socket
 * timeout; the task's abort signal does not). A tarpit (accepts, never answers) costs t.
 */
export function smtpTimeouts(t = DEFAULT_SMTP_TIMEOUT_MS) {
  return { connectionTimeout: t, greetingTimeout: t, socketTimeout: 3 * t, attemptTimeoutMs: 3 * t };
}

export function createMailer(
  config: Pick<EmailConfig, 'smtpUrl' | 'mailFrom' | 'outboxDir' | 'smtpTimeoutMs'>,
  logger?: Logger,
): Mailer {
  const { attemptTimeoutMs, ...timeouts } = smtpTimeouts(config.smtpTimeoutMs);
  if (config.smtpUrl) {
    const transport = nodemailer.createTransport({
      pool: true,
      url: config.smtpUrl,
      maxConnections: 2,
      ...timeouts,
    });
    return {
      kind: 'smtp',
      attemptTimeoutMs,
      async send(email, signal) {
        const info = await transport.sendMail({ from: config.mailFrom, ...email, ...(signal ? { signal } : {}) });
        return { messageId: info.messageId, response: info.response };
      },
      close: () => transport.close(),
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    kind: 'outbox',
    attemptTimeoutMs,
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
