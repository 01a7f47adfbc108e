/**
 * Defect 2, shutdown part (issue 11): SIGTERM under keep-alive load. The real
 * server (server/main.ts in its own process) with 20 busy keep-alive clients:
 * it exits 0 within SHUTDOWN_TIMEOUT_MS, no request sent promptly on a keep-alive
 * connection gets a reset (one sent after the connection sat idle past the drain's
 * grace may: HTTP's keep-alive race, see below), answers given
 * after SIGTERM carry Connection: close, the shutdown log names what it
 * flushed, and every answered request is in the usage table.
 * Also WEB_CONCURRENCY=2: two workers share the port and the primary stops them.
 */
import http from 'node:http';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { drainIdleGraceMs } from '../../server/http/server';
import { drainDeadlineMs } from '../../server/shutdown';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { createPlan, issueKey } from '../support/partner';
import { freePort } from '../../db/tools/ports';
import { startServerProcess } from '../support/server-process';

const SHUTDOWN_TIMEOUT_MS = 4000;
/** The drain closes a keep-alive connection idle this long. */
const IDLE_GRACE_MS = drainIdleGraceMs(drainDeadlineMs(SHUTDOWN_TIMEOUT_MS));

const startServer = (db: TestDatabase, env: Record<string, string> = {}) =>
  startServerProcess(db.url, env, { shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS });

function get(agent: http.Agent, port: number, apiKey: string) {
  return new Promise<{ status: number; connection?: string }>((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path: `${P}/bars/1`, agent, headers: { 'X-API-Key': apiKey } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
      },
    );
    // (whether the request went on a kept-alive connection or a fresh one: see the resets below)
    req.on('error', (e) => reject(Object.assign(e, { reusedSocket: req.reusedSocket })));
  });
}

describe('shutdown under keep-alive load', () => {
  let db: TestDatabase;
  let apiKey: string;
  let keyId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    await f.bar(city, { name: 'The Tap' });
    ({ apiKey, keyId } = await issueKey(db.owner, { plan: await createPlan(db.owner, null) }));
  });
  afterAll(() => db.drop());

  test('SIGTERM: bounded, no resets, Connection: close, usage flushed and logged', async () => {
    const server = await startServer(db);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });
    let stop = false;
    let signalledAt = 0;
    // A reset counts against the server only when the client sent its request promptly: within the
    // drain's idle grace of its previous one (the server finished that answer later still). A test
    // process starved for longer than the grace (a loaded CI machine) sends its next request on a
    // connection the server has rightly closed as idle; the FIN is waiting unread and the request
    // meets a reset. That is HTTP's keep-alive race (RFC 9112 §9.3.1: the client retries), counted
    // apart and shown. So is a reset of a request sent on a fresh connection before the server closed
    // its listener: a connection still in the kernel's accept queue when the listener closes is reset
    // by the kernel, and the server never saw it. (A loaded CI run saw 5 resets while the drain had
    // destroyed nothing and closed nothing idle; which connections they were was not recorded then.)
    // Each is shown and must precede the shutdown.
    const outcomes = {
      ok: 0,
      refused: 0,
      reset: 0,
      resetAfterClientIdle: [] as number[],
      resetNotAccepted: [] as number[], // when the request was sent (ms since epoch)
      other: [] as string[],
    };
    const answered: { sentAt: number; connection?: string }[] = [];
    const client = async () => {
      let previousSentAt = 0;
      while (!stop) {
        const sentAt = Date.now();
        const idleFor = previousSentAt ? sentAt - previousSentAt : 0;
        previousSentAt = sentAt;
        try {
          const res = await get(agent, server.port, apiKey);
          expect(res.status).toBe(200);
          outcomes.ok++;
          answered.push({ sentAt, connection: res.connection });
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
          if (code === 'ECONNREFUSED') outcomes.refused++;
          else if (code !== 'ECONNRESET' && !/socket hang up/.test(code)) outcomes.other.push(code);
          else if (idleFor >= IDLE_GRACE_MS) outcomes.resetAfterClientIdle.push(idleFor);
          else if ((e as { reusedSocket?: boolean }).reusedSocket === false) outcomes.resetNotAccepted.push(sentAt);
          else outcomes.reset++;
          if (signalledAt) return; // the listener is gone: this client is done
        }
      }
    };
    const clients = Array.from({ length: 20 }, client);
    await new Promise((r) => setTimeout(r, 700));
    signalledAt = Date.now();
    server.child.kill('SIGTERM');
    const { code, at } = await server.exited;
    stop = true;
    await Promise.all(clients);
    agent.destroy();

    const drain = server.logs.find((l) => l.msg === 'partner listener closed');
    if (outcomes.reset || outcomes.resetAfterClientIdle.length || outcomes.resetNotAccepted.length)
      console.log(`[shutdown] resets: ${JSON.stringify(outcomes)}; drain: ${JSON.stringify(drain)}`);
    expect(code).toBe(0);
    expect(at - signalledAt).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 1000);
    expect(outcomes.reset).toBe(0);
    expect(outcomes.other).toEqual([]);
    expect(outcomes.ok).toBeGreaterThan(20);
    // Requests sent after the server began its shutdown (its own log line, the same clock; a
    // loaded server may take a few ms to run the signal handler after kill()) all say close.
    const began = server.logs.find((l) => l.msg === 'shutting down');
    const beganAt = Date.parse(String(began?.time));
    expect(beganAt).toBeGreaterThanOrEqual(signalledAt - 5);
    // a fresh connection's reset: only for a request sent before the listener closed (same clock)
    for (const sentAt of outcomes.resetNotAccepted) expect(sentAt).toBeLessThanOrEqual(beganAt);
    // (Few or none are sent then: the answers in flight at that moment already say close.)
    expect(answered.filter((a) => a.connection === 'close').length).toBeGreaterThan(0);
    expect(answered.filter((a) => a.sentAt > beganAt && a.connection !== 'close')).toEqual([]);

    const msgs = server.logs.map((l) => l.msg);
    expect(msgs).toContain('partner listener closed');
    const usageStep = server.logs.find((l) => l.msg === 'shutdown step done' && l.step === 'usage and alerts');
    expect(usageStep).toMatchObject({ usageRequestsWritten: expect.any(Number) });
    expect(usageStep!.usageRequestsWritten).toBeGreaterThan(0); // the last batch, written by the shutdown
    expect(msgs).toContain('shutdown complete');

    const { rows } = await db.owner.query<{ n: string }>(
      'select coalesce(sum(requests), 0) as n from admin.daily_usage where api_key_id = $1',
      [keyId],
    );
    expect(Number(rows[0]!.n)).toBe(outcomes.ok);
  }, 90_000); // the server's start (transpiled on the fly) is slow on a loaded machine

  test('WEB_CONCURRENCY=2: workers share the port; SIGTERM to the primary stops them in time', async () => {
    const server = await startServer(db, { WEB_CONCURRENCY: '2', PORT: String(await freePort()) });
    const workers = server.logs.filter((l) => l.msg === 'worker listening');
    expect(workers.length).toBe(2);
    const agent = new http.Agent({ keepAlive: false });
    const statuses = await Promise.all(Array.from({ length: 10 }, () => get(agent, server.port, apiKey)));
    expect(statuses.map((s) => s.status)).toEqual(Array(10).fill(200));
    const signalledAt = Date.now();
    server.child.kill('SIGTERM');
    const { code, at } = await server.exited;
    expect(code).toBe(0);
    expect(at - signalledAt).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 2000);
    expect(server.logs.find((l) => l.msg === 'workers stopped')).toMatchObject({ stopped: 2, killed: 0 });
  }, 120_000);
});
