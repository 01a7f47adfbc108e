/**
 * A start that cannot work fails within seconds with a one-line reason.
 * These spawn the real `node dist/server/main.js` with npm start's flags (`npm test` builds dist first).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../server/config';
import { SERVER_NODE_FLAGS } from '../../server/node-flags';

const main = path.join(projectRoot, 'dist/server/main.js');

function startServer(env: Record<string, string>): Promise<{ code: number | null; stderr: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, main], {
      env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), LOG_LEVEL: 'silent', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30000);
    child.on('exit', (code) => {
      clearTimeout(killer);
      resolve({ code, stderr, ms: Date.now() - started });
    });
  });
}

function listenOnFreePort(): Promise<net.Server> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => resolve(server));
  });
}

describe('npm start with the embedded database, when it cannot work', () => {
  beforeAll(() => {
    if (!fs.existsSync(main)) throw new Error('dist/server/main.js is missing: run `npm run build` (npm test does)');
  });

  test('a taken port: exits 1 within seconds, one line naming the port', async () => {
    const blocker = await listenOnFreePort();
    const port = (blocker.address() as net.AddressInfo).port;
    fs.mkdirSync(path.join(projectRoot, '.data'), { recursive: true });
    const dir = fs.mkdtempSync(path.join(projectRoot, '.data', 'start-test-'));
    try {
      const result = await startServer({
        EMBEDDED_PG_PORT: String(port),
        EMBEDDED_PG_DIR: path.join(dir, 'pg'),
        PORT: '0',
      });
      expect(result.code).toBe(1);
      expect(result.ms).toBeLessThan(15000);
      expect(result.stderr.trim().split('\n')).toEqual([expect.stringContaining(`port ${port} is already in use`)]);
    } finally {
      blocker.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  // As root, a data directory `postgres` cannot reach is relocated under EMBEDDED_PG_RUNTIME_DIR
  // (docs/OPERATIONS.md "Running as root"); what cannot work then is an unsafe runtime directory.
  test('a data directory that cannot be used: exits 1 within seconds, one line naming the directory', async () => {
    const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'locked-'));
    fs.chmodSync(parent, 0o500); // nobody but root may enter; root's postgres user cannot either
    const runtime = fs.mkdtempSync(path.join(os.tmpdir(), 'locked-runtime-'));
    fs.chmodSync(runtime, 0o777); // writable by anyone: refused for binaries and data
    const blocker = await listenOnFreePort();
    const port = (blocker.address() as net.AddressInfo).port;
    blocker.close();
    try {
      const result = await startServer({
        EMBEDDED_PG_PORT: String(port),
        EMBEDDED_PG_DIR: path.join(parent, 'sub', 'pg'),
        EMBEDDED_PG_RUNTIME_DIR: runtime,
        PORT: '0',
      });
      expect(result.code).toBe(1);
      expect(result.ms).toBeLessThan(15000);
      const lines = result.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^error: cannot start the embedded PostgreSQL: .*(sub|locked-)/);
    } finally {
      fs.chmodSync(parent, 0o700);
      fs.rmSync(parent, { recursive: true, force: true });
      fs.rmSync(runtime, { recursive: true, force: true });
    }
  });
});
