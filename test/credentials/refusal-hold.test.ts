/**
 * A refused key's further 429s are held before they are written (server/http/refusal-hold.ts): the
 * hold itself with fake timers (how long, at most how many, a client that goes away), then through
 * the partner app on a real listener: the first refusal is written at once, the next ones after the
 * hold with the same answer, other keys are not held, and the setting's parsing.
 */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Response } from 'express';
import pino from 'pino';
import { Writable } from 'node:stream';
import { loadConfig } from '../../server/config';
import { RefusalHold, refusalHold } from '../../server/http/refusal-hold';
import { createPartnerServer } from '../../server/http/server';
import { rateLimitRefusalsHeld } from '../../server/metrics';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { listen, type Listening } from '../support/http';
import {
  awaitRoomInMinute,
  bearer,
  createPlan,
  credentialsSettled,
  issueKey,
  startPartner,
  type PartnerInstance,
} from '../support/partner';

const TEST = '/api/v1/partner/test_endpoint';

async function held(outcome: string): Promise<number> {
  return (await rateLimitRefusalsHeld.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

/** A stand-in for the response: the hold only listens for its `close`. */
const fakeResponse = () => new EventEmitter() as unknown as Response & EventEmitter;

describe('the hold (fake timers)', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test('writes after the hold, or at the refusing window end when that comes first', () => {
    const now = 1_000_000;
    const hold = new RefusalHold(
      { ms: 1000, max: 10 },
      () => now,
      () => 1,
    ); // the longest hold
    const written: string[] = [];
    expect(hold.defer(fakeResponse(), now + 60_000, () => written.push('long window'))).toBe(true);
    expect(hold.defer(fakeResponse(), now + 300, () => written.push('window ends in 300 ms'))).toBe(true);
    expect(hold.held).toBe(2);
    jest.advanceTimersByTime(299);
    expect(written).toEqual([]);
    jest.advanceTimersByTime(1);
    expect(written).toEqual(['window ends in 300 ms']);
    jest.advanceTimersByTime(699);
    expect(written).toEqual(['window ends in 300 ms']);
    jest.advanceTimersByTime(1);
    expect(written).toEqual(['window ends in 300 ms', 'long window']);
    expect(hold.held).toBe(0);
  });

  test('half to all of the hold, at random', () => {
    const after = (random: number) => {
      const hold = new RefusalHold(
        { ms: 1000, max: 1 },
        () => 0,
        () => random,
      );
      const write = jest.fn();
      hold.defer(fakeResponse(), 60_000, write);
      let ms = 0;
      while (!write.mock.calls.length) {
        jest.advanceTimersByTime(1);
        ms++;
      }
      return ms;
    };
    expect([after(0), after(0.5), after(0.999)]).toEqual([500, 750, 1000]);
  });

  test('not held when the window has ended, nor beyond max held at once (written at once, counted)', async () => {
    const now = 5_000;
    const hold = new RefusalHold(
      { ms: 1000, max: 2 },
      () => now,
      () => 1,
    );
    const write = jest.fn();
    expect(hold.defer(fakeResponse(), now, write)).toBe(false);
    expect(hold.defer(fakeResponse(), now - 1, write)).toBe(false);
    const full = await held('full');
    expect(hold.defer(fakeResponse(), now + 10_000, write)).toBe(true);
    expect(hold.defer(fakeResponse(), now + 10_000, write)).toBe(true);
    expect(hold.defer(fakeResponse(), now + 10_000, write)).toBe(false);
    expect(await held('full')).toBe(full + 1);
    expect(hold.held).toBe(2);
    jest.advanceTimersByTime(1000);
    expect(write).toHaveBeenCalledTimes(2);
    expect(hold.defer(fakeResponse(), now + 10_000, write)).toBe(true); // room again
  });

  test('a client gone while held is not written to, and frees its place', async () => {
    const hold = new RefusalHold(
      { ms: 1000, max: 1 },
      () => 0,
      () => 1,
    );
    const write = jest.fn();
    const res = fakeResponse();
    const gone = await held('client_gone');
    expect(hold.defer(res, 60_000, write)).toBe(true);
    res.emit('close');
    expect(hold.held).toBe(0);
    expect(await held('client_gone')).toBe(gone + 1);
    jest.advanceTimersByTime(5_000);
    expect(write).not.toHaveBeenCalled();
    expect(res.listenerCount('close')).toBe(0);
  });

  test('none when the settings ask for none', () => {
    expect(refusalHold(undefined)).toBeUndefined();
    expect(refusalHold({ ms: 0, max: 1000 })).toBeUndefined();
    expect(refusalHold({ ms: 1000, max: 0 })).toBeUndefined();
    expect(refusalHold({ ms: 1, max: 1 })).toBeInstanceOf(RefusalHold);
  });
});

describe('RATE_LIMIT_REFUSAL_HOLD_MS and _MAX', () => {
  test('default 1 s and 1,000 held; 0 turns the hold off; bad values name the variable', () => {
    expect(loadConfig({}).refusalHold).toEqual({ ms: 1000, max: 1000 });
    expect(loadConfig({ RATE_LIMIT_REFUSAL_HOLD_MS: '0', RATE_LIMIT_REFUSAL_HOLD_MAX: '5' }).refusalHold).toEqual({
      ms: 0,
      max: 5,
    });
    expect(() => loadConfig({ RATE_LIMIT_REFUSAL_HOLD_MS: '60001' })).toThrow(/^RATE_LIMIT_REFUSAL_HOLD_MS must be/);
    expect(() => loadConfig({ RATE_LIMIT_REFUSAL_HOLD_MS: '1s' })).toThrow(/^RATE_LIMIT_REFUSAL_HOLD_MS must be/);
    expect(() => loadConfig({ RATE_LIMIT_REFUSAL_HOLD_MAX: '-1' })).toThrow(/^RATE_LIMIT_REFUSAL_HOLD_MAX must be/);
  });
});

describe('through the partner app', () => {
  const HOLD_MS = 2000; // held 1 to 2 s
  let db: TestDatabase;
  let partner: PartnerInstance;
  let server: Listening;
  const lines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString().split('\n'))
          if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    partner = await startPartner(db, { logger: pino({ level: 'info' }, sink), refusalHold: { ms: HOLD_MS, max: 1 } });
    server = await listen(partner.app);
  });
  afterAll(async () => {
    await server?.close();
    await partner?.close();
    await db?.drop();
  });

  const timed = async (key: string) => {
    const started = performance.now();
    const answer = await server.get(TEST, bearer(key));
    return { ...answer, ms: performance.now() - started };
  };

  test('the first refusal at once; the next after the hold, the same answer; other keys not held', async () => {
    await awaitRoomInMinute(20_000);
    const flooder = await issueKey(db.owner, { plan: await createPlan(db.owner, 1, 1000, null) });
    const other = await issueKey(db.owner, { plan: await createPlan(db.owner, 1000, 100_000, null) });
    await credentialsSettled(db, partner);
    expect((await server.get(TEST, bearer(flooder.apiKey))).status).toBe(200);
    expect((await server.get(TEST, bearer(other.apiKey))).status).toBe(200);
    const first = await timed(flooder.apiKey); // refused by the limiter: not held
    expect(first.status).toBe(429);
    expect(first.ms).toBeLessThan(HOLD_MS / 2);
    const written = await held('written');
    const next = await timed(flooder.apiKey); // refused by the process's memory: held
    expect(next.status).toBe(429);
    expect(next.ms).toBeGreaterThanOrEqual(HOLD_MS / 2 - 5); // at least half the hold; timers may fire a little early
    expect(await held('written')).toBe(written + 1);
    expect(JSON.parse(next.body)).toEqual({ ...JSON.parse(first.body), request_id: next.headers['x-request-id'] });
    for (const h of ['x-ratelimit-limit-minute', 'x-ratelimit-remaining-minute', 'content-type'])
      expect(next.headers[h]).toBe(first.headers[h]);
    expect(Number(next.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(next.headers['retry-after'])).toBeLessThanOrEqual(Number(first.headers['retry-after']));
    // the access log's line says how long the answer took, hold included
    const line = lines.find((l) => l.requestId === next.headers['x-request-id']);
    expect(line).toMatchObject({ status: 429, reason: 'Rate limit exceeded' });
    expect(line!.durationMs as number).toBeGreaterThanOrEqual(HOLD_MS / 2 - 5);
    // while one is held (max 1), another refused request is written at once; other keys are served
    const [slow, fast, served] = await Promise.all([
      timed(flooder.apiKey),
      new Promise((r) => setTimeout(r, 50)).then(() => timed(flooder.apiKey)),
      new Promise((r) => setTimeout(r, 50)).then(() => timed(other.apiKey)),
    ]);
    expect([slow.status, fast.status, served.status]).toEqual([429, 429, 200]);
    expect(slow.ms).toBeGreaterThanOrEqual(HOLD_MS / 2 - 5);
    expect(fast.ms).toBeLessThan(HOLD_MS / 2 - 50);
    expect(served.ms).toBeLessThan(HOLD_MS / 2 - 50);
  });

  test('a 429 held past its refusal (the plan changed meanwhile) is still the 429 it was refused with', async () => {
    await awaitRoomInMinute(20_000);
    const flooder = await issueKey(db.owner, { plan: await createPlan(db.owner, 1, 1000, null) });
    await credentialsSettled(db, partner);
    expect((await server.get(TEST, bearer(flooder.apiKey))).status).toBe(200);
    const refused = await server.get(TEST, bearer(flooder.apiKey)); // now refused in process
    expect(refused.status).toBe(429);
    const heldAnswer = timed(flooder.apiKey);
    await new Promise((r) => setTimeout(r, 50)); // received and held
    await db.owner.query('select admin.set_subscriber_plan($1, $2)', [
      flooder.subscriberId,
      await createPlan(db.owner, 1000, 100_000, null),
    ]);
    await credentialsSettled(db, partner);
    expect((await server.get(TEST, bearer(flooder.apiKey))).status).toBe(200); // the refusal is forgotten
    const late = await heldAnswer;
    expect(late.ms).toBeGreaterThanOrEqual(HOLD_MS / 2 - 5);
    expect(late.status).toBe(429);
    expect(JSON.parse(late.body)).toEqual({ ...JSON.parse(refused.body), request_id: late.headers['x-request-id'] });
    expect(late.headers['x-ratelimit-limit-minute']).toBe('1');
  });

  test("a shutdown's drain waits for a held 429, written with Connection: close", async () => {
    await awaitRoomInMinute(15_000);
    const flooder = await issueKey(db.owner, { plan: await createPlan(db.owner, 1, 1000, null) });
    await credentialsSettled(db, partner);
    const own = createPartnerServer({ tls: undefined }, partner.app);
    await new Promise<void>((resolve) => own.listen(0, '127.0.0.1', resolve));
    const port = (own.address() as AddressInfo).port;
    const get = () =>
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const agent = new http.Agent({ keepAlive: true });
        http
          .get({ host: '127.0.0.1', port, path: TEST, headers: bearer(flooder.apiKey), agent }, (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
          })
          .on('error', reject);
      });
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(429); // now refused in process
    const heldAnswer = get();
    await new Promise((r) => setTimeout(r, 50)); // received and held
    const drained = own.drain(5_000);
    expect(await heldAnswer).toEqual({ status: 429, connection: 'close' });
    expect((await drained).destroyed).toBe(0);
  });

  test('a client that closes while held gets nothing and leaves no log line', async () => {
    await awaitRoomInMinute(10_000);
    const flooder = await issueKey(db.owner, { plan: await createPlan(db.owner, 1, 1000, null) });
    await credentialsSettled(db, partner);
    expect((await server.get(TEST, bearer(flooder.apiKey))).status).toBe(200);
    expect((await server.get(TEST, bearer(flooder.apiKey))).status).toBe(429); // now refused in process
    const gone = await held('client_gone');
    const linesBefore = lines.length;
    await new Promise<void>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port: server.port, path: TEST, headers: bearer(flooder.apiKey) });
      req.on('error', () => undefined); // destroyed below
      req.on('close', () => resolve());
      setTimeout(() => req.destroy(), 100);
    });
    const deadline = Date.now() + 5_000;
    while ((await held('client_gone')) === gone && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(await held('client_gone')).toBe(gone + 1);
    await new Promise((r) => setTimeout(r, HOLD_MS + 100)); // past the hold: nothing is written late
    expect(lines.slice(linesBefore).filter((l) => l.msg === 'request' && l.status === 429)).toEqual([]);
  });

  test("a blocked address's further 429s are held too; a valid key it sends is not", async () => {
    // an instance of its own: its guard blocks this test's address (127.0.0.1) for the rest of the minute
    await awaitRoomInMinute(20_000);
    const own = await startPartner(db, { refusalHold: { ms: HOLD_MS, max: 10 } });
    const ownServer = await listen(own.app);
    try {
      const valid = await issueKey(db.owner, { plan: 'standard' });
      await credentialsSettled(db, own);
      expect((await ownServer.get(TEST, bearer(valid.apiKey))).status).toBe(200); // known before the block
      for (let i = 0; i < 30; i++) expect((await ownServer.get(TEST)).status).toBe(401);
      const timedHere = async (headers: Record<string, string>) => {
        const started = performance.now();
        const answer = await ownServer.get(TEST, headers);
        return { ...answer, ms: performance.now() - started };
      };
      const first = await timedHere({}); // refused by the failed-auth limiter: not held
      expect(first.status).toBe(429);
      expect(first.ms).toBeLessThan(HOLD_MS / 2);
      const written = await held('written');
      const [next, served] = await Promise.all([
        timedHere(bearer(`pbk_${'F'.repeat(43)}`)),
        timedHere(bearer(valid.apiKey)),
      ]);
      expect([next.status, served.status]).toEqual([429, 200]);
      expect(next.ms).toBeGreaterThanOrEqual(HOLD_MS / 2 - 5);
      expect(served.ms).toBeLessThan(HOLD_MS / 2 - 50);
      expect(await held('written')).toBe(written + 1);
      expect(JSON.parse(next.body)).toEqual({ ...JSON.parse(first.body), request_id: next.headers['x-request-id'] });
      expect(Number(next.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(next.headers['retry-after'])).toBeLessThanOrEqual(Number(first.headers['retry-after']));
    } finally {
      await ownServer.close();
      await own.close();
    }
  });
});
