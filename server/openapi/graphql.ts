/**
 * What the OpenAPI document (and so the docs page) says about the GraphQL
 * endpoint (beta): its paths and a section of the introduction. The schema
 * itself is published as SDL (graphql/schema.graphql), not as JSON Schema.
 */
const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });
const header = (name: string) => ({ $ref: `#/components/headers/${name}` });
const beta = {
  'X-API-Beta': { description: 'graphql: the endpoint is a beta', required: true, schema: { const: 'graphql' } },
};
const rateLimitHeaders = Object.fromEntries(
  ['Limit', 'Remaining', 'Reset'].flatMap((k) =>
    ['', '-Minute', '-Day', '-Month'].map((s) => [`X-RateLimit-${k}${s}`, header(`X-RateLimit-${k}${s}`)]),
  ),
);

const graphqlResponse = {
  type: 'object',
  properties: {
    data: { description: 'the query result (null when a non-null field failed)' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          message: { type: 'string' },
          path: { type: 'array', items: { type: ['string', 'integer'] } },
          extensions: {
            type: 'object',
            properties: {
              code: {
                type: 'string',
                description:
                  'BAD_USER_INPUT, NOT_FOUND, QUERY_TOO_LARGE, MAX_TOKENS_EXCEEDED, MAX_DEPTH_EXCEEDED, MAX_ALIASES_EXCEEDED, MAX_NODE_LIMIT_EXCEEDED, GRAPHQL_PARSE_FAILED, GRAPHQL_VALIDATION_FAILED, BATCHING_NOT_SUPPORTED, ...',
              },
              request_id: { type: 'string' },
            },
            required: ['code', 'request_id'],
          },
        },
        required: ['message', 'extensions'],
      },
    },
    extensions: {
      type: 'object',
      properties: {
        cost: {
          type: 'object',
          properties: {
            requestedPoints: { type: 'integer', minimum: 1 },
            nodeLimit: { type: 'integer', const: 10000 },
            remaining: { type: 'integer' },
          },
          required: ['requestedPoints', 'nodeLimit', 'remaining'],
        },
      },
    },
  },
};

const answers = (extra: Record<string, unknown> = {}) => ({
  200: {
    description: 'Executed: data, errors of fields that failed, extensions.cost',
    headers: { 'X-Request-Id': header('X-Request-Id'), ...beta, ...rateLimitHeaders },
    content: {
      'application/json': { schema: graphqlResponse },
      'application/graphql-response+json': { schema: graphqlResponse },
    },
  },
  400: {
    description:
      'Rejected before execution (nothing read): a bound, the node limit (charged nothing), a syntax or validation error, a batch',
    headers: { 'X-Request-Id': header('X-Request-Id'), ...beta, ...rateLimitHeaders },
    content: { 'application/json': { schema: graphqlResponse } },
  },
  401: ref('Unauthorized'),
  403: ref('Forbidden'),
  413: {
    description: 'The query text is over 10,000 bytes (or the body over 64 KB)',
    headers: { 'X-Request-Id': header('X-Request-Id'), ...beta },
    content: { 'application/json': { schema: graphqlResponse } },
  },
  429: ref('TooManyRequests'),
  503: ref('Unavailable'),
  ...extra,
});

const queryParameters = [
  {
    name: 'query',
    in: 'query',
    required: true,
    schema: { type: 'string', maxLength: 10000 },
    description: 'the GraphQL document',
  },
  { name: 'variables', in: 'query', required: false, schema: { type: 'string' }, description: 'a JSON object' },
  {
    name: 'operationName',
    in: 'query',
    required: false,
    schema: { type: 'string' },
    description: 'the operation to run',
  },
];

export const graphqlPaths = {
  '/graphql': {
    get: {
      operationId: 'graphqlGet',
      tags: ['GraphQL (beta)'],
      summary: 'GraphQL (beta): run a query given in the query string',
      description: 'Queries only. The schema: GET /graphql/schema.graphql; cost and limits: the introduction above.',
      parameters: queryParameters,
      responses: answers({
        405: {
          description: 'A mutation over GET',
          headers: { 'X-Request-Id': header('X-Request-Id') },
          content: { 'application/json': { schema: graphqlResponse } },
        },
      }),
    },
    post: {
      operationId: 'graphqlPost',
      tags: ['GraphQL (beta)'],
      summary: 'GraphQL (beta): run a query',
      description:
        'Body `{"query", "variables"?, "operationName"?}` (one query; a JSON array is a 400). Example: `{"query": "{ bar(id: \\"1\\") { name occupancy { status } } rateLimit { cost remaining } }"}`',
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: {
                query: { type: 'string', maxLength: 10000 },
                variables: { type: 'object' },
                operationName: { type: 'string' },
              },
              required: ['query'],
            },
          },
        },
      },
      responses: answers(),
    },
  },
  '/graphql/schema.graphql': {
    get: {
      operationId: 'graphqlSchema',
      tags: ['GraphQL (beta)'],
      summary: 'GraphQL (beta): the schema as SDL (no authentication)',
      security: [],
      responses: {
        200: {
          description: 'The published schema (GraphQL SDL)',
          headers: { 'X-Request-Id': header('X-Request-Id'), ...beta },
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
        304: { description: 'Not Modified' },
        405: ref('MethodNotAllowed'),
      },
    },
  },
  '/graphql/explorer': {
    get: {
      operationId: 'graphqlExplorer',
      tags: ['GraphQL (beta)'],
      summary: 'GraphQL (beta): an in-browser explorer (no authentication; queries need your key)',
      security: [],
      responses: {
        200: {
          description: 'HTML page (ruru / GraphiQL); type your key into its Headers pane',
          headers: { 'X-Request-Id': header('X-Request-Id'), ...beta },
          content: { 'text/html': { schema: { type: 'string' } } },
        },
        304: { description: 'Not Modified' },
        405: ref('MethodNotAllowed'),
      },
    },
  },
};

export const GRAPHQL_INTRODUCTION = `

## GraphQL (beta)

\`POST /api/v1/partner/graphql\` (or \`GET\` with \`query\`) serves the same data and rules as the REST endpoints,
typed, with your usual key: \`bar(id)\`, \`bars(...)\`, \`city(state, name) { bars busiestBars eventsToday groups }\`,
\`events\`, \`posts\`, \`feed\`, \`search\`, \`categories\`, \`cities\`, \`rateLimit\`. Lists are Relay connections
(\`first\` 1-100 required, \`after\`, \`totalCount\`, \`pageInfo\`). Schema: [schema.graphql](/api/v1/partner/graphql/schema.graphql);
try it in the [explorer](/api/v1/partner/graphql/explorer).

**Cost** (as GitHub counts it): before anything runs, the query's node limit (each connection's \`first\` times its
parents' \`first\`, summed) must be at most **10,000** (else a 400, charged nothing). A query costs
\`max(1, ceil(connections / 100))\` **points**, charged as that many requests to each of your buckets (429 when
they do not fit, charged nothing). The answer has \`extensions.cost {requestedPoints, nodeLimit, remaining}\`.

**Bounds**: text 10,000 bytes, 2,000 tokens, depth 10, 20 aliases, one operation, no batching; each breach is a
400 naming it. Answers carry \`X-API-Beta: graphql\`; the beta may change with notice in the changelog.`;
