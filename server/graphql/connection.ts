/**
 * Relay connections over the REST functions' pages: `first` (1-100, required)
 * and `after` (an opaque cursor holding the item's position) become a window
 * of the REST pagination (page / per_page), read in one call when it is
 * aligned to a page and in two otherwise.
 */
import { GraphQLError } from 'postgraphile/graphql';

export const MAX_FIRST = 100;
/** Positions beyond this are not cursors we hand out (page numbers stay within int4). */
const MAX_OFFSET = 1_000_000_000;

export function userError(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });
}

export function notFound(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'NOT_FOUND' } });
}

export const cursorOf = (position: number): string => Buffer.from(`cursor:v1:${position}`).toString('base64url');

export interface Window {
  first: number;
  /** Position of the first item asked for (0-based). */
  offset: number;
}

/** `first` and `after` of a connection field; a missing or out-of-range first is an error naming it. */
export function windowOf(args: { first?: unknown; after?: unknown }): Window {
  const first = args.first;
  if (typeof first !== 'number' || !Number.isInteger(first) || first < 1 || first > MAX_FIRST)
    throw userError(`first is required and must be between 1 and ${MAX_FIRST} (got ${String(first)})`);
  let offset = 0;
  if (args.after !== undefined && args.after !== null) {
    const m = /^cursor:v1:(\d{1,10})$/.exec(Buffer.from(String(args.after), 'base64url').toString('latin1'));
    const position = m ? Number(m[1]) : NaN;
    if (!(position >= 0 && position < MAX_OFFSET)) throw userError('after is not a cursor of this connection');
    offset = position + 1;
  }
  return { first, offset };
}

export interface Connection<T> {
  edges: { cursor: string; node: T }[];
  nodes: T[];
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  totalCount: number;
}

export function connection<T>(items: T[], window: Window, totalCount: number, hasNextPage?: boolean): Connection<T> {
  const edges = items.map((node, i) => ({ cursor: cursorOf(window.offset + i), node }));
  return {
    edges,
    nodes: items,
    pageInfo: {
      hasNextPage: hasNextPage ?? window.offset + items.length < totalCount,
      hasPreviousPage: window.offset > 0,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges[edges.length - 1]?.cursor ?? null,
    },
    totalCount,
  };
}

/** A window of a list that is already whole in memory. */
export function sliceConnection<T>(all: readonly T[], window: Window): Connection<T> {
  return connection(all.slice(window.offset, window.offset + window.first), window, all.length);
}

export interface Page<T> {
  items: T[];
  total: number;
}

/**
 * The window read from a paged REST function: page floor(offset / first) + 1 of
 * `first` items, and the next page too when the window straddles two.
 */
export async function pagedWindow<T>(
  window: Window,
  fetch: (page: number, perPage: number) => Promise<Page<T> | null>,
): Promise<Page<T> | null> {
  const { first, offset } = window;
  const page = Math.floor(offset / first) + 1;
  const skip = offset % first;
  const a = await fetch(page, first);
  if (!a) return null;
  let items = a.items.slice(skip);
  if (skip > 0 && items.length < first && page * first < a.total) {
    const b = await fetch(page + 1, first);
    if (b) items = items.concat(b.items.slice(0, first - items.length));
  }
  return { items: items.slice(0, first), total: a.total };
}
