/**
 * Input hygiene (decisions.md): a NUL byte or invalid UTF-8, after
 * percent-decoding, in a path segment, a query parameter (name or value) or a
 * key header is a 400 naming the parameter (or `path`), before anything reads
 * the request. Judged on the raw URL, so no parser's leniency (qs keeps
 * undecodable sequences as they are, PostgreSQL then refuses them: 22021)
 * decides what reaches the database.
 */
import { isUtf8 } from 'node:buffer';
import type { Request, RequestHandler } from 'express';
import { sendError } from '../contract/errors';

const HEX = /^[0-9A-Fa-f]{2}$/;
// eslint-disable-next-line no-control-regex
const NEEDS_DECODING = /[%\u0000\u0080-\uffff]/;

/**
 * The bytes a URL component stands for: `%XX` escapes decoded, anything else
 * taken as its UTF-8 bytes (a malformed escape such as `%zz` stays literal).
 * With `plus`, `+` is a space (query strings).
 */
export function percentDecodedBytes(raw: string, plus = false): Buffer {
  if (!raw.includes('%') && !(plus && raw.includes('+'))) return Buffer.from(raw, 'utf8');
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i]!;
    if (ch === '%' && HEX.test(raw.slice(i + 1, i + 3))) {
      bytes.push(parseInt(raw.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (plus && ch === '+') {
      bytes.push(0x20);
    } else {
      for (const b of Buffer.from(ch, 'utf8')) bytes.push(b);
    }
  }
  return Buffer.from(bytes);
}

/** True when the component decodes to valid UTF-8 without a NUL byte. */
export function cleanComponent(raw: string, plus = false): boolean {
  if (!raw.includes('%')) return !raw.includes('\u0000');
  // Usual case: decodeURIComponent succeeds exactly when the escapes are well-formed UTF-8.
  try {
    return !decodeURIComponent(raw).includes('\u0000');
  } catch {
    // Malformed escapes (`%zz`, kept literally, like qs does) or invalid UTF-8: judge the bytes.
  }
  const bytes = percentDecodedBytes(raw, plus);
  return !bytes.includes(0) && isUtf8(bytes);
}

/** A parameter's name for the message: decoded when that is possible, else as sent. */
function displayName(rawName: string): string {
  const bytes = percentDecodedBytes(rawName, true);
  if (bytes.includes(0) || !isUtf8(bytes)) return rawName.slice(0, 64);
  return bytes.toString('utf8').slice(0, 64);
}

/** The first dirty place in a raw request target: 'path' or a parameter name; undefined when clean. */
export function dirtyPart(url: string): string | undefined {
  // Fast path (nearly every request): no escape and nothing outside ASCII, so nothing to decode.
  if (!NEEDS_DECODING.test(url)) return undefined;
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (!cleanComponent(path)) return 'path';
  if (q === -1) return undefined;
  const hash = url.indexOf('#', q);
  const query = url.slice(q + 1, hash === -1 ? undefined : hash);
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = eq === -1 ? pair : pair.slice(0, eq);
    const value = eq === -1 ? '' : pair.slice(eq + 1);
    if (!cleanComponent(name, true) || !cleanComponent(value, true)) return displayName(name);
  }
  return undefined;
}

/** Headers that carry credentials; Node gives their bytes as latin1 characters. */
const KEY_HEADERS = ['authorization', 'x-api-key'] as const;

function headerIsClean(value: string): boolean {
  // Node refuses NUL in header values at the parser; bytes >= 0x80 arrive as latin1 characters.
  // eslint-disable-next-line no-control-regex
  if (/^[\x01-\x7f]*$/.test(value)) return true;
  const bytes = Buffer.from(value, 'latin1');
  return !bytes.includes(0) && isUtf8(bytes);
}

/**
 * The path and query string. Mounted after the credentials guard on partner paths, so the 400
 * carries the rate-limit headers like every other 400 there (the contract's OpenAPI document).
 */
export const urlHygiene: RequestHandler = (req, res, next) => {
  const part = dirtyPart(req.originalUrl);
  if (part === undefined) return next();
  const where = part === 'path' ? 'the path' : `parameter "${part}"`;
  sendError(res, 400, `${where} contains a NUL byte or invalid UTF-8 (after percent-decoding)`);
};

/** The first key header whose value is not clean UTF-8, or undefined. */
export function dirtyKeyHeader(req: Request): 'Authorization' | 'X-API-Key' | undefined {
  for (const name of KEY_HEADERS) {
    const value = req.headers[name];
    if (typeof value === 'string' && !headerIsClean(value))
      return name === 'authorization' ? 'Authorization' : 'X-API-Key';
  }
  return undefined;
}

/** The key headers: checked before the guard reads them. */
export const keyHeaderHygiene: RequestHandler = (req, res, next) => {
  const dirty = dirtyKeyHeader(req);
  if (dirty === undefined) return next();
  sendError(res, 400, `header "${dirty}" contains invalid UTF-8`);
};
