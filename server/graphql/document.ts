/**
 * From a GraphQL-over-HTTP request to a document ready to run, with every
 * bound checked before any database work (decisions.md v1.2): query text at
 * most 10,000 bytes, 2,000 tokens (graphql-armor's parser), depth 10 and 20
 * aliases (graphql-armor's validation rules, with GraphQL's own rules), one
 * operation run (a query; GET never runs anything else), variables coerced,
 * then the cost (cost.ts). Each breach is an error naming its bound.
 */
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { MaxTokensParserWLexer } from '@escape.tech/graphql-armor-max-tokens';
import {
  getOperationAST,
  getVariableValues,
  Kind,
  specifiedRules,
  GraphQLError,
  type ValidationContext,
  validate,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'postgraphile/graphql';
import { CostError, queryCost, type Cost } from './cost';

export const LIMITS = { bytes: 10_000, tokens: 2_000, depth: 10, aliases: 20 } as const;

export interface PreparedQuery {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  operationName?: string;
  variables: Record<string, unknown>;
  cost: Cost;
}

/** A request rejected before execution: its HTTP status, its GraphQL errors, and whether it is charged. */
export class Rejection extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Points charged (0: the node limit, as GitHub: nothing for a query that never ran). */
    readonly points = 1,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const reject = (code: string, message: string, status = 400, points = 1) =>
  new Rejection(status, code, message, points);

/** Reads { query, variables, operationName } from a POST body or GET query string. */
export function requestParams(
  method: string,
  body: unknown,
  query: Record<string, unknown>,
): { query: string; variables: Record<string, unknown>; operationName?: string } {
  let source: Record<string, unknown>;
  if (method === 'POST') {
    if (Array.isArray(body))
      throw reject(
        'BATCHING_NOT_SUPPORTED',
        'Batched queries (a JSON array body) are not supported; send one query per request',
      );
    if (body === null || typeof body !== 'object')
      throw reject(
        'BAD_REQUEST',
        'The body must be a JSON object {"query", "variables", "operationName"} sent as application/json',
      );
    source = body as Record<string, unknown>;
  } else {
    source = { ...query };
    if (typeof source.variables === 'string') {
      try {
        source.variables = JSON.parse(source.variables) as unknown;
      } catch {
        throw reject('BAD_REQUEST', 'variables must be a JSON object');
      }
    }
  }
  const text = source.query;
  if (typeof text !== 'string' || text.trim() === '')
    throw reject('BAD_REQUEST', 'query is required (a GraphQL document as a string)');
  const variables = source.variables ?? {};
  if (variables === null || typeof variables !== 'object' || Array.isArray(variables))
    throw reject('BAD_REQUEST', 'variables must be a JSON object');
  const operationName = source.operationName ?? undefined;
  if (operationName !== undefined && typeof operationName !== 'string')
    throw reject('BAD_REQUEST', 'operationName must be a string');
  return { query: text, variables: variables as Record<string, unknown>, operationName };
}

/**
 * Parsed and validated documents by text (a few hundred recent ones): a partner's queries repeat,
 * and the same document object lets grafast reuse its operation plan. Rejections are cached too.
 */
const DOCUMENT_CACHE_SIZE = 500;
const documents = new WeakMap<GraphQLSchema, Map<string, DocumentNode | Rejection>>();

function checkedDocument(schema: GraphQLSchema, text: string): DocumentNode {
  let cache = documents.get(schema);
  if (!cache) documents.set(schema, (cache = new Map()));
  let entry = cache.get(text);
  if (entry === undefined) {
    entry = parseAndValidate(schema, text);
    if (cache.size >= DOCUMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  } else {
    cache.delete(text); // most recently used last
  }
  cache.set(text, entry);
  if (entry instanceof Rejection) throw entry;
  return entry;
}

function parseAndValidate(schema: GraphQLSchema, text: string): DocumentNode | Rejection {
  let document: DocumentNode;
  try {
    document = new MaxTokensParserWLexer(text, { n: LIMITS.tokens, exposeLimits: true }).parseDocument();
  } catch (e) {
    const message = (e as Error).message;
    return reject(/Token limit/.test(message) ? 'MAX_TOKENS_EXCEEDED' : 'GRAPHQL_PARSE_FAILED', message);
  }

  // The armor rules report through the context (not by throwing out of validate).
  const report = { onReject: [(ctx: ValidationContext | null, err: GraphQLError) => ctx?.reportError(err)] };
  const errors = validate(schema, document, [
    ...specifiedRules,
    maxDepthRule({ n: LIMITS.depth, exposeLimits: true, propagateOnRejection: false, ...report }),
    maxAliasesRule({ n: LIMITS.aliases, exposeLimits: true, propagateOnRejection: false, ...report }),
  ]);
  if (errors.length) {
    const messages = errors.map((e) => e.message.replace(/^Syntax Error: /, ''));
    const code = /depth limit/i.test(messages[0]!)
      ? 'MAX_DEPTH_EXCEEDED'
      : /aliases limit/i.test(messages[0]!)
        ? 'MAX_ALIASES_EXCEEDED'
        : 'GRAPHQL_VALIDATION_FAILED';
    return new Rejection(400, code, messages.join('; '));
  }

  return document;
}

/** The cost of a cached document's operation whose connections' `first` are all literals. */
const constantCosts = new WeakMap<OperationDefinitionNode, Cost>();

export function prepareQuery(
  schema: GraphQLSchema,
  method: string,
  params: { query: string; variables: Record<string, unknown>; operationName?: string },
): PreparedQuery {
  const bytes = Buffer.byteLength(params.query);
  if (bytes > LIMITS.bytes)
    throw reject('QUERY_TOO_LARGE', `The query is ${bytes} bytes, over the limit of ${LIMITS.bytes} bytes`, 413);

  const document = checkedDocument(schema, params.query);

  const operation = getOperationAST(document, params.operationName);
  if (!operation)
    throw reject(
      'OPERATION_NOT_FOUND',
      params.operationName
        ? `No operation named ${params.operationName} in the document`
        : 'The document has several operations: name the one to run in operationName',
    );
  if (operation.operation !== 'query') {
    const r = reject(
      'OPERATION_NOT_ALLOWED',
      `Only queries are served; this is a ${operation.operation}`,
      method === 'GET' ? 405 : 400,
    );
    if (method === 'GET') r.headers.Allow = 'GET, POST';
    throw r;
  }

  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], params.variables, { maxErrors: 5 });
  if (coerced.errors) throw reject('BAD_USER_INPUT', coerced.errors.map((e) => e.message).join('; '));
  // PostgreSQL text cannot hold U+0000 (REST's input hygiene refuses it in parameters too).
  if (/\\u0000|\0/.test(params.query) || JSON.stringify(coerced.coerced).includes('\\u0000'))
    throw reject('BAD_USER_INPUT', 'NUL characters (U+0000) are not allowed in arguments or variables');

  let cost = constantCosts.get(operation);
  if (!cost) {
    const fragments: Record<string, FragmentDefinitionNode> = {};
    for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments[def.name.value] = def;
    try {
      cost = queryCost(schema, operation, fragments, coerced.coerced);
    } catch (e) {
      if (e instanceof CostError) throw reject(e.code, e.message, 400, e.code === 'MAX_NODE_LIMIT_EXCEEDED' ? 0 : 1);
      throw e;
    }
    if (!cost.variable) constantCosts.set(operation, cost);
  }
  return { document, operation, operationName: params.operationName, variables: coerced.coerced, cost };
}
