/**
 * What a GraphQL error tells the operator. GraphQL's own errors (syntax,
 * validation, limits) and the deliberate errors of the admin.* functions
 * (RAISE ... / invalid input) are shown as they are; anything else is logged
 * with an id and, in production, replaced by a message without internals.
 */
import { randomUUID } from 'node:crypto';
import { isSafeError } from 'postgraphile/grafast';
import { GraphQLError } from 'postgraphile/graphql';
import type { Logger } from '../log';

interface PgErrorLike {
  code?: unknown;
  severity?: unknown;
  message: string;
}

function pgError(error: unknown): PgErrorLike | undefined {
  const e = error as PgErrorLike | null;
  return e && typeof e.code === 'string' && typeof e.severity === 'string' ? e : undefined;
}

/**
 * SQLSTATEs whose message is meant for the caller: raised by plpgsql (P0xxx),
 * invalid input (22xxx: bad uuid, bad timestamp, ...), and integrity rules
 * (23xxx: e.g. an unknown plan or subscriber id).
 */
function isClientFacing(code: string): boolean {
  return /^(P0|22|23)/.test(code);
}

export function makeMaskError(options: { production: boolean; logger: Logger }) {
  return (error: GraphQLError): GraphQLError => {
    const rebuild = (message: string, extensions: Record<string, unknown>) =>
      new GraphQLError(message, {
        nodes: error.nodes,
        source: error.source,
        positions: error.positions,
        path: error.path,
        extensions,
      });
    const original = error.originalError;
    if (!original || original instanceof GraphQLError) return error;
    if (isSafeError(original)) return rebuild(original.message, { ...(original.extensions ?? {}) });
    const pg = pgError(original);

    if (pg && isClientFacing(pg.code as string)) return rebuild(pg.message, { code: pg.code });
    if (pg?.code === '57014') return rebuild('The query took too long and was cancelled', { code: pg.code });

    const errorId = randomUUID();
    options.logger.error({ errorId, err: original, path: error.path }, 'operator GraphQL error');
    if (!options.production) return rebuild(error.message, { errorId, ...(pg ? { code: pg.code } : {}) });
    return rebuild(`Internal error (id ${errorId})`, { errorId });
  };
}
