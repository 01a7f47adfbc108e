/**
 * Issue 11, defects 6, 7 and 10: the failed-auth block answers before any
 * database lookup of an uncached key (unknown keys are cached negatively),
 * only 401s count toward it (a revoked key keeps its 403), and the change
 * listener's heartbeat never queries a busy client (pg's deprecation warning).
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { CredentialsChangeListener } from '../../server/credentials/change-listener';
import { IdentityCache } from '../../server/credentials/identity-cache';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { awaitRoomInMinute, bearer, issueKey, silentLogger, startPartner, type IssuedKey } from '../support/partner';

const TEST = '/api/v1/partner/test_endpoint';
const unknownKey = (c: string) => 'pbk_' + c.repeat(43);

describe('failed-auth hardening', () => {
  let db: TestDatabase;
  let key: IssuedKey;

  beforeAll(async () => {
    db = await createTestDatabase();
    key = await issueKey(db.owner);
  });
  afterAll(() => db.drop());

  test('an unknown key is looked up once, then answered from the negative cache', async () => {
    const p = await startPartner(db);
    try {
      await request(p.app).get(TEST).set('X-API-Key', unknownKey('E')).expect(401);
      const spy = jest.spyOn(p.pool, 'query');
      try {
        for (let i = 0; i < 5; i++) await request(p.app).get(TEST).set('X-API-Key', unknownKey('E')).expect(401);
        expect(spy).not.toHaveBeenCalled();
      } finally {
        spy.mockRestore();
      }
    } finally {
      await p.close();
    }
  });

  test('a blocked address: no lookup of uncached keys (valid or not), cached valid keys still served', async () => {
    const p = await startPartner(db);
    try {
      const other = await issueKey(db.owner); // valid, but not in this instance's cache
      await new Promise((r) => setTimeout(r, 300)); // its NOTIFY flushes the cache: let it arrive first
      await awaitRoomInMinute(15_000);
      await request(p.app).get(TEST).set(bearer(key.apiKey)).expect(200); // cached
      for (let i = 0; i < 31; i++) await request(p.app).get(TEST).set('X-API-Key', 'nope');
      const spy = jest.spyOn(p.pool, 'query');
      try {
        for (const k of [unknownKey('F'), unknownKey('G'), other.apiKey]) {
          const res = await request(p.app).get(TEST).set('X-API-Key', k);
          expect(res.status).toBe(429);
        }
        expect(spy).not.toHaveBeenCalled(); // cannot tell valid from invalid keys, costs no lookup
        await request(p.app).get(TEST).set(bearer(key.apiKey)).expect(200);
      } finally {
        spy.mockRestore();
      }
    } finally {
      await p.close();
    }
  });

  test('only 401s count: a revoked key keeps getting its 403 past 30 refusals, and 403s block no one', async () => {
    const p = await startPartner(db);
    try {
      await awaitRoomInMinute(15_000);
      const revoked = await issueKey(db.owner);
      await db.owner.query('select admin.revoke_key($1)', [revoked.keyId]);
      for (let i = 0; i < 40; i++) {
        const res = await request(p.app).get(TEST).set(bearer(revoked.apiKey));
        expect([res.status, res.body.error]).toEqual([403, 'API key has been revoked']);
      }
      await request(p.app).get(TEST).set('X-API-Key', 'nope').expect(401); // not blocked by the 403s
    } finally {
      await p.close();
    }
  });
});

describe('change listener heartbeat', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  test('an unanswered heartbeat drops the connection instead of queueing a second query', async () => {
    // A TCP proxy in front of PostgreSQL that can stop forwarding (a frozen server).
    const target = new URL(db.url);
    let frozen = false;
    const sockets: net.Socket[] = [];
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      sockets.push(client, upstream);
      client.on('data', (d) => !frozen && upstream.write(d));
      upstream.on('data', (d) => !frozen && client.write(d));
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const proxied = new URL(db.url);
    proxied.host = `127.0.0.1:${(proxy.address() as AddressInfo).port}`;

    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    const cache = new IdentityCache(db.owner);
    const listener = new CredentialsChangeListener({
      connectionString: proxied.toString(),
      cache,
      logger: silentLogger,
      heartbeatMs: 100,
    });
    try {
      await listener.start();
      expect(listener.isListening).toBe(true);
      frozen = true;
      await new Promise((r) => setTimeout(r, 450));
      expect(listener.isListening).toBe(false); // noticed within two heartbeats
      expect(warnings.filter((m) => /already executing a query/.test(m))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await listener.close();
      for (const s of sockets) s.destroy();
      await new Promise((r) => proxy.close(r));
    }
  });
});
