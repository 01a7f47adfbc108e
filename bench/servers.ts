/** The two servers under test, as child processes: the real product and the bare reference. */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../db/tools/ports';
import { SERVER_NODE_FLAGS } from '../server/node-flags';
import { track } from './children';
import { medianRange } from './environment';
import type { LoadResult } from './load';

export interface RunningServer {
  url: string;
  stop(): Promise<void>;
  /** The full server's operator listener (GraphQL, /metrics) and process id (the soak reads both). */
  adminUrl?: string;
  pid?: number;
}

/**
 * CPU seconds (user + system) a process has used so far, from /proc (Linux); undefined elsewhere.
 * Per request, it is steadier than throughput on a shared machine: a busy neighbour slows the
 * server's requests, but adds little to what each one costs the server.
 */
export function cpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
const CLOCK_TICKS = 100; // USER_HZ: 100 on every Linux architecture Node.js builds for

/**
 * One load run, with the CPU time per answered request (µs) of the server process and of this
 * process (the load generator, autocannon in process); the server's on Linux only.
 */
export async function withCpu(pid: number | undefined, run: () => Promise<LoadResult>): Promise<LoadResult> {
  const before = cpuSeconds(pid);
  const client = process.cpuUsage();
  const result = await run();
  const after = cpuSeconds(pid);
  if (result.total === 0) return result;
  const used = process.cpuUsage(client);
  const clientCpuUsPerRequest = (used.user + used.system) / result.total;
  if (before === undefined || after === undefined) return { ...result, clientCpuUsPerRequest };
  return { ...result, cpuUsPerRequest: ((after - before) * 1e6) / result.total, clientCpuUsPerRequest };
}

/** The server's CPU µs per request of the runs that have one. */
export const cpuUsOf = (runs: LoadResult[]): number[] =>
  runs.flatMap((r) => (r.cpuUsPerRequest === undefined ? [] : [r.cpuUsPerRequest]));

/** cpuUsOf as median (min–max), or 'n/a'. */
export const cpuRange = (runs: LoadResult[]): string => {
  const us = cpuUsOf(runs);
  return us.length ? medianRange(us) : 'n/a';
};

function stopper(child: ChildProcess): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill('SIGTERM');
    });
}

async function waitUntilServing(url: string, child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with code ${child.exitCode}`);
    try {
      const res = await fetch(url);
      if (res.status < 500) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`server at ${url} did not come up within ${timeoutMs} ms`);
}

/**
 * Resolves once a process's start-up work is done: its CPU over each `windowMs` stays below
 * `idleShare` of a core for `quietWindows` windows in a row. Returns the time waited in ms, or
 * undefined when the CPU cannot be read (not Linux) or `timeoutMs` passed first. `readCpu` (CPU
 * seconds so far) and `sleep` are parameters so that the rule can be tested without a clock.
 */
export async function settled(
  readCpu: () => number | undefined,
  o: { windowMs?: number; idleShare?: number; quietWindows?: number; timeoutMs?: number } = {},
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<number | undefined> {
  const { windowMs = 500, idleShare = 0.1, quietWindows = 2, timeoutMs = 30_000 } = o;
  let last = readCpu();
  let quiet = 0;
  for (let waited = 0; waited < timeoutMs;) {
    if (last === undefined) return undefined;
    await sleep(windowMs);
    waited += windowMs;
    const now = readCpu();
    if (now === undefined) return undefined;
    quiet = now - last < (idleShare * windowMs) / 1000 ? quiet + 1 : 0;
    if (quiet >= quietWindows) return waited;
    last = now;
  }
  return undefined;
}

/**
 * The full server's node flags: its own (server/node-flags.ts, as `npm start` runs it), then
 * BENCH_SERVER_NODE_ARGS, flags NODE_OPTIONS refuses (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 * V8's last flag wins, so `--allocation-site-pretenuring` there measures the server without its own.
 */
export function fullServerNodeArgs(env: NodeJS.ProcessEnv = process.env): string[] {
  return [...SERVER_NODE_FLAGS, ...(env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)];
}

/**
 * `node dist/server/main.js` with every middleware, production log level, output to a file.
 * Returned once it serves and its start-up work is done: the partner listener opens first, then
 * the instance builds its operator GraphQL schema and starts its job runner (about a second of CPU
 * on a 2-core machine), which a run measured meanwhile would share the cores with (`bars/:id`
 * measured at once: 742 µs of server CPU a request against 665 once settled, machine U).
 */
export async function startFullServer(opts: {
  databaseUrl: string;
  redisUrl: string;
  poolMax: number;
  logFile: string;
  extraEnv?: NodeJS.ProcessEnv;
}): Promise<RunningServer> {
  const port = await freePort();
  const adminPort = await freePort();
  const log = fs.openSync(opts.logFile, 'w');
  const child = spawn(process.execPath, [...fullServerNodeArgs(), path.resolve(__dirname, '../server/main.js')], {
    env: {
      ...process.env,
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      DATABASE_URL: opts.databaseUrl,
      REDIS_URL: opts.redisUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_PORT: String(adminPort),
      SEED_DEMO_DATA: 'false',
      PG_POOL_MAX: String(opts.poolMax),
      // production refuses to start without a webhook encryption key; any 32 bytes do for a benchmark
      WEBHOOK_SECRET_KEY: process.env.WEBHOOK_SECRET_KEY ?? randomBytes(32).toString('base64'),
      // and without the alert e-mails' settings (no alert fires on the bench's unlimited plan)
      SMTP_URL: process.env.SMTP_URL ?? 'smtp://127.0.0.1:2525',
      MAIL_FROM: process.env.MAIL_FROM ?? 'Bench <bench@example.com>',
      PUBLIC_BASE_URL: process.env.PUBLIC_BASE_URL ?? 'https://bench.example.com',
      EMAIL_LINK_KEY: process.env.EMAIL_LINK_KEY ?? randomBytes(32).toString('base64'),
      ...(process.env.BENCH_SERVER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS } : {}),
      ...opts.extraEnv,
    },
    stdio: ['ignore', log, log],
  });
  track(child); // stopped with the runner (SIGINT, SIGTERM, a crash)
  const url = `http://127.0.0.1:${port}`;
  await waitUntilServing(`${url}/api/v1/partner/openapi.json`, child);
  await settled(() => cpuSeconds(child.pid));
  return { url, stop: stopper(child), adminUrl: `http://127.0.0.1:${adminPort}`, pid: child.pid };
}

/** An answer the bare server gives as it is, without the database (BENCH_CANNED). */
export interface CannedAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export async function startBareServer(opts: {
  databaseUrl: string;
  poolMax: number;
  fixed: Record<string, { sql: string; values: unknown[] }>;
  canned?: Record<string, CannedAnswer>;
}): Promise<RunningServer> {
  const port = await freePort();
  const child = fork(path.resolve(__dirname, 'bare-server.js'), [], {
    env: {
      ...process.env,
      DATABASE_URL: opts.databaseUrl,
      PORT: String(port),
      PG_POOL_MAX: String(opts.poolMax),
      BENCH_FIXED: JSON.stringify(opts.fixed),
      BENCH_CANNED: JSON.stringify(opts.canned ?? {}),
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  track(child);
  const url = `http://127.0.0.1:${port}`;
  await waitUntilServing(`${url}/test_endpoint`, child);
  return { url, stop: stopper(child), pid: child.pid };
}
