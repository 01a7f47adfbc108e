/**
 * The real server (server/main.ts through test/hardening/run-ts.js) in a
 * process of its own, development mode, no Redis unless the test sets it; its
 * JSON log lines collected, resolved once it logs `partner API listening`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  /** Every JSON log line so far (request lines left out with dropRequestLines). */
  logs: Record<string, unknown>[];
  listeningAt: number;
  exited: Promise<{ code: number | null; at: number }>;
}

export function startServerProcess(
  databaseUrl: string,
  env: Record<string, string>,
  options: { shutdownTimeoutMs: number; dropRequestLines?: boolean },
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [path.join(__dirname, '../hardening/run-ts.js'), 'server/main.ts'], {
    cwd: path.resolve(__dirname, '../..'),
    env: {
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL: databaseUrl,
      PORT: '0',
      ADMIN_PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SEED_DEMO_DATA: 'false',
      SHUTDOWN_TIMEOUT_MS: String(options.shutdownTimeoutMs),
      REDIS_URL: '',
      // tests that count 429s send them back to back; holding them (http/refusal-hold.ts) has its own tests
      RATE_LIMIT_REFUSAL_HOLD_MS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
    child.once('exit', (code) => resolve({ code, at: Date.now() })),
  );
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (!(options.dropRequestLines && entry.msg === 'request')) logs.push(entry);
          if (entry.msg === 'partner API listening')
            resolve({ child, port: Number(env.PORT ?? entry.port), logs, exited, listeningAt: Date.now() });
        } catch {
          /* not a log line */
        }
      }
    });
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    void exited.then(({ code }) => reject(new Error(`server exited (${code}) before listening: ${stderr}`)));
  });
}
