/**
 * Unsubscribe tokens (the List-Unsubscribe link, RFC 8058): they name a
 * subscriber's alert contact and are signed with EMAIL_LINK_KEY, so the link
 * needs no API key and cannot be forged or altered.
 *
 *   v1.<base64url(subscriber uuid bytes | address UTF-8)>.<base64url(HMAC-SHA256)>
 *
 * The HMAC covers "v1." and the payload. Tokens do not expire: an unsubscribe
 * link in an old e-mail keeps working (as Stripe's and GitHub's do).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface ContactRef {
  subscriberId: string;
  email: string;
}

const UUID_HEX = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const mac = (key: Buffer, signed: string) => createHmac('sha256', key).update(signed).digest();

export function signUnsubscribeToken(key: Buffer, ref: ContactRef): string {
  const payload = Buffer.concat([
    Buffer.from(ref.subscriberId.replace(/-/g, ''), 'hex'),
    Buffer.from(ref.email, 'utf8'),
  ]).toString('base64url');
  const signed = `v1.${payload}`;
  return `${signed}.${mac(key, signed).toString('base64url')}`;
}

/** The contact a token names, or undefined when it is malformed or its signature does not match. */
export function verifyUnsubscribeToken(key: Buffer, token: unknown): ContactRef | undefined {
  if (typeof token !== 'string' || token.length > 1000) return undefined;
  const m = /^v1\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return undefined;
  const expected = mac(key, `v1.${m[1]}`);
  const given = Buffer.from(m[2]!, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  const payload = Buffer.from(m[1]!, 'base64url');
  if (payload.length < 17) return undefined;
  const hex = payload.subarray(0, 16).toString('hex');
  const subscriberId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  if (!UUID_HEX.test(subscriberId)) return undefined;
  return { subscriberId, email: payload.subarray(16).toString('utf8') };
}
