/**
 * A throwaway PostgreSQL primary and streaming replica of the test's own, on
 * free loopback ports under a temp dir, from the machine's binaries
 * (PG_TEST_BIN, default /usr/lib/postgresql/15/bin). As root, the servers run
 * as the `postgres` user (PostgreSQL refuses root). Tests skip with a message
 * when the binaries are missing.
 *
 *   initdb (trust)  →  pg_ctl start (primary)  →  pg_basebackup -R -X stream  →  pg_ctl start (replica)
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../../db/tools/ports';

export const PG_BIN = process.env.PG_TEST_BIN || '/usr/lib/postgresql/15/bin';

export function replicationBinariesMissing(): string | undefined {
  for (const b of ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres']) {
    if (!fs.existsSync(path.join(PG_BIN, b))) return `${path.join(PG_BIN, b)} not found`;
  }
  if (process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0)
    return 'running as root and there is no postgres user';
  return undefined;
}

function asUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  };
}

function run(bin: string, args: string[], timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      path.join(PG_BIN, bin),
      args,
      { ...asUser(), timeout: timeoutMs, env: { ...process.env, LC_ALL: 'C', PGTZ: 'UTC' } },
      (err, stdout, stderr) => (err ? reject(new Error(`${bin}: ${err.message}\n${stderr}`)) : resolve(stdout)),
    );
  });
}

export class PgServer {
  constructor(
    readonly dataDir: string,
    readonly port: number,
    /** More server settings, e.g. '-c max_connections=20'. */
    readonly extraOptions = '',
  ) {}

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    await run('pg_ctl', [
      '-D',
      this.dataDir,
      '-l',
      path.join(this.dataDir, 'server.log'),
      '-o',
      `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${this.dataDir} -c fsync=off -c full_page_writes=off -c wal_sender_timeout=2s ${this.extraOptions}`.trim(),
      '-w',
      '-t',
      '30',
      'start',
    ]);
  }

  /** Stops it (immediate: like a crash) unless it is not running. */
  async stop(mode: 'immediate' | 'fast' = 'immediate'): Promise<void> {
    await run('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '30', 'stop']).catch(() => undefined);
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    values: unknown[] = [],
    database = 'postgres',
  ): Promise<R[]> {
    const client = new pg.Client({ connectionString: this.url(database) });
    await client.connect();
    try {
      return (await client.query<R>(sql, values)).rows;
    } finally {
      await client.end();
    }
  }
}

export interface ReplicatedPair {
  primary: PgServer;
  replica: PgServer;
  root: string;
  /** Waits until the replica has replayed everything the primary wrote so far. */
  caughtUp(timeoutMs?: number): Promise<void>;
  destroy(): Promise<void>;
}

/** Starts a primary; `prepare(primary)` runs before the base backup; then the replica starts. */
export async function startReplicatedPair(prepare: (primary: PgServer) => Promise<void>): Promise<ReplicatedPair> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pbapi-repl-'));
  fs.chmodSync(root, 0o755);
  const user = asUser();
  if (user.uid !== undefined) fs.chownSync(root, user.uid, user.gid!);
  const primary = new PgServer(path.join(root, 'primary'), await freePort());
  const replica = new PgServer(path.join(root, 'replica'), await freePort());
  const destroy = async () => {
    await Promise.all([replica.stop(), primary.stop()]);
    fs.rmSync(root, { recursive: true, force: true });
  };
  try {
    await run('initdb', ['-D', primary.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    await primary.start();
    await prepare(primary);
    await run('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      replica.dataDir,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-sync',
    ]);
    fs.chmodSync(replica.dataDir, 0o700);
    await replica.start();
    const caughtUp = async (timeoutMs = 10_000) => {
      const lsn = (await primary.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn'))[0]!.lsn;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const done = (
          await replica.query<{ done: boolean }>(
            'select coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false) as done',
            [lsn],
          )
        )[0]!.done;
        if (done) return;
        if (Date.now() > deadline) throw new Error('the replica did not catch up');
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await caughtUp(20_000);
    return { primary, replica, root, caughtUp, destroy };
  } catch (e) {
    await destroy();
    throw e;
  }
}

export interface StandalonePg {
  server: PgServer;
  destroy(): Promise<void>;
}

/** One PostgreSQL server of the test's own (no replica), with extra settings; `prepare` runs once it is up. */
export async function startStandalonePg(
  prepare: (server: PgServer) => Promise<void>,
  extraOptions = '',
): Promise<StandalonePg> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pbapi-pg-'));
  fs.chmodSync(root, 0o755);
  const user = asUser();
  if (user.uid !== undefined) fs.chownSync(root, user.uid, user.gid!);
  const server = new PgServer(path.join(root, 'data'), await freePort(), extraOptions);
  const destroy = async () => {
    await server.stop();
    fs.rmSync(root, { recursive: true, force: true });
  };
  try {
    await run('initdb', ['-D', server.dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
    await server.start();
    await prepare(server);
    return { server, destroy };
  } catch (e) {
    await destroy();
    throw e;
  }
}
