/**
 * Issue 22: production configuration is checked before anything listens or
 * touches the database: one line naming the variable, exit 1.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createTestDatabase, type TestDatabase } from '../support/db';

function run(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'run-ts.js'), 'server/main.ts'], {
      cwd: path.resolve(__dirname, '../..'),
      env: {
        ...process.env,
        PORT: '0',
        ADMIN_PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        SEED_DEMO_DATA: 'false',
        REDIS_URL: '',
        WEBHOOK_SECRET_KEY: '',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    // A server that got past the check would listen: stop it so the test reports instead of hanging.
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('configuration checked before listening', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  test.each([
    [{ NODE_ENV: 'production' }, /^error: WEBHOOK_SECRET_KEY is required in production/],
    [{ NODE_ENV: 'production', WEBHOOK_SECRET_KEY: 'too-short' }, /^error: WEBHOOK_SECRET_KEY must be 32 bytes/],
    [
      { NODE_ENV: 'production', DATABASE_URL: '', WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString('base64') },
      /^error: DATABASE_URL is required in production/,
    ],
    [{ NODE_ENV: 'development', TLS_CERT_FILE: '/nonexistent.pem', TLS_KEY_FILE: '/nonexistent.key' }, /TLS_CERT_FILE/],
    [{ NODE_ENV: 'development', PG_POOL_MAX: 'many' }, /^error: PG_POOL_MAX must be/],
    [{ NODE_ENV: 'development', PG_PREPARED_STATEMENTS: 'sometimes' }, /^error: PG_PREPARED_STATEMENTS must be/],
    [{ NODE_ENV: 'development', DATABASE_READ_MAX_LAG_MS: '5s' }, /^error: DATABASE_READ_MAX_LAG_MS must be/],
    [{ NODE_ENV: 'development', SMTP_TIMEOUT_MS: '0' }, /^error: SMTP_TIMEOUT_MS must be/],
    [{ NODE_ENV: 'development', TEST_CLOCK: '2026-11-25 15:30' }, /^error: TEST_CLOCK must be an ISO 8601 instant/],
    // a fixed clock is a test setting: production answers at the real time
    [
      {
        NODE_ENV: 'production',
        WEBHOOK_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
        SMTP_URL: 'smtp://127.0.0.1:1',
        MAIL_FROM: 'Alerts <a@example.com>',
        PUBLIC_BASE_URL: 'https://api.example.com',
        EMAIL_LINK_KEY: Buffer.alloc(32, 9).toString('base64'),
        TEST_CLOCK: '2026-11-25T15:30:00Z',
      },
      /^error: TEST_CLOCK is for tests/,
    ],
  ])('%j: one line naming the variable, exit 1, nothing served', async (env, line) => {
    const { code, stdout, stderr } = await run({ DATABASE_URL: db.url, ...env });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(line)]);
    expect(stdout).not.toMatch(/listening/);
    expect(stdout).toBe(''); // not even a log line: nothing was started
  });
});
