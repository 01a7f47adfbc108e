/**
 * Production configuration is checked before listening: without the e-mail
 * settings the server exits 1 with one line naming what is missing.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../server/config';

test('NODE_ENV=production without SMTP_URL, MAIL_FROM, PUBLIC_BASE_URL, EMAIL_LINK_KEY: one line, exit 1', () => {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production', PORT: '0', ADMIN_PORT: '0' };
  for (const name of ['SMTP_URL', 'MAIL_FROM', 'PUBLIC_BASE_URL', 'EMAIL_LINK_KEY', 'DATABASE_URL']) delete env[name];
  env.MAIL_FROM = 'Alerts <a@example.com>';
  // so that the e-mail settings are the first problem (the database is never reached)
  env.WEBHOOK_SECRET_KEY = Buffer.alloc(32, 7).toString('base64');
  env.DATABASE_URL = 'postgres://postgres@127.0.0.1:1/unused';
  const run = spawnSync(process.execPath, [path.join(projectRoot, 'test/hardening/run-ts.js'), 'server/main.ts'], {
    cwd: projectRoot,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(run.status).toBe(1);
  expect(run.stderr.trim().split('\n')).toEqual([
    'error: production needs SMTP_URL, PUBLIC_BASE_URL, EMAIL_LINK_KEY (e-mail alerts; see README)',
  ]);
});
