/**
 * The operator server in a real Node process (whatever `node` runs the tests:
 * Node 20 on the CI machine, despite PostGraphile's engines field), with the
 * ruru GraphiQL IDE that jest's VM cannot load.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createOperatorToken } from './support';

interface Child {
  url: string;
  process: ChildProcessWithoutNullStreams;
}

function startChild(databaseUrl: string, env: string): Promise<Child> {
  const child = spawn(process.execPath, [path.join(__dirname, 'child-server.js'), databaseUrl, env], {
    env: { ...process.env, NODE_ENV: env },
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n')) resolve({ url: (JSON.parse(line!) as { url: string }).url, process: child });
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    child.once('exit', (code) => reject(new Error(`operator server exited with ${code}: ${err}`)));
  });
}

function stopChild(child: Child | undefined): Promise<void> {
  if (!child || child.process.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.process.once('exit', () => resolve());
    child.process.stdin.end();
  });
}

describe('operator GraphQL in a plain Node process', () => {
  let db: TestDatabase;
  let token: string;
  let dev: Child | undefined;
  let prod: Child | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    token = await createOperatorToken(db);
    [dev, prod] = await Promise.all([startChild(db.url, 'development'), startChild(db.url, 'production')]);
  });
  afterAll(async () => {
    await Promise.all([stopChild(dev), stopChild(prod)]);
    await db?.drop();
  });

  const query = (url: string) =>
    fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: '{ allPlans { nodes { name perMinute } } }' }),
    });

  test.each(['development', 'production'])('answers queries (%s)', async (mode) => {
    const res = await query(mode === 'production' ? prod!.url : dev!.url);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { allPlans: { nodes: [{ name: 'standard', perMinute: 600 }] } } });
  });

  test('outside production, GraphiQL (ruru) is served at /graphiql with its assets', async () => {
    const page = await fetch(`${dev!.url}/graphiql`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toMatch(/ruru/i);
    expect(html).toContain('/graphql');
    const asset = /["'](\/ruru-static\/[^"']+\.js)["']/.exec(html)?.[1];
    expect(asset).toBeDefined();
    const script = await fetch(`${dev!.url}${asset!}`);
    expect(script.status).toBe(200);
    // read to the end: an unread body keeps its keep-alive socket paused, open after the server exits
    expect((await script.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });

  test('in production there is no GraphiQL', async () => {
    for (const p of ['/graphiql', '/ruru-static/ruru.js']) {
      const res = await fetch(`${prod!.url}${p}`);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: string }).error).toBe('Not found');
    }
  });
});
