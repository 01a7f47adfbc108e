/**
 * Fixed documents the listeners send (the public documents, the pages' files): their bytes and strong
 * ETag, computed once. http/caching.ts sends them; web/assets.ts and web/public-files.ts load them.
 */
import { createHash } from 'node:crypto';

/** A strong validator: the base64url SHA-256 of the body, first 27 characters (160 bits). */
export function strongEtag(body: string | Buffer): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}

/** A public document's bytes and strong ETag, computed once (publicDocument). */
export interface PublicDocument {
  readonly body: Buffer;
  readonly etag: string;
}

/** The document of a fixed text or file: its UTF-8 bytes (converted once, not per answer) and ETag. */
export function publicDocument(text: string | Buffer): PublicDocument {
  const body = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  return { body, etag: strongEtag(body) };
}
