/**
 * Issue 11 defect 11: as root from a clone under /root (mode 700), the
 * embedded PostgreSQL (run as `postgres`) must reach its binaries and data,
 * and nothing secret may be left readable by others. Simulated with a
 * root-owned mode-700 directory standing for /root. Runs only as root.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../db/tools/embedded';
import { freePort } from '../../db/tools/ports';
import {
  postgresUser,
  reachableBinaries,
  reachableBy,
  reachableDataDir,
  sweepOrphanedData,
} from '../../db/tools/embedded-root';

const asRoot = process.getuid?.() === 0;
const rootTest = asRoot ? test : test.skip;

describe('embedded PostgreSQL as root from a directory postgres cannot reach', () => {
  let home: string; // stands for /root
  let runtime: string;

  beforeAll(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'pbapi-root-home-'));
    fs.chmodSync(home, 0o700);
    runtime = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pbapi-runtime-')), 'partner-bar-api');
    fs.chmodSync(path.dirname(runtime), 0o755); // like /var/lib
  });
  afterAll(() => {
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(path.dirname(runtime), { recursive: true, force: true });
  });

  rootTest('binaries that postgres cannot reach are copied to a root-owned runtime directory', () => {
    const user = postgresUser()!;
    const native = path.join(home, 'node_modules', 'native');
    fs.mkdirSync(path.join(native, 'bin'), { recursive: true });
    fs.writeFileSync(path.join(native, 'bin', 'postgres'), '#!/bin/sh\necho fake\n', { mode: 0o755 });
    fs.symlinkSync('postgres', path.join(native, 'bin', 'postmaster'));
    expect(reachableBy(user, path.join(native, 'bin'))).toBe(false);

    const bin = reachableBinaries(native, runtime, '18.4.0-test', user);
    expect(bin).toBe(path.join(runtime, 'pg-18.4.0-test'));
    expect(reachableBy(user, path.join(bin, 'bin'))).toBe(true);
    expect(fs.readlinkSync(path.join(bin, 'bin', 'postmaster'))).toBe('postgres');
    const st = fs.statSync(runtime);
    expect([st.uid, st.mode & 0o022]).toEqual([0, 0]);
    // Copied once: a second call reuses it.
    expect(reachableBinaries(native, runtime, '18.4.0-test', user)).toBe(bin);
  });

  rootTest('a data directory postgres cannot reach is relocated, owned by postgres, mode 700', () => {
    const user = postgresUser()!;
    const wanted = path.join(home, 'project', '.data', 'postgres');
    const dir = reachableDataDir(wanted, runtime, user);
    expect(dir).not.toBe(wanted);
    expect(dir.startsWith(runtime)).toBe(true);
    const st = fs.statSync(dir);
    expect([st.uid, st.mode & 0o777]).toEqual([user.uid, 0o700]);
    expect(reachableBy(user, dir, 'wx')).toBe(true);
    expect(reachableDataDir(wanted, runtime, user)).toBe(dir); // stable
    // A reachable one stays where it is.
    const open = fs.mkdtempSync(path.join(os.tmpdir(), 'pbapi-open-'));
    try {
      fs.chmodSync(open, 0o755);
      expect(reachableDataDir(path.join(open, 'pg'), runtime, user)).toBe(path.join(open, 'pg'));
    } finally {
      fs.rmSync(open, { recursive: true, force: true });
    }
  });

  rootTest('relocated data whose origin folder is gone is swept; data still wanted is kept', () => {
    const user = postgresUser()!;
    const gone = fs.mkdtempSync(path.join(os.tmpdir(), 'pbapi-gone-'));
    fs.chmodSync(gone, 0o700);
    const kept = reachableDataDir(path.join(home, 'kept', 'pg'), runtime, user);
    const swept = reachableDataDir(path.join(gone, 'pg'), runtime, user);
    fs.rmSync(gone, { recursive: true, force: true }); // e.g. a test's temp directory, or a deleted clone
    expect(sweepOrphanedData(runtime)).toEqual([path.dirname(swept)]);
    expect(fs.existsSync(swept)).toBe(false);
    expect(fs.existsSync(kept)).toBe(true);
  });

  rootTest(
    'starts, answers, stops; no password file left in the temp directory; the state file is private',
    async () => {
      const before = new Set(fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('pg-password-')));
      const dataDir = path.join(home, 'project', '.data', 'pg-full');
      const db = await startEmbeddedPostgres({
        dataDir,
        port: await freePort(), // a pid-derived port sat in the ephemeral range and was once taken by a client socket
        startTimeoutMs: 60_000,
        runtimeDir: runtime,
        database: 'postgres',
      });
      try {
        const client = new pg.Client({ connectionString: db.url });
        await client.connect();
        const { rows } = await client.query<{ user: string }>('select current_user as user');
        await client.end();
        expect(rows[0]!.user).toBe('postgres');
        const after = fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('pg-password-') && !before.has(f));
        expect(after).toEqual([]);
        const state = fs.statSync(`${dataDir}.json`);
        expect([state.uid, state.mode & 0o077]).toEqual([0, 0]);
        // Nothing under the runtime directory holds the password readable by others.
        const leaked = fs
          .readdirSync(runtime, { recursive: true })
          .map((f) => path.join(runtime, String(f)))
          .filter((f) => /pwfile|pw$/.test(f));
        expect(leaked).toEqual([]);
      } finally {
        await db.stop();
      }
    },
    90_000,
  );
});
