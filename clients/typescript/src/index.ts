/**
 * @partner-bar/client: a typed client of the Partner Bar Data API.
 *
 *   const api = createClient({ baseUrl: 'https://api.example.com', apiKey: process.env.PARTNER_API_KEY! });
 *   const { bar } = await api.get('/bars/{id}', { params: { path: { id: '42' } } });
 *
 * See README.md.
 */
export {
  API_PREFIX,
  PAGED,
  createClient,
  type ClientOptions,
  type ExportLine,
  type ExportPath,
  type GraphqlDocument,
  type GraphqlResult,
  type InitArgs,
  type JsonPath,
  type PageItem,
  type PagedPath,
  type PartnerClient,
  type RequestInit,
  type RequestParams,
  type ResponseBody,
  type TextPath,
} from './client';
export { PartnerApiError, PartnerGraphqlError, type GraphqlError } from './errors';
export {
  deprecationLink,
  retryDelayMs,
  type DeprecationEvent,
  type EtagOptions,
  type RetryEvent,
  type RetryOptions,
} from './transport';
export type { components, operations, paths } from './generated/openapi';
/** Typed GraphQL documents (generated from clients/typescript/graphql/*.graphql) and the schema's types. */
export * as gql from './generated/graphql/graphql';
export { graphql } from './generated/graphql';
