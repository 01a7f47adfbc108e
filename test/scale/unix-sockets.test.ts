/**
 * PostgreSQL and Redis on the server's own machine, reached through their Unix-domain sockets
 * (docs/OPERATIONS.md › PostgreSQL and Redis on the same machine): the real server (server/main.ts
 * in its own process) with `REDIS_URL` a socket's path and `DATABASE_URL` a socket directory as its
 * host. The redis-server here listens on its socket only (`--port 0`), so an answer counted in it
 * came through the socket; PostgreSQL shows a socket's connections without a client address. A
 * socket's URL carries a password and a database number in its query (`<path>?password=…&db=3`).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { createRedisClient, redisReadyPromise, type RedisClient } from '../../server/redis';
import { adminUrl, createTestDatabase, type TestDatabase } from '../support/db';
import { awaitRoomInMinute, issueKey, silentLogger } from '../support/partner';
import { redisClusterBinariesMissing } from '../support/redis-cluster';
import { OwnRedisServer } from '../support/redis-server';
import { startServerProcess, type ServerProcess } from '../support/server-process';

const missing = redisClusterBinariesMissing();
if (missing) process.stdout.write(`[tests] Unix-socket tests SKIPPED: ${missing}\n`);
const describeWithRedisServer = missing ? describe.skip : describe;
/**
 * These tests are about the transport (which socket, password and database), not the per-request Redis
 * budget (REDIS_BUDGET_MS, 50 ms; its own tests in test/credentials/redis-frozen.test.ts): a fresh process's
 * first script call under a loaded CI machine may pass 50 ms, open the circuit and count that request in
 * process, which would hide where the counts go.
 */
const TRANSPORT_BUDGET_MS = '2000'; // as usage-sigkill and shutdown-load set it

/** The socket path of the PostgreSQL server behind `url`, when it has one on this machine. */
async function postgresSocketDir(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ dirs: string; port: string }>(
      `select current_setting('unix_socket_directories') dirs, current_setting('port') port`,
    );
    const { dirs, port } = rows[0]!;
    return dirs
      .split(',')
      .map((d) => d.trim())
      .find((d) => d.startsWith('/') && fs.existsSync(path.join(d, `.s.PGSQL.${port}`)));
  } finally {
    await client.end();
  }
}

/** `url` with its host replaced by a socket directory (percent-encoded, as node-postgres and libpq read it). */
function overSocket(url: string, dir: string): string {
  const u = new URL(url);
  u.hostname = encodeURIComponent(dir);
  return u.toString();
}

async function get(port: number, apiKey: string) {
  const r = await fetch(`http://127.0.0.1:${port}${P}/test_endpoint`, { headers: { 'X-API-Key': apiKey } });
  return { status: r.status, body: await r.text(), remaining: r.headers.get('x-ratelimit-remaining-minute') };
}

describeWithRedisServer('PostgreSQL and Redis through their Unix-domain sockets (the real server)', () => {
  let db: TestDatabase;
  let dir: string;
  let redisServer: OwnRedisServer;
  let redis: RedisClient;
  let server: ServerProcess | undefined;
  let pgSocketDir: string | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pbapi-sockets-'));
    redisServer = await OwnRedisServer.startOnSocket(path.join(dir, 'redis.sock'));
    redis = createRedisClient(redisServer.url, silentLogger);
    await redisReadyPromise(redis);
    pgSocketDir = await postgresSocketDir(adminUrl());
    if (!pgSocketDir)
      process.stdout.write('[tests] PostgreSQL has no Unix socket on this machine: the server reaches it over TCP\n');
  }, 30_000);
  afterAll(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    redis?.disconnect();
    await redisServer?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    await db?.drop();
  });

  test('REDIS_URL a socket path, DATABASE_URL a socket directory: answers, limits counted in Redis, backends on the socket', async () => {
    const databaseUrl = pgSocketDir ? overSocket(db.url, pgSocketDir) : db.url;
    server = await startServerProcess(
      databaseUrl,
      { REDIS_URL: redisServer.url, REDIS_BUDGET_MS: TRANSPORT_BUDGET_MS },
      { shutdownTimeoutMs: 5000, dropRequestLines: true },
    );
    const { apiKey, subscriberId } = await issueKey(db.owner);
    await awaitRoomInMinute(10_000); // both answers in one minute's window
    const first = await get(server.port, apiKey);
    const second = await get(server.port, apiKey);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(JSON.parse(first.body)).toMatchObject({ subscriber_id: subscriberId });
    // Counted in the socket-only redis-server, and shared: the second answer has one fewer left.
    expect(Number(first.remaining) - Number(second.remaining)).toBe(1);
    expect(await redis.keys('*')).not.toEqual([]);
    expect(server.logs.filter((l) => l.level === 50 || l.level === 60)).toEqual([]);
    if (pgSocketDir) {
      // The server's connections to its database, by how they came: a socket's have no client address.
      const { rows } = await db.owner.query<{ tcp: number; socket: number }>(
        `select count(*) filter (where client_addr is not null)::int tcp, count(*) filter (where client_addr is null)::int socket
           from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()
            and application_name not like 'tests-%'`,
      );
      expect(rows[0]).toEqual({ tcp: 0, socket: expect.any(Number) });
      expect(rows[0]!.socket).toBeGreaterThan(0);
    }
  }, 60_000);

  test('a socket URL with a password and a database number: counted in that database, with that password', async () => {
    const password = 'p@ss&word /1?#'; // characters a URL's query must percent-encode
    const guarded = await OwnRedisServer.startOnSocket(path.join(dir, 'guarded.sock'), ['--requirepass', password]);
    const auth = `password=${encodeURIComponent(password)}`;
    const inDb3 = createRedisClient(`${guarded.url}?${auth}&db=3`, silentLogger);
    const inDb0 = createRedisClient(`${guarded.url}?${auth}`, silentLogger);
    let guardedServer: ServerProcess | undefined;
    try {
      await Promise.all([redisReadyPromise(inDb3), redisReadyPromise(inDb0)]);
      // The password is needed: without it the socket's server refuses every command.
      const refused = spawnSync('redis-cli', ['-s', guarded.unixSocket!, 'get', 'x'], { encoding: 'utf8' });
      expect(refused.stdout + refused.stderr).toMatch(/NOAUTH/);
      guardedServer = await startServerProcess(
        db.url,
        { REDIS_URL: `${guarded.url}?${auth}&db=3`, REDIS_BUDGET_MS: TRANSPORT_BUDGET_MS },
        { shutdownTimeoutMs: 5000, dropRequestLines: true },
      );
      const { apiKey } = await issueKey(db.owner);
      await awaitRoomInMinute(10_000);
      const first = await get(guardedServer.port, apiKey);
      const second = await get(guardedServer.port, apiKey);
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(Number(first.remaining) - Number(second.remaining)).toBe(1);
      // Counted in database 3, not 0: the URL's query reached Redis, not the in-process fallback.
      expect(await inDb3.keys('*')).not.toEqual([]);
      expect(await inDb0.keys('*')).toEqual([]);
      expect(guardedServer.logs.filter((l) => Number(l.level) >= 40 && /redis/i.test(JSON.stringify(l)))).toEqual([]);
    } finally {
      if (guardedServer && guardedServer.child.exitCode === null) {
        guardedServer.child.kill('SIGTERM');
        await guardedServer.exited;
      }
      for (const c of [inDb3, inDb0]) c.disconnect();
      await guarded.stop();
    }
  }, 60_000);
});
