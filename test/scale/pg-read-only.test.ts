/**
 * Issue 32, a fault that already holds (regression test): a primary that refuses writes for a
 * while (`default_transaction_read_only` on, reloaded: what a failover tool or a full disk's
 * runbook does). The real server under load, on the test's own PostgreSQL, with the read-only
 * period longer than the usage flush interval (5 s): every request is answered 200 (partner reads
 * need no write), and once writes are accepted again the usage in PostgreSQL equals the requests
 * answered (the failed flushes kept their counts).
 */
import pg from 'pg';
import { migrateDatabase } from '../../db/tools/migrate';
import { createPool } from '../../server/db/pools';
import { fixtures } from '../support/fixtures';
import { bearer, createPlan, issueKey } from '../support/partner';
import { replicationBinariesMissing, startStandalonePg, type StandalonePg } from '../support/pg-replication';
import { startServerProcess, type ServerProcess } from '../support/server-process';
import { sleep } from '../support/wait';

const missing = replicationBinariesMissing();
if (missing) process.stdout.write(`[tests] read-only primary test SKIPPED: ${missing}\n`);
const describeWithPg = missing ? describe.skip : describe;

const DB = 'bars';
const READ_ONLY_MS = 6000;

describeWithPg('a primary that refuses writes for some seconds, under load', () => {
  let pg15: StandalonePg;
  let server: ServerProcess | undefined;
  let barId = 0;
  let apiKey = '';
  let keyId = '';

  beforeAll(async () => {
    pg15 = await startStandalonePg(async (s) => {
      await s.query(`create database ${DB}`);
      await migrateDatabase(s.url(DB), { includeCurrent: true });
      const owner = createPool(s.url(DB), { max: 1, applicationName: 'tests-fixtures' });
      const f = fixtures(owner);
      barId = await f.bar(await f.city({ name: 'Austin', state: 'TX', time_zone: 'America/Chicago' }), {
        name: 'Read Only',
      });
      ({ apiKey, keyId } = await issueKey(owner, { plan: await createPlan(owner, null) }));
      await owner.end();
    });
    server = await startServerProcess(pg15.server.url(DB), {}, { shutdownTimeoutMs: 5000, dropRequestLines: true });
  }, 120_000);

  afterAll(async () => {
    if (server && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    await pg15?.destroy();
  }, 30_000);

  const reload = () => pg15.server.query('select pg_reload_conf()');

  test('every request answered 200 meanwhile; usage exact once writes are accepted again', async () => {
    const url = `http://127.0.0.1:${server!.port}/api/v1/partner/bars/${barId}`;
    const statuses: number[] = [];
    let serving = true;
    const client = async () => {
      while (serving) {
        const res = await fetch(url, { headers: bearer(apiKey) });
        await res.arrayBuffer();
        statuses.push(res.status);
      }
    };
    const clients = Array.from({ length: 4 }, client);
    let during: number;
    try {
      await sleep(1000);
      await pg15.server.query('alter system set default_transaction_read_only = on');
      await reload();
      const from = statuses.length;
      await sleep(READ_ONLY_MS);
      during = statuses.length - from;
      // This session's own setting lets the reset through.
      const admin = new pg.Client({ connectionString: pg15.server.url() });
      await admin.connect();
      await admin.query('set default_transaction_read_only = off');
      await admin.query('alter system reset default_transaction_read_only');
      await admin.end();
      await reload();
      await sleep(1000);
    } finally {
      serving = false;
      await Promise.all(clients);
    }
    const refusedWrites = server!.logs.filter(
      (l) => l.msg === 'usage flush failed; will retry' && /read-only/.test(JSON.stringify(l.err)),
    ).length;
    server!.child.kill('SIGTERM'); // the final flush
    const { code } = await server!.exited;
    expect(code).toBe(0);

    expect(during).toBeGreaterThan(100);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    const recorded = Number(
      (
        await pg15.server.query<{ n: string }>(
          'select coalesce(sum(requests), 0) as n from admin.daily_usage where api_key_id = $1',
          [keyId],
          DB,
        )
      )[0]!.n,
    );
    expect(recorded).toBe(statuses.length);
    expect(refusedWrites).toBeGreaterThan(0); // the flushes did fail meanwhile (the fault was real)
    process.stdout.write(
      `[pg-read-only] ${during} requests answered while the primary refused writes (${READ_ONLY_MS} ms), ` +
        `${statuses.length} in all, all 200; usage recorded ${recorded}; ${refusedWrites} x 'usage flush failed; will retry' (read-only)\n`,
    );
  }, 60_000);
});
