/**
 * The API key format and how a request carries it. Keys are generated and
 * hashed by the database (admin.issue_key: 'pbk_' + 43 base64url characters,
 * stored as sha256 of the text); the server hashes the same way to look up.
 */
import { hash } from 'node:crypto';
import type { Request } from 'express';

export const API_KEY_PATTERN = /^pbk_[A-Za-z0-9_-]{43}$/;

export function hashApiKey(key: string): Buffer {
  return hash('sha256', key, 'buffer'); // one call: about half of createHash's CPU
}

export type PresentedKey = { kind: 'missing' } | { kind: 'malformed' } | { kind: 'key'; key: string };

const BEARER = /^Bearer +([^\s]+) *$/i;

/**
 * `Authorization: Bearer <key>` (preferred) or `X-API-Key: <key>`. An
 * Authorization header that is not a Bearer credential (whatever else the
 * request carries), or a value that is not of the key format, is malformed:
 * rejected without a database lookup.
 */
export function presentedKey(req: Request): PresentedKey {
  const authorization = req.get('authorization')?.trim();
  const headerKey = req.get('x-api-key')?.trim();
  let candidate: string | undefined;
  if (authorization) {
    // A non-Bearer Authorization (e.g. Basic) is a 401 even beside a valid X-API-Key (docs/CREDENTIALS.md).
    candidate = BEARER.exec(authorization)?.[1];
    if (candidate === undefined) return { kind: 'malformed' };
  }
  candidate ??= headerKey || undefined;
  if (candidate === undefined) return { kind: 'missing' };
  return API_KEY_PATTERN.test(candidate) ? { kind: 'key', key: candidate } : { kind: 'malformed' };
}
