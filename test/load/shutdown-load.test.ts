/**
 * Issue 22: SIGTERM under real load. The real server (server/main.ts in its
 * own process), a key on a plan with no limits, 50 or 200 keep-alive clients
 * sending `test_endpoint` and `bars/:id` as fast as they can, with Redis (our
 * own redis-server) or without, and with WEB_CONCURRENCY=2 (50 and 200
 * clients). Wanted: every request sent is answered (those sent once the
 * process, or with workers the last worker, has begun to drain with
 * Connection: close) or refused at connect (the listener is closed), never
 * reset or left unanswered, a reconnect included; the usage flush completes;
 * exit 0 well within SHUTDOWN_TIMEOUT_MS; every answered request is in the
 * usage table.
 */
import http from 'node:http';
import { PARTNER_PREFIX as P } from '../../server/contract/identity';
import { drainIdleGraceMs } from '../../server/http/server';
import { drainDeadlineMs } from '../../server/shutdown';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { fixtures } from '../support/fixtures';
import { createPlan, issueKey } from '../support/partner';
import { OwnRedisServer } from '../support/redis-server';
import { freePort } from '../../db/tools/ports';
import { startServerProcess, type ServerProcess } from '../support/server-process';

const SHUTDOWN_TIMEOUT_MS = 8000;
/** The drain closes a keep-alive connection idle this long. */
const IDLE_GRACE_MS = drainIdleGraceMs(drainDeadlineMs(SHUTDOWN_TIMEOUT_MS));

/** The real server in its own process, on a port of its own (fixed: workers share it). */
async function startServer(db: TestDatabase, env: Record<string, string>): Promise<ServerProcess> {
  const port = await freePort();
  return startServerProcess(
    db.url,
    { PORT: String(port), ...env },
    { shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS, dropRequestLines: true },
  );
}

interface Outcomes {
  ok: number;
  afterSignal: number;
  closeAfterSignal: number;
  /** When each request answered after the signal without Connection: close was sent. */
  keepAliveSentAt: number[];
  refused: number;
  reset: number;
  /** Resets of connections opened after the signal. */
  resetNew: number;
  /**
   * Resets of a request sent on a connection the client had left idle past the drain's grace (how
   * long since its previous request): the test process was starved that long and the server had
   * rightly closed the connection (HTTP's keep-alive race; test/hardening/shutdown.test.ts).
   */
  resetAfterClientIdle: number[];
  other: string[];
}

function get(agent: http.Agent, port: number, apiKey: string, route: string) {
  return new Promise<{ status: number; connection?: string }>((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path: `${P}/${route}`, agent, headers: { 'X-API-Key': apiKey } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
        res.on('error', reject);
      },
    );
    req.on('error', (e: Error & { newConnection?: boolean }) => {
      e.newConnection = !req.reusedSocket;
      reject(e);
    });
  });
}

/** `clients` keep-alive loops until the listener refuses them; SIGTERM once they are all busy. */
async function loadThenTerminate(server: ServerProcess, apiKey: string, barId: string, clients: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  let signalledAt = 0;
  const o: Outcomes = {
    ok: 0,
    afterSignal: 0,
    closeAfterSignal: 0,
    keepAliveSentAt: [],
    refused: 0,
    reset: 0,
    resetNew: 0,
    resetAfterClientIdle: [],
    other: [],
  };
  const routes = ['test_endpoint', `bars/${barId}`];
  const answered = new Array<number>(clients).fill(0);
  const client = async (i: number) => {
    let previousSentAt = 0;
    for (let n = i; ; n++) {
      const sentAt = Date.now();
      const idleFor = previousSentAt ? sentAt - previousSentAt : 0;
      previousSentAt = sentAt;
      try {
        const res = await get(agent, server.port, apiKey, routes[n % 2]!);
        if (res.status !== 200) o.other.push(`status ${res.status}`);
        else o.ok++;
        answered[i]!++;
        if (signalledAt && sentAt > signalledAt) {
          o.afterSignal++;
          if (res.connection === 'close') o.closeAfterSignal++;
          else o.keepAliveSentAt.push(sentAt);
        }
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
        if (code === 'ECONNREFUSED') o.refused++;
        else if (code === 'ECONNRESET' || /socket hang up/.test(code)) {
          // A connection opened after the signal (the client was told Connection: close and
          // reconnected) is not a request the server had received when it began to drain.
          if ((e as { newConnection?: boolean }).newConnection && signalledAt && sentAt > signalledAt) o.resetNew++;
          else if (idleFor >= IDLE_GRACE_MS) o.resetAfterClientIdle.push(idleFor);
          else o.reset++;
        } else o.other.push(code);
        if (signalledAt) return; // the listener is gone: this client is done
      }
    }
  };
  const loops = Array.from({ length: clients }, (_, i) => client(i));
  // Busy: every client has its keep-alive connection and has been answered twice on it, and the
  // server has run past its first periodic usage flush (5 s: the hang began at that tick).
  while (answered.some((n) => n < 2) || Date.now() - server.listeningAt < 5500)
    await new Promise((r) => setTimeout(r, 50));
  signalledAt = Date.now();
  server.child.kill('SIGTERM');
  const { code, at } = await server.exited;
  await Promise.all(loops);
  agent.destroy();
  return { code, ms: at - signalledAt, signalledAt, outcomes: o };
}

describe('SIGTERM under real keep-alive load (server in its own process)', () => {
  let db: TestDatabase;
  let apiKey: string;
  let keyId: string;
  let barId: string;
  let redis: OwnRedisServer;

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = fixtures(db.owner);
    const city = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
    barId = String(await f.bar(city, { name: 'The Tap' }));
    ({ apiKey, keyId } = await issueKey(db.owner, { plan: await createPlan(db.owner, null) }));
    redis = await OwnRedisServer.start();
  });
  afterAll(async () => {
    await redis?.stop();
    await db.drop();
  });

  const usageCount = async () => {
    const { rows } = await db.owner.query<{ n: string }>(
      'select coalesce(sum(requests), 0) as n from admin.daily_usage where api_key_id = $1',
      [keyId],
    );
    return Number(rows[0]!.n);
  };

  test.each([
    { clients: 50, withRedis: true, workers: 1 },
    { clients: 200, withRedis: true, workers: 1 },
    { clients: 50, withRedis: false, workers: 1 },
    { clients: 200, withRedis: false, workers: 1 },
    { clients: 50, withRedis: true, workers: 2 },
    { clients: 200, withRedis: true, workers: 2 },
  ])(
    '$clients clients, Redis $withRedis, WEB_CONCURRENCY=$workers: all answered or refused, exit 0',
    async ({ clients, withRedis, workers }) => {
      const before = await usageCount();
      const server = await startServer(db, {
        REDIS_URL: withRedis ? redis.url : '',
        // Past the per-request Redis budget a request is counted in process, and in Redis too if the
        // late command still runs (docs/CREDENTIALS.md › When Redis fails): the exact count below then
        // no longer holds. The default 50 ms was once exceeded on a loaded CI machine; the budget is
        // not what this test is about (test/credentials/redis-frozen.test.ts is).
        REDIS_BUDGET_MS: '2000',
        WEB_CONCURRENCY: String(workers),
      });
      const { code, ms, signalledAt, outcomes } = await loadThenTerminate(server, apiKey, barId, clients);
      const steps = server.logs.filter((l) => l.msg === 'shutdown step done' || l.msg === 'partner listener closed');
      if (outcomes.resetAfterClientIdle.length)
        console.log(`[shutdown-load] resets after the client idled (ms): ${outcomes.resetAfterClientIdle.join(', ')}`);

      expect({
        code,
        reset: outcomes.reset,
        resetNew: outcomes.resetNew,
        other: outcomes.other,
        steps: steps.length > 0,
        log: code === 0 ? [] : server.logs.map((l) => String(l.msg)),
      }).toEqual({
        code: 0,
        reset: 0,
        resetNew: 0,
        other: [],
        steps: true,
        log: [],
      });
      expect(ms).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
      // One process: every answer to a request sent after it began to drain (its 'shutting down'
      // line; the signal is handled a moment after it is sent, and a request sent meanwhile is
      // rightly answered keep-alive) carries Connection: close.
      // Workers: the primary first has every worker close its listener (answers stay keep-alive,
      // so nobody reconnects while its shared socket may still accept), then has them drain: every
      // answer to a request sent after the last worker began to drain carries Connection: close.
      const drainFrom = Math.max(
        ...server.logs
          .filter((l) => l.msg === 'shutting down' && (workers === 1 || l.worker))
          .map((l) => Date.parse(String(l.time))),
      );
      expect(drainFrom).toBeGreaterThanOrEqual(signalledAt);
      expect(server.logs.filter((l) => l.msg === 'shutting down').length).toBe(workers === 1 ? 1 : workers + 1);
      expect(outcomes.keepAliveSentAt.filter((t) => t > drainFrom)).toEqual([]);
      expect(outcomes.closeAfterSignal).toBeGreaterThan(0);
      expect(server.logs.map((l) => l.msg)).not.toContain('shutdown deadline passed; exiting');
      expect(server.logs.map((l) => l.msg)).not.toContain(
        'Redis circuit open: rate limits and usage count in process until a probe answers',
      );
      // Every answered request is counted (the final flush wrote the last batch).
      expect((await usageCount()) - before).toBe(outcomes.ok);
    },
    120_000,
  );
});
