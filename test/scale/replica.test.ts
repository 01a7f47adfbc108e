/**
 * Partner reads on a real PostgreSQL streaming replica (the test's own primary
 * and replica, PostgreSQL 15 binaries): endpoint queries run on the replica,
 * credentials on the primary; changes arrive through replication; a stopped
 * replica leaves the primary serving; revocation takes effect within 1 s.
 */
import { createPartnerGuard, type PartnerGuard } from '../../server/credentials/guard';
import { migrateDatabase } from '../../db/tools/migrate';
import { createPool, type Pool } from '../../server/db/pools';
import { dbReplicaLag } from '../../server/metrics';
import { ReadRoutingPool } from '../../server/db/read-pool';
import { createPartnerApp } from '../../server/http/app';
import { postgresCheck } from '../../server/http/health';
import { fixtures } from '../support/fixtures';
import { listen, type Listening } from '../support/http';
import { bearer, issueKey, silentLogger } from '../support/partner';
import { replicationBinariesMissing, startReplicatedPair, type ReplicatedPair } from '../support/pg-replication';
import { testClock } from '../support/clock';
import { waitFor } from '../support/wait';

const missing = replicationBinariesMissing();
if (missing) process.stdout.write(`[tests] read replica tests SKIPPED: ${missing}\n`);
const describeWithPg = missing ? describe.skip : describe;

const DB = 'bars';

describeWithPg('read replicas (own PostgreSQL primary + streaming replica)', () => {
  let pair: ReplicatedPair;
  let owner: Pool;
  let primaryPool: Pool;
  let reads: ReadRoutingPool;
  let guard: PartnerGuard;
  let server: Listening;
  let barId: number;

  // Backends report their counters when they exit (or after up to 10 s idle): end the pools' backends
  // first, and wait until they are gone from pg_stat_activity (a backend's counters are flushed before
  // it leaves that view), however long a busy machine takes.
  const flushStats = async () => {
    for (const server of [pair.primary, pair.replica]) {
      const ended = (
        await server.query<{ pid: number }>(
          "select pid from pg_stat_activity where application_name in ('tests-primary', 'tests-read-read') and pg_terminate_backend(pid)",
        )
      ).map((r) => r.pid);
      const exited = async () =>
        (await server.query('select 1 from pg_stat_activity where pid = any($1)', [ended])).length === 0;
      if (!(await waitFor(exited, 10_000))) throw new Error('the pools’ backends did not exit within 10 s');
    }
  };
  // api.bar's calls on one server (track_functions = 'pl' on the database): GET bars/:id's statement,
  // counted exactly, where the database's transactions also count the replica-lag probes and the
  // change listener, more of them the longer a busy machine takes.
  const barCalls = async (which: 'primary' | 'replica') =>
    Number(
      (
        await pair[which].query<{ n: string }>(
          "select coalesce(sum(calls), 0) as n from pg_stat_user_functions where schemaname = 'api' and funcname = 'bar'",
          [],
          DB,
        )
      )[0]!.n,
    );
  const xacts = async (which: 'primary' | 'replica') =>
    Number(
      (
        await pair[which].query<{ n: string }>(
          'select xact_commit + xact_rollback as n from pg_stat_database where datname = $1',
          [DB],
        )
      )[0]!.n,
    );

  // Until its first lag measurement a replica is skipped (the primary serves): on a busy machine
  // that can take longer than the test's first requests.
  const replicaMeasuredCurrent = async () => {
    let lag: number | undefined;
    const current = async () => {
      lag = (await dbReplicaLag.get()).values.find((v) => v.labels.replica === 'replica:1')?.value;
      return lag !== undefined && lag < 1;
    };
    if (!(await waitFor(current, 15_000, 100)))
      throw new Error(`the replica was not measured current within 15 s (lag ${String(lag)} s)`);
  };

  beforeAll(async () => {
    pair = await startReplicatedPair(async (primary) => {
      await primary.query(`create database ${DB}`);
      await primary.query(`alter database ${DB} set track_functions = 'pl'`);
      await migrateDatabase(primary.url(DB), { includeCurrent: true });
      const f = fixtures(createPool(primary.url(DB), { max: 1, applicationName: 'tests-fixtures' }));
      const city = await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' });
      barId = await f.bar(city, { name: 'Replica Bar' });
    });
    owner = createPool(pair.primary.url(DB), { max: 2, applicationName: 'tests-owner' });
    primaryPool = createPool(pair.primary.url(DB), { max: 4, role: 'bar_partner', applicationName: 'tests-primary' });
    reads = new ReadRoutingPool(
      primaryPool,
      [pair.replica.url(DB)],
      { max: 4, role: 'bar_partner', applicationName: 'tests-read', queryTimeoutMs: 3000 },
      silentLogger,
    );
    guard = await createPartnerGuard({
      pool: primaryPool,
      databaseUrl: pair.primary.url(DB),
      logger: silentLogger,
      usageFlushMs: 60_000,
    });
    const app = createPartnerApp({
      config: { env: 'test' },
      logger: silentLogger,
      pool: reads,
      guard: guard.handlers,
      clock: testClock,
      health: { checks: [postgresCheck(primaryPool), ...reads.checks()] },
    });
    server = await listen(app);
  }, 120_000);

  afterAll(async () => {
    await server?.close();
    await guard?.close().catch(() => undefined);
    await reads?.end();
    await Promise.all([owner, primaryPool].map((p) => p?.end().catch(() => undefined)));
    await pair?.destroy();
  });

  test('endpoint queries run on the replica (api.bar runs there, never on the primary); a change on the primary arrives through it', async () => {
    const { apiKey } = await issueKey(owner);
    expect((await server.get(`/api/v1/partner/bars/${barId}`, bearer(apiKey))).status).toBe(200); // identity cached
    await replicaMeasuredCurrent();
    await flushStats();
    const [p0, r0] = [await barCalls('primary'), await barCalls('replica')];
    for (let i = 0; i < 40; i++) {
      const res = await server.get(`/api/v1/partner/bars/${barId}`, bearer(apiKey));
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body).bar.name).toBe('Replica Bar');
    }
    await flushStats();
    const [p1, r1] = [await barCalls('primary'), await barCalls('replica')];
    expect(r1 - r0).toBe(40);
    expect(p1 - p0).toBe(0);

    await owner.query('update private.bars set name = $1 where id = $2', ['Renamed on the primary', barId]);
    let name = '';
    const renamed = async () => {
      name = JSON.parse((await server.get(`/api/v1/partner/bars/${barId}`, bearer(apiKey))).body).bar.name;
      return name === 'Renamed on the primary';
    };
    await waitFor(renamed, 5000, 20);
    expect(name).toBe('Renamed on the primary');

    const ready = await server.get('/readyz');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body).checks).toEqual({ postgres: 'ok', 'replica:1': 'ok' });
  });

  test('revocation on the primary takes effect within 1 s (credentials never read from the replica)', async () => {
    const { apiKey, keyId } = await issueKey(owner);
    expect((await server.get(`/api/v1/partner/bars/${barId}`, bearer(apiKey))).status).toBe(200);
    await owner.query('select admin.revoke_key($1)', [keyId]);
    const revokedAt = Date.now();
    let status = 0;
    while (Date.now() - revokedAt < 1000) {
      status = (await server.get(`/api/v1/partner/bars/${barId}`, bearer(apiKey))).status;
      if (status === 403) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(status).toBe(403);
    expect(Date.now() - revokedAt).toBeLessThan(1000);
  });

  test('with the replica stopped, answers keep flowing from the primary (no 5xx), /readyz reports it; restarted, it serves again', async () => {
    const { apiKey } = await issueKey(owner);
    await pair.replica.stop('immediate');
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++)
      statuses.push((await server.get(`/api/v1/partner/bars/${barId}`, bearer(apiKey))).status);
    expect(statuses).toEqual(Array(20).fill(200));
    const ready = await server.get('/readyz');
    expect(ready.status).toBe(200); // the primary serves
    expect(JSON.parse(ready.body).checks).toEqual({ postgres: 'ok', 'replica:1': 'failed' });

    // Started again, the replica is retried after its backoff and serves again.
    await pair.replica.start();
    await flushStats();
    const before = await xacts('replica');
    const servedAgain = async () => {
      expect((await server.get(`/api/v1/partner/bars/${barId}`, bearer(apiKey))).status).toBe(200);
      await flushStats();
      return (await xacts('replica')) - before >= 3;
    };
    await waitFor(servedAgain, 10_000, 0);
    expect((await xacts('replica')) - before).toBeGreaterThanOrEqual(3);
  });
});
