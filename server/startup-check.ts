/**
 * Configuration checked before anything listens: the first problem found is
 * returned as one line naming the variable (main prints it and exits 1), so a
 * misconfigured production server never answers a request and then dies.
 */
import fs from 'node:fs';
import type { Config } from './config';
import { webhookSettings } from './webhooks/settings';

export function startupConfigProblem(config: Config, env: NodeJS.ProcessEnv = process.env): string | undefined {
  try {
    webhookSettings(env); // WEBHOOK_SECRET_KEY: required in production, 32 bytes when set
  } catch (e) {
    return (e as Error).message;
  }
  if (config.env === 'production' && !config.databaseUrl)
    return 'DATABASE_URL is required in production (the embedded PostgreSQL is for development)';
  if (config.email.missing.length)
    return `production needs ${config.email.missing.join(', ')} (e-mail alerts; see README)`;
  if (config.tls) {
    for (const [name, file] of [
      ['TLS_CERT_FILE', config.tls.certFile],
      ['TLS_KEY_FILE', config.tls.keyFile],
    ] as const) {
      try {
        fs.accessSync(file, fs.constants.R_OK);
      } catch {
        return `${name} is not a readable file: ${file}`;
      }
    }
  }
  if (config.env === 'production' && config.testClock)
    return 'TEST_CLOCK is for tests: a production server answers at the real time (unset it)';
  return undefined;
}
