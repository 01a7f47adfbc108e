/**
 * Operator authentication: `Authorization: Bearer <token>`, where the token
 * comes from `admin operator create` and only its sha256 is stored.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Pool } from '../db/pools';

export interface OperatorIdentity {
  id: string;
  name: string;
}

export type AuthResult = { ok: true; operator: OperatorIdentity } | { ok: false; error: string };

const BEARER = /^Bearer[ ]+(\S{1,512})[ ]*$/i;
/** admin.create_operator's token format (private.new_secret('pbo_')): anything else, e.g. a partner key, needs no lookup. */
const OPERATOR_TOKEN = /^pbo_[A-Za-z0-9_-]{20,100}$/;

export function bearerToken(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  return header ? BEARER.exec(header)?.[1] : undefined;
}

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

export async function authenticateOperator(pool: Pool, req: IncomingMessage): Promise<AuthResult> {
  if (!req.headers.authorization) return { ok: false, error: 'Missing operator token' };
  const token = bearerToken(req);
  if (!token || !OPERATOR_TOKEN.test(token)) return { ok: false, error: 'Invalid operator token' };
  const { rows } = await pool.query<OperatorIdentity>('select id, name from private.operator_by_token_hash($1)', [
    hashToken(token),
  ]);
  const operator = rows[0];
  return operator ? { ok: true, operator } : { ok: false, error: 'Invalid operator token' };
}
