/**
 * Deprecations in the partner GraphQL endpoint (beta), declared here with an injected clock: a
 * query that selects a deprecated field or gives a deprecated argument gets the Deprecation,
 * Sunset and Link headers and is counted with the REST calls (GET usage); after the sunset it is
 * refused with 410 and the error code GONE; a query that uses nothing deprecated is untouched.
 */
import request from 'supertest';
import { E, type Deprecation } from '../../server/contract/endpoints';
import { openApiFor } from '../../server/openapi/document';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { bearer, issueKey } from '../support/partner';
import { gql, startGraphqlPartner, type GraphqlPartner } from './support';

const Q_PARAM: Deprecation = {
  endpoint: E.cities,
  parameter: 'q',
  graphql: 'Query.cities(q)',
  since: '2026-01-15',
  sunset: '2026-07-15',
  replacement: 'search(q:, type: CITY)',
  changelog: 'https://api.example.test/changelog#cities-q',
};
const PRICE: Deprecation = {
  endpoint: E.bar,
  field: 'BarDetail.price_level',
  graphql: 'Bar.priceLevel',
  since: '2026-02-01',
  sunset: '2026-09-01',
  replacement: 'the price level of GET bars',
  changelog: '/api/v1/partner/changelog#price-level',
};
const LIST = [Q_PARAM, PRICE];

describe('deprecations in the GraphQL endpoint', () => {
  let db: TestDatabase;
  let partner: GraphqlPartner;
  let now = Date.parse('2026-03-10T12:00:00Z');

  beforeAll(async () => {
    db = await createTestDatabase();
    partner = await startGraphqlPartner(db, { deprecations: { list: LIST, now: () => now } });
  });
  afterAll(async () => {
    await partner?.close();
    await db?.drop();
  });

  test('a deprecated argument and a deprecated field: headers, counted with REST in GET usage', async () => {
    const key = await issueKey(db.owner);
    now = Date.parse('2026-03-10T12:00:00Z');
    const res = await gql(partner.app, key.apiKey, '{ cities(first: 5, q: "aus") { totalCount } }').expect(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.headers.deprecation).toBe(`@${Date.UTC(2026, 0, 15) / 1000}`);
    expect(res.headers.sunset).toBe('Wed, 15 Jul 2026 00:00:00 GMT');
    expect(res.headers.link).toBe(`<${Q_PARAM.changelog}>; rel="deprecation"`);

    const plain = await gql(partner.app, key.apiKey, '{ cities(first: 5) { totalCount } }').expect(200);
    expect(plain.headers.deprecation).toBeUndefined();
    expect(plain.headers.link).toBeUndefined();

    // both in one query (through a fragment): the earliest deprecation and sunset, both links
    const both = await gql(
      partner.app,
      key.apiKey,
      '{ cities(first: 1, q: "x") { totalCount } bars(first: 1) { nodes { ...P } } } fragment P on Bar { priceLevel }',
    ).expect(200);
    expect(both.headers.deprecation).toBe(`@${Date.UTC(2026, 0, 15) / 1000}`);
    expect(both.headers.sunset).toBe('Wed, 15 Jul 2026 00:00:00 GMT');
    expect(both.headers.link).toBe(
      `<${Q_PARAM.changelog}>; rel="deprecation", <${PRICE.changelog}>; rel="deprecation"`,
    );

    await partner.guard.deprecatedCalls.flush();
    const usage = await request(partner.app).get('/api/v1/partner/usage').set(bearer(key.apiKey)).expect(200);
    expect(usage.body.deprecated_calls).toEqual([
      {
        what: 'GET /bars/{id} field BarDetail.price_level',
        sunset: '2026-09-01T00:00:00Z',
        calls_last_14_days: 1,
        last_call_at: '2026-03-10T12:00:00Z',
      },
      {
        what: 'GET /cities parameter q',
        sunset: '2026-07-15T00:00:00Z',
        calls_last_14_days: 2,
        last_call_at: '2026-03-10T12:00:00Z',
      },
    ]);
  });

  test('after the sunset: 410 with the error code GONE, nothing executed; other queries run', async () => {
    const key = await issueKey(db.owner);
    now = Date.parse('2026-07-15T00:00:00Z');
    partner.statements.reset();
    const gone = await gql(partner.app, key.apiKey, '{ cities(first: 5, q: "aus") { totalCount } }').expect(410);
    expect(gone.body.errors).toEqual([
      {
        message: 'GET /cities parameter q was removed on 2026-07-15; use instead: search(q:, type: CITY)',
        extensions: { code: 'GONE', request_id: gone.headers['x-request-id'] },
      },
    ]);
    expect(gone.headers.sunset).toBe('Wed, 15 Jul 2026 00:00:00 GMT');
    expect(partner.statements.graphql).toEqual([]); // refused before execution
    // the field's sunset is later: still served, with its headers
    const field = await gql(partner.app, key.apiKey, '{ bars(first: 1) { nodes { priceLevel } } }').expect(200);
    expect(field.headers.sunset).toBe('Tue, 01 Sep 2026 00:00:00 GMT');
    now = Date.parse('2026-09-01T00:00:00Z');
    const fieldGone = await gql(partner.app, key.apiKey, '{ bars(first: 1) { nodes { priceLevel } } }').expect(410);
    expect(fieldGone.body.errors[0].extensions.code).toBe('GONE');
    await gql(partner.app, key.apiKey, '{ bars(first: 1) { nodes { name } } }').expect(200);
  });

  test('the OpenAPI document gives the GraphQL operations the headers and the 410', () => {
    const doc = openApiFor(LIST) as unknown as {
      paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>>;
    };
    for (const method of ['get', 'post']) {
      const responses = doc.paths['/graphql']![method]!.responses;
      expect(Object.keys(responses['200']!.headers!)).toEqual(
        expect.arrayContaining(['Deprecation', 'Sunset', 'Link']),
      );
      expect(responses['410']).toBeDefined();
    }
  });
});
