/**
 * Standard Webhooks signing and secret storage (building blocks for issue 13;
 * the outbox, worker and CLI are not built yet).
 *
 * - Secrets are `whsec_` + base64 of 32 random bytes; the HMAC key is the
 *   decoded bytes (as the `standardwebhooks` package expects).
 * - Signature: `v1,` + base64(HMAC-SHA256(key, `${id}.${timestamp}.${body}`)),
 *   sent as `webhook-signature` with `webhook-id` and `webhook-timestamp`
 *   (seconds). The same id is sent on every retry of one event.
 * - At rest a secret is encrypted with AES-256-GCM under a 32-byte key from
 *   the environment (WEBHOOK_SECRET_KEY, base64 or hex): `v1:` + base64(iv 12
 *   bytes | tag 16 bytes | ciphertext). A database dump alone cannot sign.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'whsec_';

export function generateSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

function secretKey(secret: string): Buffer {
  if (!secret.startsWith(PREFIX)) throw new Error('webhook secret must start with whsec_');
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
  if (key.length < 24 || key.length > 64) throw new Error('webhook secret must hold 24 to 64 bytes');
  return key;
}

export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
  'content-type': 'application/json';
}

/** One secret, or several during a rotation: one signature each, space-separated (Standard Webhooks). */
export function signedHeaders(secret: string | string[], id: string, body: string, now = new Date()): SignedHeaders {
  const ts = Math.floor(now.getTime() / 1000);
  const secrets = Array.isArray(secret) ? secret : [secret];
  return {
    'webhook-id': id,
    'webhook-timestamp': String(ts),
    'webhook-signature': secrets.map((s) => sign(s, id, ts, body)).join(' '),
    'content-type': 'application/json',
  };
}

/** Verifies one `webhook-signature` header value (space-separated list) against a secret. */
export function verify(secret: string, id: string, timestampSeconds: number, body: string, header: string): boolean {
  const expected = Buffer.from(sign(secret, id, timestampSeconds, body));
  return header.split(' ').some((candidate) => {
    const got = Buffer.from(candidate);
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}

export function parseEncryptionKey(value: string | undefined): Buffer {
  if (!value) throw new Error('WEBHOOK_SECRET_KEY is not set (32 bytes, base64 or hex)');
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (key.length !== 32) throw new Error('WEBHOOK_SECRET_KEY must be 32 bytes (base64 or 64 hex digits)');
  return key;
}

export function encryptSecret(key: Buffer, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return 'v1:' + Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64');
}

export function decryptSecret(key: Buffer, stored: string): string {
  if (!stored.startsWith('v1:')) throw new Error('unknown webhook secret format');
  const raw = Buffer.from(stored.slice(3), 'base64');
  if (raw.length < 29) throw new Error('webhook secret ciphertext too short');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}
