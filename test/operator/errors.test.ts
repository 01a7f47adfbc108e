import net from 'node:net';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startOperatorHarness, type OperatorHarness } from './support';

describe('operator GraphQL: session, errors and timeouts', () => {
  let db: TestDatabase;
  let dev: OperatorHarness;
  let prod: OperatorHarness;

  beforeAll(async () => {
    db = await createTestDatabase();
    // A slow query field, on this test database only.
    await db.owner.query(`
      create function admin.test_sleep(seconds double precision) returns boolean
        language sql stable as $$ select pg_sleep(seconds) is not null $$;
      grant execute on function admin.test_sleep(double precision) to bar_operator;
      create function admin.test_session() returns text
        language sql stable as $$ select current_user || ' ' || current_setting('operator.id', true) $$;
      grant execute on function admin.test_session() to bar_operator`);
    [dev, prod] = await Promise.all([
      startOperatorHarness(db, { env: 'test', statementTimeoutMs: 300 }),
      startOperatorHarness(db, { env: 'production', statementTimeoutMs: 300 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([dev?.close(), prod?.close()]);
    await db?.drop();
  });

  test('each request runs as bar_operator, with the calling operator in operator.id', async () => {
    for (const ops of [dev, prod]) {
      const { rows } = await db.owner.query<{ id: string }>(
        "select id from private.operator_by_token_hash(sha256(convert_to($1, 'UTF8')))",
        [ops.token],
      );
      expect(rows).toHaveLength(1);
      const res = await ops.gql('{ testSession }');
      expect(res.body).toEqual({ data: { testSession: `bar_operator ${rows[0]!.id}` } });
    }
  });

  test('a statement over the timeout is cancelled with a clear message', async () => {
    const ok = await dev.gql('{ testSleep(seconds: 0.01) }');
    expect(ok.body).toEqual({ data: { testSleep: true } });
    for (const ops of [dev, prod]) {
      const started = Date.now();
      const res = await ops.gql('{ testSleep(seconds: 5) }');
      expect(Date.now() - started).toBeLessThan(3000);
      expect(res.body.errors![0]).toMatchObject({
        message: 'The query took too long and was cancelled',
        extensions: { code: '57014' },
      });
    }
  });

  test('an unexpected database error: details outside production, none in production', async () => {
    await db.owner.query('revoke select on admin.plans from bar_operator');
    try {
      const shown = await dev.gql('{ allPlans { nodes { name } } }');
      expect(shown.body.errors![0]!.message).toMatch(/permission denied/);

      const hidden = await prod.gql('{ allPlans { nodes { name } } }');
      expect(hidden.status).toBe(200);
      const error = hidden.body.errors![0]!;
      expect(error.message).toMatch(/^Internal error \(id [0-9a-f-]{36}\)$/);
      expect(error.extensions).toEqual({ errorId: expect.any(String) });
      expect(JSON.stringify(hidden.body.errors)).not.toMatch(/permission|denied|admin\.|relation|42501/i);
    } finally {
      await db.owner.query('grant select on admin.plans to bar_operator');
    }
  });

  test("in production the admin functions' own messages are still shown", async () => {
    const res = await prod.gql(
      'mutation { revokeKey(input: { keyId: "00000000-0000-4000-8000-000000000000" }) { result { status } } }',
    );
    expect(res.body.errors![0]).toMatchObject({
      message: 'unknown key 00000000-0000-4000-8000-000000000000',
      extensions: { code: 'P0002' },
    });
  });

  test('in production errors PostGraphile marks as safe (a bad cursor) are still shown', async () => {
    const res = await prod.gql('{ allPlans(after: "bm90IGEgY3Vyc29y") { nodes { name } } }');
    expect(res.status).toBeLessThan(500);
    expect(res.body.errors![0]!.message).toMatch(/cursor/i);
    expect(res.body.errors![0]!.message).not.toMatch(/^Internal error/);
  });

  test('in production GraphQL validation errors are still shown', async () => {
    const res = await prod.gql('{ allPlans { nodes { keyHash } } }');
    expect(res.status).toBe(400);
    expect(res.body.errors![0]!.message).toMatch(/Cannot query field "keyHash"/);
  });

  test('database unreachable: 503 with Retry-After, and recovery when it returns', async () => {
    const target = new URL(db.url);
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('error', () => undefined).on('close', () => sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const port = (proxy.address() as net.AddressInfo).port;
    const viaProxy = new URL(db.url);
    viaProxy.port = String(port);
    const ops = await startOperatorHarness({ ...db, url: viaProxy.toString() });
    try {
      expect((await ops.gql('{ allPlans { totalCount } }')).status).toBe(200);

      await new Promise<void>((resolve) => {
        proxy.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      const down = await ops.gql('{ allPlans { totalCount } }');
      expect(down.status).toBe(503);
      expect(down.headers.get('retry-after')).toBe('5');
      expect(down.body.error).toBe('Service temporarily unavailable, please retry');

      await new Promise<void>((resolve) => proxy.listen(port, '127.0.0.1', resolve));
      const up = await ops.gql('{ allPlans { totalCount } }');
      expect(up.status).toBe(200);
      expect(up.body.data).toEqual({ allPlans: { totalCount: 1 } });
    } finally {
      await ops.close();
      proxy.close();
      for (const s of sockets) s.destroy();
    }
  });
});
