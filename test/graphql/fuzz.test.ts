/**
 * The fuzz test's GraphQL part: seeded hostile documents and variables
 * (mutated valid queries, hostile argument values, fragment cycles and bombs,
 * wrong variable types, odd bodies) against the real endpoint, guard and
 * database. Every answer is below 500, JSON with X-Request-Id, errors carry a
 * code and the request id, and no answer shows SQL or a stack.
 * FUZZ_SEED and FUZZ_COUNT reproduce or widen a run. The operator endpoint's
 * usage-history and request-log fields (v1.3) get the same treatment.
 */
import request from 'supertest';
import { seedDemoData } from '../../db/seed';
import { GRAPHQL_PATH } from '../../server/graphql/endpoint';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createPlan, issueKey } from '../support/partner';
import { startGraphqlPartner, type GraphqlPartner } from './support';
import { startOperatorHarness, type OperatorHarness } from '../operator/support';
import { testNow } from '../support/clock';

const SEED = Number(process.env.FUZZ_SEED ?? 20261124);
const COUNT = Number(process.env.FUZZ_COUNT ?? 800);

function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  return { next, int, pick };
}

const VALID = [
  '{ bar(id: "1") { id name city { name } events(first: 3) { nodes { title } } } }',
  '{ bars(first: 5, filters: { openNow: true }) { totalCount nodes { id occupancy { status } } } }',
  '{ city(state: "NY", name: "New York City") { bars(first: 3) { nodes { id } } busiestBars(first: 2) { nodes { bar { id } } } } }',
  '{ events(state: "NY", city: "New York City", first: 2) { nodes { id title bar { name } } } }',
  '{ posts(state: "NY", city: "New York City", first: 2) { nodes { id text } } }',
  '{ feed(state: "NY", city: "New York City") { posts(first: 2) { nodes { id } } events(first: 2) { nodes { id } } } }',
  '{ search(q: "tavern", first: 3) { nodes { id type name } } }',
  '{ categories(first: 3) { nodes { slug } } cities(first: 2) { nodes { name } } rateLimit { cost } }',
  'query Q($id: ID!, $n: Int!) { bar(id: $id) { id posts(first: $n) { nodes { id } } } }',
  'query Q($near: NearInput, $f: BarFilters) { bars(first: 3, near: $near, filters: $f) { nodes { id } } }',
];

const HOSTILE_VALUES = [
  '"\\u0000"',
  '"\' OR 1=1--"',
  '"1;select pg_sleep(1)"',
  '"%FF"',
  '"\\ud800"',
  '"🍺"',
  `"${'x'.repeat(300)}"`,
  '""',
  '" "',
  '-1',
  '0',
  '101',
  '2147483648',
  '1e309',
  '-0.0',
  '1.5',
  'null',
  'true',
  '[]',
  '[1, 2]',
  '{}',
  '{ latitude: 91, longitude: 0 }',
  '{ latitude: 40, longitude: -74, radiusMiles: -1 }',
  '{ openAt: "2026-13-40T99:99:99Z" }',
  '{ priceLevels: [0, 9] }',
  '{ minRating: 99 }',
  '"Y3Vyc29yOnYxOi0x"',
  '"bm90IGEgY3Vyc29y"',
  `"${Buffer.from('cursor:v1:99999999999').toString('base64url')}"`,
  '"2026-02-30"',
  '$undefined',
  'ENUM_NOPE',
  'very_busy',
];

const HOSTILE_VARIABLES: unknown[] = [
  { id: 1, n: 'ten' },
  { id: null, n: 1 },
  { id: '1', n: 1e308 },
  { id: '1', n: -5 },
  { id: { $gt: '' }, n: 1 },
  { id: 'x'.repeat(10_000), n: 1 },
  { near: { latitude: 'north' } },
  { near: { latitude: 1e308, longitude: 0 } },
  { f: { statuses: ['party'] } },
  { f: { openNow: true, openAt: '2026-11-22T21:30:00Z' } },
  { __proto__: { polluted: true } },
  [1, 2, 3],
  'variables',
  null,
];

const DOCUMENT_MUTATIONS: ((doc: string, r: ReturnType<typeof rng>) => string)[] = [
  (d, r) => d.slice(0, r.int(d.length)), // truncated
  (d, r) => {
    const i = r.int(d.length);
    return (
      d.slice(0, i) +
      r.pick(['{', '}', '(', ')', '...', '$', '@skip', '"', '#', '\u0000', '🍺', ':', '!', '[']) +
      d.slice(i)
    );
  },
  (d, r) => d.replace(/"[^"]*"|\b\d+\b/, r.pick(HOSTILE_VALUES)), // a hostile argument value
  (d, r) => d.replace(/first: \d+/g, `first: ${r.pick(HOSTILE_VALUES)}`),
  (d) => `${d} ${d}`, // two anonymous operations
  (d) => `query A ${d} mutation B { x }`,
  (d) => `subscription { bar(id: "1") { id } } ${d}`,
  () => 'fragment A on Bar { ...B } fragment B on Bar { ...A } { bar(id: "1") { ...A } }', // cycle
  (_d, r) =>
    `{ bars(first: 1) { nodes { ...F0 } } } ${Array.from({ length: 30 }, (_, i) => `fragment F${i} on Bar { id ${i < 29 ? `...F${i + 1} ...F${i + 1}` : ''} }`).join(' ')}`.slice(
      0,
      r.next() < 0.5 ? 2000 : 10_000,
    ), // a fragment bomb
  (_d, r) => `{ ${'bar(id: "1") { city { '.repeat(r.int(20))} name ${'} }'.repeat(20)} }`, // deep
  (_d, r) => `{ ${Array.from({ length: r.int(40) }, (_, i) => `a${i}: __typename`).join(' ')} }`, // aliases
  (d) => `${d}${' '.repeat(10_001)}`, // too large
  (d) => d.replace('{', '{ __schema { types { name fields { name } } } __type(name: "Bar") { name } '),
  (d) => d.replace(/\bid\b/, '__proto__'),
];

function generate(r: ReturnType<typeof rng>): {
  method: 'get' | 'post' | 'put' | 'delete';
  body: unknown;
  raw?: string;
} {
  const base = r.pick(VALID);
  const doc = r.next() < 0.85 ? r.pick(DOCUMENT_MUTATIONS)(base, r) : base;
  const variables = r.next() < 0.4 ? r.pick(HOSTILE_VARIABLES) : undefined;
  const shape = r.next();
  if (shape < 0.05) return { method: 'post', body: [{ query: doc }, { query: doc }] };
  if (shape < 0.08)
    return {
      method: 'post',
      body: null,
      raw: r.pick(['{"query":', 'not json', '"just a string"', '42', '{"query": 5}', '\u0000']),
    };
  if (shape < 0.1) return { method: r.pick(['put', 'delete'] as const), body: { query: doc } };
  // (a GET's query string stays under Node's 16 KB header limit, which answers before any app code)
  if (shape < 0.25 && doc.length < 4000)
    return {
      method: 'get',
      body: { query: doc, variables: variables === undefined ? undefined : JSON.stringify(variables) },
    };
  return {
    method: 'post',
    body: { query: doc, variables, operationName: r.next() < 0.1 ? r.pick(['A', 'B', 'Nope', '']) : undefined },
  };
}

describe('fuzz: hostile GraphQL documents and variables', () => {
  let db: TestDatabase;
  let partner: GraphqlPartner;
  let key: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    await seedDemoData(db.url, { bars: 60, seed: 5, now: testNow() });
    partner = await startGraphqlPartner(db);
    key = (await issueKey(db.owner, { plan: await createPlan(db.owner, null) })).apiKey;
  }, 60_000);
  afterAll(async () => {
    await partner?.close();
    await db?.drop();
  });

  test(`${COUNT} generated requests (seed ${SEED}): no 5xx, JSON, codes and request ids, no SQL or stack`, async () => {
    const r = rng(SEED);
    const cases = Array.from({ length: COUNT }, () => generate(r));
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const c = cases[next++]!;
        let req = request(partner.app)[c.method](GRAPHQL_PATH).set('Authorization', `Bearer ${key}`);
        if (c.method === 'get') req = req.query(c.body as Record<string, string>);
        else if (c.raw !== undefined) req = req.set('Content-Type', 'application/json').send(c.raw);
        else req = req.send(c.body as object);
        const res = await req;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const problem = judge(res.status, res.headers, res.text);
        if (problem && failures.length < 20) failures.push(`${problem}\n  request: ${JSON.stringify(c).slice(0, 400)}`);
      }
    };
    await Promise.all(Array.from({ length: 6 }, worker));
    expect(failures).toEqual([]);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(COUNT / 20); // real answers too
    expect(statuses.get(400) ?? 0).toBeGreaterThan(COUNT / 10);
  }, 180_000);

  test('a NUL character in an argument or a variable is a 400 naming it, never an internal error', async () => {
    const send = (body: object) =>
      request(partner.app).post(GRAPHQL_PATH).set('Authorization', `Bearer ${key}`).send(body);
    for (const body of [
      { query: '{ bar(id: "1\\u0000") { id } }' },
      { query: '{ search(q: "a\\u0000b", first: 5) { totalCount } }' },
      { query: 'query Q($id: ID!) { bar(id: $id) { id } }', variables: { id: '7\u0000' } },
    ]) {
      const res = await send(body);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      expect(res.body.errors[0].message).toMatch(/NUL/);
    }
  });
});

function judge(status: number, headers: Record<string, string>, text: string): string | undefined {
  if (!(status >= 200 && status < 500)) return `status ${status}: ${text.slice(0, 300)}`;
  if (!headers['x-request-id']) return `no X-Request-Id (status ${status})`;
  if (!/^application\/(graphql-response\+)?json/.test(headers['content-type'] ?? ''))
    return `not JSON: ${headers['content-type']}`;
  if (/\bselect\b.*\bfrom\b|\bapi\.[a-z_]+\(|private\.|\n\s+at .*\.(ts|js):\d+/i.test(text))
    return `SQL or a stack: ${text.slice(0, 300)}`;
  let body: { errors?: { extensions?: { code?: unknown; request_id?: unknown } }[]; error?: unknown; data?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return `body is not JSON (status ${status}): ${text.slice(0, 200)}`;
  }
  if (status === 405) return typeof body.error === 'string' ? undefined : `a 405 without "error"`;
  if (status >= 400 && !body.errors?.length) return `a ${status} without errors: ${text.slice(0, 200)}`;
  if (status === 200 && !('data' in body)) return `a 200 without data: ${text.slice(0, 200)}`;
  for (const e of body.errors ?? []) {
    if (typeof e.extensions?.code !== 'string') return `an error without a code: ${text.slice(0, 200)}`;
    if (e.extensions.request_id !== headers['x-request-id'])
      return `an error without the request id: ${text.slice(0, 200)}`;
  }
  return undefined;
}

// ---------------------------------------------------------------- the operator endpoint's v1.3 fields

const OPERATOR_VALID = [
  '{ allHourlyUsages(first: 5) { totalCount aggregates { sum { requests status4Xx rateLimited } } } }',
  '{ allHourlyUsages { groupedAggregates(groupBy: [API_KEY_ID, ENDPOINT]) { keys sum { requests } } } }',
  '{ hourlyUsageSince(since: "2026-11-24T00:00:00Z", orderBy: [HOUR_DESC]) { nodes { hour endpoint requests } } }',
  '{ requestLogSince(since: "2026-11-24T00:00:00Z", first: 10) { totalCount nodes { requestId status path } } }',
  '{ requestLogEntries(requestId: "op-fuzz-1") { nodes { requestId status subscriberId error } } }',
  '{ allRequestLogs(condition: { status: 400 }, first: 3) { nodes { requestId keyPrefix } } }',
  '{ allApiKeys(first: 3) { nodes { keyPrefix bucketsNow { minute { limit used remaining reset } } } } }',
  'query Q($s: Datetime!, $id: String!) { requestLogSince(since: $s) { totalCount } requestLogEntries(requestId: $id) { totalCount } }',
];
const OPERATOR_VARIABLES: unknown[] = [
  { s: 'not a date', id: 'x' },
  { s: '2026-13-45T99:00:00Z', id: '\u0000' },
  { s: null, id: null },
  { s: 5, id: 7 },
  { s: '2026-11-24T00:00:00Z', id: 'x'.repeat(20_000) },
  { s: 'infinity', id: "' OR 1=1--" },
  { s: '-infinity', id: '%FF' },
  { s: '294277-01-01T00:00:00Z', id: '' },
];

describe('fuzz: hostile arguments to the operator usage history and request log fields', () => {
  let db: TestDatabase;
  let ops: OperatorHarness;

  beforeAll(async () => {
    db = await createTestDatabase();
    ops = await startOperatorHarness(db);
  }, 60_000);
  afterAll(async () => {
    await ops?.close();
    await db?.drop();
  });

  test(`${Math.ceil(COUNT / 4)} generated operator documents (seed ${SEED}): no 5xx, JSON, no SQL or stack`, async () => {
    const r = rng(SEED + 1);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (let i = 0; i < Math.ceil(COUNT / 4); i++) {
      const base = r.pick(OPERATOR_VALID);
      const doc =
        r.next() < 0.7
          ? r.pick([
              ...DOCUMENT_MUTATIONS.slice(0, 4),
              (d: string) => d.replace(/"[^"]*"/g, () => r.pick(HOSTILE_VALUES)),
              (d: string) => d.replace(/first: \d+/, `first: ${r.pick(['-1', '0', '100000', '1e9', 'null'])}`),
              (d: string) => d.replace(/\[([A-Z_, ]+)\]/, `[${r.pick(['NOPE', '', 'HOUR, HOUR', '"HOUR"'])}]`),
            ])(base, r)
          : base;
      const variables = base.startsWith('query') ? r.pick(OPERATOR_VARIABLES) : undefined;
      const res = await ops.gql(doc, variables as Record<string, unknown> | undefined);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      const text = JSON.stringify(res.body);
      let problem: string | undefined;
      if (res.status >= 500) problem = `status ${res.status}: ${text.slice(0, 300)}`;
      else if (!res.body.data && !res.body.errors?.length) problem = `neither data nor errors: ${text.slice(0, 200)}`;
      else if (/\bselect\b.*\bfrom\b|private\.|\n\s+at .*\.(ts|js):\d+/i.test(text))
        problem = `SQL or a stack: ${text.slice(0, 300)}`;
      if (problem && failures.length < 20) failures.push(`${problem}\n  document: ${doc.slice(0, 300)}`);
    }
    expect(failures).toEqual([]);
    expect(statuses.get(200) ?? 0).toBeGreaterThan(0);
    expect(statuses.get(400) ?? 0).toBeGreaterThan(0);
  }, 120_000);
});
