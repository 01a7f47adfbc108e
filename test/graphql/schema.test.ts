import { readFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { GRAPHQL_PATH, SCHEMA_PATH } from '../../server/graphql/endpoint';
import { schemaChanges, SCHEMA_FILE } from '../../scripts/graphql-schema';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { issueKey } from '../support/partner';
import { gql, startGraphqlPartner, type GraphqlPartner } from './support';

const INTROSPECTION = `{ __schema { types { name fields { name args { name } } inputFields { name } enumValues { name } } } }`;
const FORBIDDEN = /credential|plan|usage|alert|webhook|operator|subscriber|api_?key|admin/i;

describe('published partner GraphQL schema', () => {
  let db: TestDatabase;
  let partner: GraphqlPartner;
  let key: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    partner = await startGraphqlPartner(db);
    key = (await issueKey(db.owner)).apiKey;
  });
  afterAll(async () => {
    await partner?.close();
    await db?.drop();
  });

  test('GET schema.graphql (public) is the committed file, byte for byte', async () => {
    const res = await request(partner.app).get(SCHEMA_PATH).expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.headers['x-api-beta']).toBe('graphql');
    expect(res.text).toBe(readFileSync(path.join(__dirname, '../..', SCHEMA_FILE), 'utf8'));
  });

  test('introspection works and shows partner types only', async () => {
    const res = await gql(partner.app, key, INTROSPECTION).expect(200);
    const types = (res.body as { data: { __schema: { types: Record<string, unknown>[] } } }).data.__schema.types;
    const names = JSON.stringify(types.filter((t) => !String(t.name).startsWith('__')));
    expect(types.map((t) => t.name)).toEqual(
      expect.arrayContaining(['Bar', 'City', 'Event', 'Post', 'Category', 'Group', 'SearchResult', 'RateLimit']),
    );
    expect(names).not.toMatch(FORBIDDEN);
    // the test can fail: the pattern finds such a name where one is
    expect(JSON.stringify([{ name: 'UsageAlert' }])).toMatch(FORBIDDEN);
    const mutation = await gql(partner.app, key, '{ __schema { mutationType { name } subscriptionType { name } } }');
    expect(mutation.body.data.__schema).toEqual({ mutationType: null, subscriptionType: null });
  });

  test('schema changes are classified by @graphql-inspector/core (the CI step)', async () => {
    const before = 'type Query { bar(id: ID!): Bar } type Bar { id: ID! name: String! }';
    const removed = await schemaChanges(before, 'type Query { bar(id: ID!): Bar } type Bar { id: ID! }');
    expect(removed).toEqual([expect.objectContaining({ level: 'BREAKING', message: expect.stringMatching(/name/) })]);
    const added = await schemaChanges(
      before,
      'type Query { bar(id: ID!): Bar } type Bar { id: ID! name: String! phone: String }',
    );
    expect(added.map((c) => c.level)).toEqual(['NON_BREAKING']);
  });

  test('an unauthenticated GraphQL request reaches no schema', async () => {
    const res = await request(partner.app).post(GRAPHQL_PATH).send({ query: INTROSPECTION });
    expect(res.status).toBe(401);
    expect(JSON.stringify(res.body)).not.toMatch(/Bar|__schema/);
  });
});
