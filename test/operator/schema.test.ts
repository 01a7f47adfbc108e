import { getIntrospectionQuery, type IntrospectionQuery, type IntrospectionType } from 'graphql';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startOperatorHarness, type OperatorHarness } from './support';

/** Every named field, input field and argument of the schema, as "Type.field" / "Type.field(arg)". */
function allNames(schema: IntrospectionQuery['__schema']): string[] {
  const names: string[] = [];
  for (const type of schema.types as IntrospectionType[]) {
    if (type.name.startsWith('__')) continue;
    if (type.kind === 'OBJECT' || type.kind === 'INTERFACE') {
      for (const field of type.fields) {
        names.push(`${type.name}.${field.name}`);
        for (const arg of field.args) names.push(`${type.name}.${field.name}(${arg.name})`);
      }
    }
    if (type.kind === 'INPUT_OBJECT') for (const field of type.inputFields) names.push(`${type.name}.${field.name}`);
    if (type.kind === 'ENUM') for (const value of type.enumValues) names.push(`${type.name}.${value.name}`);
  }
  return names;
}

describe('operator GraphQL: what the schema exposes', () => {
  let db: TestDatabase;
  let ops: OperatorHarness;
  let schema: IntrospectionQuery['__schema'];

  beforeAll(async () => {
    db = await createTestDatabase();
    const city = await db.owner.query<{ id: number }>(
      "insert into private.cities (name, state, time_zone, latitude, longitude) values ('Austin', 'TX', 'America/Chicago', 30.27, -97.74) returning id",
    );
    await db.owner.query(
      "insert into private.bars (city_id, name, address, latitude, longitude) values ($1, 'The Tap', '1 Main St', 30.27, -97.74)",
      [city.rows[0]!.id],
    );
    ops = await startOperatorHarness(db);
    const res = await ops.gql<IntrospectionQuery>(getIntrospectionQuery({ descriptions: true }));
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    schema = res.body.data!.__schema;
  });
  afterAll(async () => {
    await ops?.close();
    await db?.drop();
  });

  test('the full introspection query (as GraphiQL sends it) passes the depth and size limits', () => {
    expect(schema.queryType.name).toBe('Query');
    expect(schema.types.length).toBeGreaterThan(20);
  });

  test('no field, argument or enum value could carry a key secret, hash or token', () => {
    // The one exception: what issueKey returns (the new key, shown once).
    const once = new Set(['IssuedKey', 'IssueKeyPayload']);
    const suspicious = allNames(schema).filter((n) => /hash|secret|token/i.test(n) && !once.has(n.split('.')[0]!));
    expect(suspicious).toEqual([]);
    // and the shown-once key is only reachable from the issueKey mutation
    const issued = (schema.types as IntrospectionType[]).find((t) => t.name === 'IssuedKey');
    expect(issued).toBeDefined();
    const referencing = allNames(schema).filter((n) => /IssuedKey/.test(n));
    expect(referencing.every((n) => n.startsWith('IssueKeyPayload') || n.startsWith('IssuedKey'))).toBe(true);
  });

  test('api keys expose their prefix and state only; operators are not exposed at all', () => {
    const apiKey = (schema.types as IntrospectionType[]).find((t) => t.name === 'ApiKey');
    expect(apiKey?.kind).toBe('OBJECT');
    const fields = apiKey!.kind === 'OBJECT' ? apiKey!.fields.map((f) => f.name) : [];
    expect(fields).toEqual(
      expect.arrayContaining(['rowId', 'subscriberId', 'keyPrefix', 'status', 'createdAt', 'revokedAt', 'lastUsedAt']),
    );
    expect(fields).not.toContain('keyHash');
    const names = allNames(schema);
    expect(names.filter((n) => /operator/i.test(n))).toEqual([]);
    expect(names).not.toContain('Query.apiKeyByKeyHash');
  });

  test('mutations are exactly the operator actions: no generic create/update/delete', () => {
    const mutation = (schema.types as IntrospectionType[]).find((t) => t.name === schema.mutationType?.name);
    const fields = mutation && mutation.kind === 'OBJECT' ? mutation.fields.map((f) => f.name).sort() : [];
    expect(fields).toEqual([
      'activateSubscriber',
      'clearContactBounce',
      'createPlan',
      'createSubscriber',
      'issueKey',
      'revokeKey',
      'setAlertContacts',
      'setSubscriberPlan',
      'setSubscriptionEndsAt',
      'suspendSubscriber',
    ]);
  });

  test('queries cover the admin schema and read-only bar data, nothing else', () => {
    const query = (schema.types as IntrospectionType[]).find((t) => t.name === 'Query');
    const fields = query && query.kind === 'OBJECT' ? query.fields.map((f) => f.name) : [];
    expect(fields).toEqual(
      expect.arrayContaining([
        'allPlans',
        'allSubscribers',
        'allApiKeys',
        'allUsageAlerts',
        'allDailyUsages',
        'allBars',
        'allCities',
        'usageAlertsSince',
        'dailyUsageSince',
      ]),
    );
    // private tables are not in the exposed schema (only the admin views over bars and cities)
    expect(fields.filter((f) => /event|post|photo|occupanc|categor|user|group/i.test(f))).toEqual([]);
  });

  test('bar data reads through the admin views', async () => {
    const res = await ops.gql('{ allBars { nodes { name city state cityByCityId { name timeZone } } } }');
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.allBars.nodes).toEqual([
      { name: 'The Tap', city: 'Austin', state: 'TX', cityByCityId: { name: 'Austin', timeZone: 'America/Chicago' } },
    ]);
  });

  test('the database refuses writes for bar_operator (privileges, not just the schema)', async () => {
    const { rows } = await db.owner.query<{ table: string; writable: boolean }>(`
      select c.relname as table,
             has_table_privilege('bar_operator', c.oid, 'insert, update, delete, truncate') as writable
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname in ('admin', 'private') and c.relkind in ('r', 'v')`);
    expect(rows.length).toBeGreaterThan(5);
    expect(rows.filter((r) => r.writable)).toEqual([]);
    const hash = await db.owner.query<{ can: boolean }>(
      "select has_column_privilege('bar_operator', 'admin.api_keys', 'key_hash', 'select') as can",
    );
    expect(hash.rows[0]!.can).toBe(false);
    const token = await db.owner.query<{ can: boolean }>(
      "select has_column_privilege('bar_operator', 'admin.operators', 'token_hash', 'select') as can",
    );
    expect(token.rows[0]!.can).toBe(false);
  });

  test('a generic CRUD mutation is a 400 validation error', async () => {
    const res = await ops.gql(
      'mutation { updateSubscriber(input: { id: "x", patch: { status: "active" } }) { clientMutationId } }',
    );
    expect(res.status).toBe(400);
    expect(res.body.errors![0]!.message).toMatch(/Cannot query field "updateSubscriber"/);
  });

  describe('bounded queries', () => {
    const nest = (depth: number): string => {
      // allSubscribers > nodes > apiKeysBySubscriberId > nodes > subscriberBySubscriberId > ... (2 levels per hop)
      let inner = 'name';
      for (let i = 0; i < depth; i++)
        inner = i % 2 === 0 ? `apiKeysBySubscriberId { nodes { subscriberBySubscriberId { ${inner} } } }` : inner;
      return `{ allSubscribers { nodes { ${inner} } } }`;
    };

    test('a query within the depth limit runs', async () => {
      const res = await ops.gql(nest(3));
      expect(res.status).toBe(200);
      expect(res.body.errors).toBeUndefined();
    });

    test('a query nested too deep is refused before it runs', async () => {
      const res = await ops.gql(nest(9));
      expect(res.status).toBe(400);
      expect(res.body.errors![0]!.message).toMatch(/^Query depth \d+ exceeds the maximum of 10$/);
    });

    test('depth through fragments counts too', async () => {
      const res = await ops.gql(`
        query { allSubscribers { nodes { ...S } } }
        fragment S on Subscriber { apiKeysBySubscriberId { nodes { ...K } } }
        fragment K on ApiKey { subscriberBySubscriberId { apiKeysBySubscriberId { nodes { subscriberBySubscriberId {
          apiKeysBySubscriberId { nodes { rowId } } } } } } }`);
      expect(res.status).toBe(400);
      expect(res.body.errors![0]!.message).toMatch(/Query depth/);
    });

    test('too many aliases are refused', async () => {
      const aliases = Array.from({ length: 21 }, (_, i) => `a${i}: allPlans { totalCount }`).join(' ');
      const res = await ops.gql(`{ ${aliases} }`);
      expect(res.status).toBe(400);
      expect(res.body.errors!.map((e) => e.message)).toContain('Query alias count 21 exceeds the maximum of 20');
    });

    test('a fragment "bomb" is refused by its field count', async () => {
      const fragments = ['fragment F0 on Plan { name perMinute perDay perMonth createdAt }'];
      for (let i = 1; i <= 8; i++) fragments.push(`fragment F${i} on Plan { ...F${i - 1} ...F${i - 1} }`);
      const res = await ops.gql(`{ allPlans { nodes { ...F8 } } } ${fragments.join(' ')}`);
      expect(res.status).toBe(400);
      expect(res.body.errors!.map((e) => e.message).join('\n')).toMatch(
        /Query field count \d+ exceeds the maximum of 500/,
      );
    });

    test('a request body over the size limit is refused', async () => {
      const res = await ops.gql(`{ allPlans { totalCount } } # ${'x'.repeat(60_000)}`);
      expect(res.status).toBe(413);
    });

    test('malformed GraphQL is a 400, not a 500', async () => {
      const res = await ops.gql('{ allPlans { ');
      expect(res.status).toBe(400);
      expect(res.body.errors![0]!.message).toMatch(/Syntax Error/);
    });
  });
});
