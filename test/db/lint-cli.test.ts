/**
 * `npm run db:lint` where the server has no plpgsql_check: the embedded PostgreSQL (it ships no
 * extensions), started by the command itself as on a developer's machine. A local run skips with a
 * message and exits 0; a CI run (CI=true) fails. The command runs from its TypeScript source.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../server/config';
import { freePort } from '../../db/tools/ports';

const runTs = path.join(projectRoot, 'test/hardening/run-ts.js');
const cli = path.join(projectRoot, 'db/tools/lint-cli.ts');

function lint(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [runTs, cli], {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), 110_000);
    child.on('exit', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('db:lint on a server without plpgsql_check (the embedded PostgreSQL)', () => {
  let dir: string;
  let port: number;
  beforeAll(async () => {
    fs.mkdirSync(path.join(projectRoot, '.data'), { recursive: true });
    dir = fs.mkdtempSync(path.join(projectRoot, '.data', 'lint-cli-test-'));
    port = await freePort();
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const env = (ci: Record<string, string>) => ({
    EMBEDDED_PG_DIR: path.join(dir, 'pg'),
    EMBEDDED_PG_PORT: String(port),
    ...ci,
  });

  test('a local run skips, says so and exits 0', async () => {
    const result = await lint(env({}));
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(
      /db:lint: SKIPPED, nothing was checked: the plpgsql_check extension is not installed/,
    );
    expect(result.code).toBe(0);
  }, 120_000);

  test('CI=true fails with exit 1, naming the package to install', async () => {
    const result = await lint(env({ CI: 'true' }));
    expect(result.stderr).toMatch(
      /db:lint: FAILED: the plpgsql_check extension is not installed.*postgresql-15-plpgsql-check/,
    );
    expect(result.stdout).not.toMatch(/SKIPPED/);
    expect(result.code).toBe(1);
  }, 120_000);
});
