/**
 * `npm run bench -- --soak 30m [--soak-rate R] [--pg-restart "command"] [--connections N]`:
 * the realistic mix (workload.ts, every endpoint in turn) at a constant rate
 * (default: half of the maximum measured for 10 s first) for the given time,
 * on the real server (dist/server/main.js) with a redis-server of its own
 * (started on a free port, never the machine's), restarting that Redis at a
 * third of the run and PostgreSQL at two thirds (the --pg-restart command, run
 * by a shell; skipped when not given).
 *
 * Reports per minute: requests, p50/p99/max latency, 5xx, client errors, the
 * server's RSS, V8 heap used (min-max) and total, external and ArrayBuffer
 * memory, and its pool use (all but RSS from /metrics, every 5 s); errors by
 * kind; each restart's recovery (the first second from which the per-second
 * p99 stays within 1.5x the baseline + 20 ms for 3 s); and a verdict against
 * issue 22's thresholds: RSS growth under 10 % after the first 5 minutes (the
 * first sixth of a shorter run: the median RSS of the last 5 minutes against
 * that of the 5 minutes after warm-up; the highest sample beside it), no 5xx outside the restarts (a restart's
 * window lasts until 10 s after it recovered), p99 back to normal within 5 s
 * of each restart. Beside the RSS figure it prints how much of the growth is
 * in the JS heap (heap used after GC, i.e. the lowest sample, in the same two
 * stretches) and outside it, so a failed RSS criterion
 * says whether to look for a leak or at the allocator / native memory. Raw
 * figures go to bench/results/. Stopping the soak (Ctrl-C, SIGTERM) stops the
 * server and redis-server it started (bench/children.ts).
 */
import { execSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import { track } from './children';
import { median, percentile } from './environment';
import { runLoad } from './load';
import { freePort } from '../db/tools/ports';
import { startFullServer } from './servers';
import { prepareDatabase } from './setup';
import { endpoints, sampleData, type Endpoint } from './workload';
import { PARTNER_PREFIX as PREFIX } from '../server/contract/identity';

export interface SoakArgs {
  durationMs: number;
  rate: number;
  connections: number;
  pgRestart: string | undefined;
  databaseUrl: string;
  bars: number;
}

export const soakUsage = `usage: npm run bench -- --soak 30m [--soak-rate R] [--pg-restart "command"] [--connections N] [--bars N]
env: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/bars_bench); PG_POOL_MAX`;

/** "30m", "90s", "1h", or seconds. */
export function parseDuration(raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim());
  if (!m) throw new Error(`--soak takes a duration like 30m or 120s, got "${raw}"`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * unit;
}

export function parseSoakArgs(argv: string[], env: NodeJS.ProcessEnv): SoakArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      soak: { type: 'string' },
      'soak-rate': { type: 'string' },
      'pg-restart': { type: 'string' },
      connections: { type: 'string' },
      bars: { type: 'string' },
    },
    strict: true,
  });
  const num = (name: string, raw: string | undefined, fallback: number) => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got "${raw}"`);
    return n;
  };
  return {
    durationMs: parseDuration(values.soak ?? '30m'),
    rate: num('soak-rate', values['soak-rate'], 0),
    connections: num('connections', values.connections, 50) || 50,
    pgRestart: values['pg-restart'] || undefined,
    databaseUrl: env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/bars_bench',
    bars: num('bars', values.bars, 1_000_000),
  };
}

/** A redis-server of the soak's own (never the machine's): restartable on the same port. */
class OwnRedis {
  private child?: ChildProcess;
  constructor(readonly port: number) {}
  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }
  async start(): Promise<void> {
    this.child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    track(this.child); // stopped with the runner (SIGINT, SIGTERM, a crash)
    for (let i = 0; i < 100; i++) {
      const up = await new Promise<boolean>((resolve) => {
        const s = net.connect(this.port, '127.0.0.1');
        s.once('connect', () => (s.destroy(), resolve(true)));
        s.once('error', () => resolve(false));
      });
      if (up) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`redis-server did not start on port ${this.port}`);
  }
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

interface Second {
  latencies: number[];
  status: Record<string, number>;
  errors: Record<string, number>;
}
/** Memory of the server from /metrics, in MB (NaN when not read). */
interface Memory {
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
  arrayBuffersMb: number;
}
interface Sample extends Memory {
  at: number;
  rssMb: number;
  pool: Record<string, number>;
}
interface RestartEvent {
  what: string;
  at: number;
  tookMs: number;
  error?: string;
}

const maxOfFinite = (xs: number[]) => {
  const ys = xs.filter(Number.isFinite);
  return ys.length ? Math.max(...ys) : NaN;
};
const minOfFinite = (xs: number[]) => {
  const ys = xs.filter(Number.isFinite);
  return ys.length ? Math.min(...ys) : NaN;
};

function rssMb(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

const NO_MEMORY: Memory = { heapUsedMb: NaN, heapTotalMb: NaN, externalMb: NaN, arrayBuffersMb: NaN };

/** The value of an unlabelled (default labels only) metric in a /metrics text, in MB. */
function metricMb(text: string, name: string): number {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) / 1048576 : NaN;
}

/** Pool use and memory from the operator /metrics (summed over the workers with WEB_CONCURRENCY > 1). */
async function scrape(adminUrl: string | undefined, token: string): Promise<{ pool: Record<string, number> } & Memory> {
  if (!adminUrl) return { pool: {}, ...NO_MEMORY };
  try {
    const res = await fetch(`${adminUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    const pool: Record<string, number> = {};
    for (const m of text.matchAll(/^partner_db_pool_connections\{([^}]*)\} (\d+)/gm)) {
      const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
      if (labels.pool === 'partner' && labels.state) pool[labels.state] = Number(m[2]);
    }
    return {
      pool,
      heapUsedMb: metricMb(text, 'nodejs_heap_size_used_bytes'),
      heapTotalMb: metricMb(text, 'nodejs_heap_size_total_bytes'),
      externalMb: metricMb(text, 'nodejs_external_memory_bytes'),
      arrayBuffersMb: metricMb(text, 'partner_nodejs_array_buffers_bytes'),
    };
  } catch (e) {
    process.stderr.write(`soak: /metrics not read: ${(e as Error).message}\n`);
    return { pool: {}, ...NO_MEMORY };
  }
}

export async function operatorToken(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<Record<string, unknown>>(
      `select o.* from admin.create_operator('soak ' || now()::text) o`,
    );
    const token = Object.values(rows[0] ?? {}).find((v) => typeof v === 'string' && v.startsWith('pbo_'));
    return String(token ?? '');
  } finally {
    await client.end();
  }
}

export interface SoakReport {
  rate: number;
  minutes: {
    minute: number;
    requests: number;
    p50: number;
    p99: number;
    max: number;
    s5xx: number;
    errors: number;
    rssMb: number;
    /** The lowest and highest V8 heap used sampled in the minute (the lowest is closest to live data). */
    heapUsedMinMb: number;
    heapUsedMaxMb: number;
    /** The highest of these sampled in the minute. */
    heapTotalMb: number;
    externalMb: number;
    arrayBuffersMb: number;
    pool: Record<string, number>;
  }[];
  errorsByKind: Record<string, number>;
  statusCounts: Record<string, number>;
  restarts: (RestartEvent & { recoveredAfterMs: number | null })[];
  verdict: {
    /** Median RSS of the first and of the last stretch after warm-up (see summarize). */
    rssFirstMb: number;
    rssLastMb: number;
    rssGrowthPct: number;
    rssGrowthMb: number;
    rssOk: boolean;
    /** The highest sample after warm-up (the heap's rhythm, a restart's burst). */
    rssPeakMb: number;
    /** The last stretch against the first: the V8 heap (used or kept after GC)... */
    heapTotalGrowthMb: number;
    /** ...the rest of the RSS growth (allocator, Buffers, native memory)... */
    outsideHeapGrowthMb: number;
    /** ...and of it, external memory (Buffers, ArrayBuffers, native objects V8 knows of). */
    externalGrowthMb: number;
    /** Heap used after GC (lowest sample): the last stretch after warm-up against the first (a leak). */
    heapUsedGrowthPct: number;
    heapUsedGrowthMb: number;
    outside5xx: number;
    noOutside5xx: boolean;
    recoveryOk: boolean;
  };
}

export async function runSoak(args: SoakArgs): Promise<SoakReport> {
  const db = await prepareDatabase(args.databaseUrl, args.bars, 1);
  const client = new pg.Client({ connectionString: args.databaseUrl });
  await client.connect();
  const list: Endpoint[] = endpoints(await sampleData(client).finally(() => client.end()));
  let turn = 0;
  const nextCall = () => list[turn++ % list.length]!.next();
  const headers = { authorization: `Bearer ${db.apiKey}`, accept: 'application/json' };

  const redis = new OwnRedis(await freePort());
  await redis.start();
  const logFile = path.join(os.tmpdir(), 'bench-soak-server.log');
  const server = await startFullServer({
    databaseUrl: args.databaseUrl,
    redisUrl: redis.url,
    poolMax: Number(process.env.PG_POOL_MAX || 10),
    logFile,
    extraEnv: { LOG_LEVEL: 'warn' }, // 30 minutes of access log would fill the disk
  });
  const token = await operatorToken(args.databaseUrl);
  const log = (m: string) => process.stderr.write(`soak: ${m}\n`);
  try {
    let rate = args.rate;
    if (!rate) {
      const max = await runLoad({
        url: server.url,
        nextPath: () => PREFIX + nextCall().path,
        connections: args.connections,
        duration: 10,
        headers,
      });
      rate = Math.max(1, Math.round(max.rps / 2));
      log(`measured max ${Math.round(max.rps)} req/s on the mix; soaking at ${rate} req/s`);
    }

    const started = Date.now();
    const seconds: Second[] = [];
    const at = () => Math.floor((Date.now() - started) / 1000);
    const second = () => (seconds[at()] ??= { latencies: [], status: {}, errors: {} });
    const samples: Sample[] = [];
    const events: RestartEvent[] = [];

    const instance = autocannon({
      url: server.url,
      connections: args.connections,
      duration: args.durationMs / 1000,
      overallRate: rate,
      headers,
      requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: PREFIX + nextCall().path }) }],
    }) as unknown as NodeJS.EventEmitter & Promise<unknown>;
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, ms: number) => {
      const s = second();
      s.latencies.push(ms);
      s.status[statusCode] = (s.status[statusCode] ?? 0) + 1;
    });
    instance.on('reqError', (err: NodeJS.ErrnoException) => {
      const s = second();
      const kind = err.code ?? err.message;
      s.errors[kind] = (s.errors[kind] ?? 0) + 1;
    });

    const sampler = setInterval(() => {
      const rss = rssMb(server.pid);
      void scrape(server.adminUrl, token).then((m) => samples.push({ at: Date.now() - started, rssMb: rss, ...m }));
    }, 5000);
    const restart = async (what: string, fn: () => Promise<void>) => {
      const t0 = Date.now();
      const event: RestartEvent = { what, at: t0 - started, tookMs: 0 };
      try {
        await fn();
      } catch (e) {
        event.error = (e as Error).message;
      }
      event.tookMs = Date.now() - t0;
      events.push(event);
      log(
        `${what} restarted at ${Math.round(event.at / 1000)} s (${event.tookMs} ms)${event.error ? `: ${event.error}` : ''}`,
      );
    };
    const timers = [
      setTimeout(
        () =>
          void restart('redis', async () => {
            await redis.stop();
            await redis.start();
          }),
        args.durationMs / 3,
      ),
      setTimeout(
        () => {
          if (!args.pgRestart) return log('no --pg-restart command: PostgreSQL is not restarted');
          void restart('postgresql', async () => void execSync(args.pgRestart!, { stdio: 'ignore', timeout: 120_000 }));
        },
        (2 * args.durationMs) / 3,
      ),
    ];
    const minuteTicker = setInterval(() => log(`${Math.round((Date.now() - started) / 60_000)} min`), 60_000);
    await instance;
    for (const t of timers) clearTimeout(t);
    clearInterval(sampler);
    clearInterval(minuteTicker);
    return analyse(rate, seconds, samples, events, args.durationMs);
  } finally {
    await server.stop();
    await redis.stop();
  }
}

function analyse(
  rate: number,
  seconds: Second[],
  samples: Sample[],
  events: RestartEvent[],
  durationMs: number,
): SoakReport {
  const all = Array.from({ length: seconds.length }, (_, i) => seconds[i] ?? { latencies: [], status: {}, errors: {} });
  const p99Of = (secs: Second[]) =>
    percentile(
      secs.flatMap((s) => s.latencies).sort((a, b) => a - b),
      99,
    );
  const count5xx = (s: Second) => Object.entries(s.status).reduce((n, [c, k]) => n + (Number(c) >= 500 ? k : 0), 0);

  const restarts = events.map((e) => {
    const from = Math.floor(e.at / 1000);
    const baseline = p99Of(all.slice(Math.max(0, from - 60), from));
    const normal = (s: Second | undefined) =>
      !!s && (s.latencies.length === 0 || p99Of([s]) <= baseline * 1.5 + 20) && count5xx(s) === 0;
    let recovered: number | null = null;
    for (let t = from; t + 2 < all.length; t++)
      if (normal(all[t]) && normal(all[t + 1]) && normal(all[t + 2])) {
        recovered = t;
        break;
      }
    const end = Math.ceil((e.at + e.tookMs) / 1000);
    return {
      ...e,
      recoveredAfterMs: recovered === null ? null : Math.max(0, recovered * 1000 - (e.at + e.tookMs)),
      end,
    };
  });
  const inRestart = (t: number) =>
    restarts.some(
      (r) =>
        t >= Math.floor(r.at / 1000) &&
        t <= (r.recoveredAfterMs === null ? Infinity : r.end + r.recoveredAfterMs / 1000 + 10),
    );
  const outside5xx = all.reduce((n, s, t) => n + (inRestart(t) ? 0 : count5xx(s)), 0);

  const minutes = [];
  for (let m = 0; m * 60 < all.length; m++) {
    const secs = all.slice(m * 60, m * 60 + 60);
    const lat = secs.flatMap((s) => s.latencies).sort((a, b) => a - b);
    const inMinute = samples.filter((s) => Math.floor(s.at / 60_000) === m);
    const pool: Record<string, number> = {};
    for (const s of inMinute) for (const [k, v] of Object.entries(s.pool)) pool[k] = Math.max(pool[k] ?? 0, v);
    minutes.push({
      minute: m + 1,
      requests: lat.length,
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      max: lat[lat.length - 1] ?? NaN,
      s5xx: secs.reduce((n, s) => n + count5xx(s), 0),
      errors: secs.reduce((n, s) => n + Object.values(s.errors).reduce((a, b) => a + b, 0), 0),
      rssMb: maxOfFinite(inMinute.map((s) => s.rssMb)),
      heapUsedMinMb: minOfFinite(inMinute.map((s) => s.heapUsedMb)),
      heapUsedMaxMb: maxOfFinite(inMinute.map((s) => s.heapUsedMb)),
      heapTotalMb: maxOfFinite(inMinute.map((s) => s.heapTotalMb)),
      externalMb: maxOfFinite(inMinute.map((s) => s.externalMb)),
      arrayBuffersMb: maxOfFinite(inMinute.map((s) => s.arrayBuffersMb)),
      pool,
    });
  }
  const errorsByKind: Record<string, number> = {};
  const statusCounts: Record<string, number> = {};
  for (const s of all) {
    for (const [k, v] of Object.entries(s.errors)) errorsByKind[k] = (errorsByKind[k] ?? 0) + v;
    for (const [k, v] of Object.entries(s.status)) statusCounts[k] = (statusCounts[k] ?? 0) + v;
  }
  // RSS growth after warm-up (the first 5 minutes, a sixth of a shorter run): the resident size of
  // the last stretch against the first stretch after warm-up (5 minutes each, a third of what is
  // left in a shorter run), each the median of its samples. A leak raises the whole late stretch;
  // the heap's own rhythm (V8 lets garbage reach its old-generation limit, large bodies are
  // allocated there directly, then a mark-compact frees it) raises single samples, which the
  // peak shows beside it.
  const warm = Math.min(5 * 60_000, durationMs / 6);
  const after = samples.filter((s) => s.at >= warm && Number.isFinite(s.rssMb)).sort((a, b) => a.at - b.at);
  const end = after.length ? after[after.length - 1]!.at : 0;
  const stretch = Math.min(5 * 60_000, (end - warm) / 3);
  const within = (from: number, to: number) => after.filter((s) => s.at >= from && s.at <= to);
  const first = within(warm, warm + stretch);
  const last = within(end - stretch, end);
  const medianOf = (list: Sample[], pick: (s: Sample) => number) => median(list.map(pick));
  const rssFirstMb = medianOf(first, (s) => s.rssMb);
  const rssLastMb = medianOf(last, (s) => s.rssMb);
  const rssGrowthMb = rssLastMb - rssFirstMb;
  const rssGrowthPct = (rssGrowthMb / rssFirstMb) * 100;
  const rssPeakMb = maxOfFinite(after.map((s) => s.rssMb));
  // Where the growth is: the V8 heap (heap total: live data and what V8 keeps after GC) and the
  // rest (outside the V8 heap), external memory part of the rest; the same two stretches.
  const heapTotalGrowthMb = medianOf(last, (s) => s.heapTotalMb) - medianOf(first, (s) => s.heapTotalMb);
  // Live JS data: heap used drops at each GC, so the lowest sample is the closest to what is live.
  const heapFloor = (list: Sample[]) => minOfFinite(list.map((s) => s.heapUsedMb));
  const firstFloor = heapFloor(first);
  const heapUsedGrowthMb = heapFloor(last) - firstFloor;
  return {
    rate,
    minutes,
    errorsByKind,
    statusCounts,
    restarts: restarts.map(({ end: _end, ...r }) => r),
    verdict: {
      rssFirstMb,
      rssLastMb,
      rssGrowthPct,
      rssGrowthMb,
      rssOk: rssGrowthPct < 10,
      rssPeakMb,
      heapTotalGrowthMb,
      outsideHeapGrowthMb: rssGrowthMb - heapTotalGrowthMb,
      externalGrowthMb: medianOf(last, (s) => s.externalMb) - medianOf(first, (s) => s.externalMb),
      heapUsedGrowthPct: (heapUsedGrowthMb / firstFloor) * 100,
      heapUsedGrowthMb,
      outside5xx,
      noOutside5xx: outside5xx === 0,
      recoveryOk:
        restarts.length > 0 && restarts.every((r) => r.recoveredAfterMs !== null && r.recoveredAfterMs <= 5000),
    },
  };
}

const f = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '-');
const sign = (n: number) => (Number.isFinite(n) && n >= 0 ? `+${f(n)}` : f(n));

/**
 * Where the RSS growth is: live JS data (a leak to find), the V8 heap kept after GC, or outside the
 * V8 heap (allocator, Buffers, native memory).
 */
export function whereGrowth(v: SoakReport['verdict']): string {
  if (![v.rssGrowthMb, v.heapUsedGrowthMb, v.heapTotalGrowthMb].every(Number.isFinite)) return 'not measured';
  if (v.rssOk) return 'within the threshold';
  if (v.heapUsedGrowthMb >= v.rssGrowthMb / 2) return 'mostly live JS data: a leak? (take heap snapshots)';
  if (v.heapTotalGrowthMb >= v.outsideHeapGrowthMb)
    return 'mostly V8 heap kept after GC (heap total grew, heap used after GC did not): not a JS leak';
  return 'mostly outside the V8 heap (allocator, Buffers, native memory): not a JS leak';
}

export function printSoak(r: SoakReport): void {
  console.log(`\n## Soak at ${r.rate} req/s (realistic mix)\n`);
  console.log(
    '| minute | requests | p50 ms | p99 ms | max ms | 5xx | client errors | RSS MB | heap used MB (min–max) | heap total MB | external MB | ArrayBuffers MB | pool total/idle/waiting (max) |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const m of r.minutes)
    console.log(
      `| ${m.minute} | ${m.requests} | ${f(m.p50)} | ${f(m.p99)} | ${f(m.max)} | ${m.s5xx} | ${m.errors} | ${f(m.rssMb)} | ${f(m.heapUsedMinMb)}–${f(m.heapUsedMaxMb)} | ${f(m.heapTotalMb)} | ${f(m.externalMb)} | ${f(m.arrayBuffersMb)} | ${m.pool.total ?? '-'}/${m.pool.idle ?? '-'}/${m.pool.waiting ?? '-'} |`,
    );
  console.log(`\nstatus codes: ${JSON.stringify(r.statusCounts)}`);
  console.log(`errors by kind: ${JSON.stringify(r.errorsByKind)}`);
  for (const e of r.restarts)
    console.log(
      `restart ${e.what} at ${Math.round(e.at / 1000)} s, took ${e.tookMs} ms${e.error ? ` (failed: ${e.error})` : ''}; p99 normal again ${e.recoveredAfterMs === null ? 'never' : `${e.recoveredAfterMs} ms`} after`,
    );
  const v = r.verdict;
  console.log(`\n### Verdict (issue 22 thresholds)\n`);
  console.log(
    `- RSS growth after warm-up (median of the last stretch against the first): ${f(v.rssFirstMb)} → ${f(v.rssLastMb)} MB, ${sign(v.rssGrowthPct)} % (< 10 %): ${v.rssOk ? 'PASS' : 'FAIL'}; highest sample ${f(v.rssPeakMb)} MB`,
  );
  console.log(
    `  - of the growth: V8 heap total ${sign(v.heapTotalGrowthMb)} MB, outside the V8 heap ${sign(v.outsideHeapGrowthMb)} MB (external ${sign(v.externalGrowthMb)} MB)`,
  );
  console.log(
    `  - heap used after GC (lowest sample), first stretch to the last: ${sign(v.heapUsedGrowthMb)} MB (${sign(v.heapUsedGrowthPct)} %)`,
  );
  console.log(`  - so the RSS growth is ${whereGrowth(v)}`);
  console.log(`- 5xx outside the restarts: ${v.outside5xx} (0): ${v.noOutside5xx ? 'PASS' : 'FAIL'}`);
  console.log(`- p99 back to normal within 5 s of each restart: ${v.recoveryOk ? 'PASS' : 'FAIL'}`);
}

/** The `--soak` entry of bench/run.ts. */
export async function soakMain(argv: string[]): Promise<void> {
  let args: SoakArgs;
  try {
    args = parseSoakArgs(argv, process.env);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${soakUsage}\n`);
    process.exit(2);
  }
  const report = await runSoak(args);
  printSoak(report);
  const out = path.resolve(__dirname, '../../bench/results');
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(
    path.join(out, `soak-${new Date().toISOString().replace(/:/g, '-')}.json`),
    JSON.stringify({ args: { ...args, databaseUrl: undefined }, ...report }, null, 2),
  );
}
