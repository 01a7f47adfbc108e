/**
 * Webhook settings from the environment:
 * - WEBHOOK_SECRET_KEY: 32 bytes (base64 or hex) encrypting endpoint secrets
 *   at rest. Required in production; in development and tests a key derived
 *   from a fixed string is used, with a warning.
 * - WEBHOOK_ALLOW_HTTP=true: allow http:// endpoints (development, tests).
 * - WEBHOOK_ALLOW_PRIVATE=true: allow loopback/private/link-local addresses.
 */
import { createHash } from 'node:crypto';
import type { UrlRules } from './address';
import { parseEncryptionKey } from './signing';

export interface WebhookSettings extends UrlRules {
  key: Buffer;
  /** Set when the development default key is in use. */
  warning: string | null;
}

export function webhookSettings(env: NodeJS.ProcessEnv = process.env): WebhookSettings {
  const rules = { allowHttp: env.WEBHOOK_ALLOW_HTTP === 'true', allowPrivate: env.WEBHOOK_ALLOW_PRIVATE === 'true' };
  if (env.WEBHOOK_SECRET_KEY) return { ...rules, key: parseEncryptionKey(env.WEBHOOK_SECRET_KEY), warning: null };
  if (env.NODE_ENV === 'production') {
    throw new Error('WEBHOOK_SECRET_KEY is required in production (32 bytes, base64: openssl rand -base64 32)');
  }
  return {
    ...rules,
    key: createHash('sha256').update('partner-bar-api development webhook key').digest(),
    warning: 'WEBHOOK_SECRET_KEY is not set: webhook secrets are encrypted with a development key',
  };
}
