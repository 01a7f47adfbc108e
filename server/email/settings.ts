/**
 * E-mail settings from the environment (decisions.md v1.2 "E-mail notifications"):
 * - SMTP_URL: smtp:// or smtps:// (user:password@host:port); unset → the outbox
 * - MAIL_FROM: the From address ("Bar Data API <alerts@example.com>")
 * - PUBLIC_BASE_URL: the partner API's public https origin; unsubscribe links live under it
 * - EMAIL_LINK_KEY: 32 bytes (base64 or 64 hex digits) signing unsubscribe tokens
 * - EMAIL_OUTBOX_DIR: where .eml files go without SMTP_URL (default .data/outbox)
 * - SMTP_TIMEOUT_MS: connecting and the server's greeting each get this long
 *   (default 10000); a silent connection 3x as long; a whole attempt 3x as long
 * Production needs the first four (productionGaps lists what is missing); in
 * development a fixed derived link key and http://localhost:PORT are used.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';

export interface EmailConfig {
  smtpUrl: string | undefined;
  mailFrom: string;
  publicBaseUrl: string;
  outboxDir: string;
  linkKey: Buffer;
  /** SMTP_TIMEOUT_MS (default 10000): bounds every SMTP attempt (server/email/transport.ts smtpTimeouts). */
  smtpTimeoutMs?: number;
  /** Production settings that are missing (empty outside production or when complete). */
  missing: string[];
}

const DEV_FROM = 'Bar Data API <alerts@localhost>';

export function parseLinkKey(value: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (key.length !== 32) throw new Error('EMAIL_LINK_KEY must be 32 bytes (base64 or 64 hex digits)');
  return key;
}

export const DEFAULT_SMTP_TIMEOUT_MS = 10_000;

function smtpTimeout(raw: string | undefined): number {
  if (raw === undefined || raw === '') return DEFAULT_SMTP_TIMEOUT_MS;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < 100 || n > 600_000)
    throw new Error(`SMTP_TIMEOUT_MS must be a whole number of milliseconds from 100 to 600000, got "${raw}"`);
  return n;
}

export function emailConfig(env: NodeJS.ProcessEnv, production: boolean, root: string, port: number): EmailConfig {
  const smtpUrl = env.SMTP_URL || undefined;
  if (smtpUrl && !/^smtps?:\/\/[^/]/i.test(smtpUrl)) throw new Error('SMTP_URL must start with smtp:// or smtps://');
  const base = env.PUBLIC_BASE_URL || undefined;
  if (base) {
    let url: URL | undefined;
    try {
      url = new URL(base);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'https:' && production) || !/^https?:$/.test(url.protocol))
      throw new Error(`PUBLIC_BASE_URL must be an ${production ? 'https' : 'http(s)'} URL, got "${base}"`);
  }
  const missing = production
    ? [
        ['SMTP_URL', smtpUrl],
        ['MAIL_FROM', env.MAIL_FROM],
        ['PUBLIC_BASE_URL', base],
        ['EMAIL_LINK_KEY', env.EMAIL_LINK_KEY],
      ].flatMap(([name, value]) => (value ? [] : [name!]))
    : [];
  return {
    smtpUrl,
    mailFrom: env.MAIL_FROM || DEV_FROM,
    publicBaseUrl: (base ?? `http://localhost:${port}`).replace(/\/+$/, ''),
    outboxDir: path.resolve(root, env.EMAIL_OUTBOX_DIR || '.data/outbox'),
    linkKey: env.EMAIL_LINK_KEY
      ? parseLinkKey(env.EMAIL_LINK_KEY)
      : createHash('sha256').update('partner-bar-api development e-mail link key').digest(),
    smtpTimeoutMs: smtpTimeout(env.SMTP_TIMEOUT_MS),
    missing,
  };
}
