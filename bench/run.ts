/**
 * `npm run bench -- [options]` (see args.ts): database time per endpoint,
 * then HTTP load on the real server (max throughput and constant rate), then
 * the same fixed requests against a bare node:http + pg server for the
 * full/bare ratio; `--explain` writes EXPLAIN (ANALYZE, BUFFERS) of the worst
 * cases to docs/explain/. Prints markdown tables; raw figures go to bench/results/.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { parseBenchArgs, usage, type BenchArgs } from './args';
import { timeCalls, type Timing } from './db-time';
import { explainWorstCases } from './explain';
import { runLoad, type LoadResult } from './load';
import { startBareServer, startFullServer } from './servers';
import { soakMain } from './soak';
import { prepareDatabase } from './setup';
import { endpoints, sampleData, type Endpoint } from './workload';

const PREFIX = '/api/v1/partner';
const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '-');
const f0 = (n: number) => (Number.isFinite(n) ? Math.round(n).toString() : '-');

function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** Commands Redis received from clients (script calls count once; what they run inside is not a round trip). */
/** Commands only the rate-limit scripts call (server/ratelimit/buckets.ts; rate-limit-redis), plus INFO itself. */
const SCRIPT_INTERNAL = ['info', 'get', 'pttl', 'incr', 'decr', 'exists', 'pexpireat', 'hincrby', 'hset', 'hget'];

async function redisCommands(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm))
    // commandstats also counts what scripts call inside Redis; only what a client sends is a round trip.
    if (!SCRIPT_INTERNAL.includes(m[1]!)) calls += Number(m[2]);
  return calls;
}

async function dbPhase(args: BenchArgs, list: Endpoint[]) {
  const mix: Record<string, Timing> = {};
  const worst: { endpoint: string; label: string; ms: number }[] = [];
  for (const e of list) {
    mix[e.name] = await timeCalls(
      args.databaseUrl,
      Array.from({ length: args.dbSamples }, () => e.next()),
    );
    for (const call of e.worst) {
      const runs = [];
      for (let i = 0; i < 3; i++) runs.push((await timeCalls(args.databaseUrl, [call])).max);
      worst.push({ endpoint: e.name, label: call.label ?? '', ms: runs.sort((a, b) => a - b)[1]! });
    }
  }
  console.log(
    `\n## Database time (sequential calls on one connection, ms; realistic mix, ${args.dbSamples} calls each)\n`,
  );
  console.log(
    table(
      ['endpoint', 'p50', 'p90', 'p99', 'max', 'slowest call'],
      list.map((e) => {
        const t = mix[e.name]!;
        return [e.name, f1(t.p50), f1(t.p90), f1(t.p99), f1(t.max), `\`${t.worst?.path ?? ''}\``];
      }),
    ),
  );
  console.log('\n## Database time of the worst cases (median of 3 warm runs, ms)\n');
  console.log(
    table(
      ['endpoint', 'case', 'ms'],
      worst.map((w) => [w.endpoint, w.label, f1(w.ms)]),
    ),
  );
  return { mix, worst };
}

async function httpPhase(args: BenchArgs, list: Endpoint[], apiKey: string, poolMax: number) {
  const server = await startFullServer({
    databaseUrl: args.databaseUrl,
    redisUrl: args.redisUrl,
    poolMax,
    logFile: path.join(os.tmpdir(), 'bench-full-server.log'),
  });
  const redis = new Redis(args.redisUrl);
  const keyHeader = { authorization: `Bearer ${apiKey}` };
  const results: Record<string, { max: LoadResult; rate: LoadResult; rateTarget: number; redisPerRequest: number }> =
    {};
  try {
    for (const e of list) {
      const nextPath = () => PREFIX + e.next().path;
      const headers = { ...keyHeader, ...e.headers }; // e.g. Accept-Encoding of the compressed cases
      await runLoad({ url: server.url, nextPath, connections: 10, duration: 1, headers }); // warm-up
      const before = await redisCommands(redis);
      const max = await runLoad({
        url: server.url,
        nextPath,
        connections: args.connections,
        duration: args.duration,
        headers,
      });
      const redisPerRequest = ((await redisCommands(redis)) - before) / Math.max(1, max.total);
      const rateTarget = Math.max(1, Math.round(args.rate || max.rps / 2));
      const rate = await runLoad({
        url: server.url,
        nextPath,
        connections: args.connections,
        duration: args.duration,
        rate: rateTarget,
        headers,
      });
      results[e.name] = { max, rate, rateTarget, redisPerRequest };
    }
  } finally {
    redis.disconnect();
    await server.stop();
  }
  console.log(`\n## Full server, realistic mix (${args.connections} connections, ${args.duration} s per run)\n`);
  console.log(
    'max = max-throughput mode; latency columns = constant-rate mode (overallRate, coordinated omission corrected) at the given rate\n',
  );
  console.log(
    table(
      [
        'endpoint',
        'max req/s',
        'errors+non2xx',
        'rate req/s',
        'p50 ms',
        'p90 ms',
        'p99 ms',
        'max ms',
        'errors+non2xx',
        'redis calls/req',
      ],
      list.map((e) => {
        const r = results[e.name]!;
        const lat = (n: number) => (r.rate.total ? f1(n) : 'none completed');
        return [
          e.name,
          r.max.total ? f0(r.max.rps) : 'none completed',
          r.max.errors + r.max.non2xx,
          r.rateTarget,
          lat(r.rate.p50),
          lat(r.rate.p90),
          lat(r.rate.p99),
          lat(r.rate.max),
          r.rate.errors + r.rate.non2xx,
          r.max.total ? r.redisPerRequest.toFixed(2) : '-',
        ];
      }),
    ),
  );
  return results;
}

async function ratioPhase(args: BenchArgs, list: Endpoint[], apiKey: string, poolMax: number) {
  const fixed = Object.fromEntries(list.map((e) => [e.name, { sql: e.fixed.sql, values: e.fixed.values }]));
  const results: Record<string, { bare: LoadResult; full: LoadResult }> = {};
  const bare = await startBareServer({ databaseUrl: args.databaseUrl, poolMax, fixed });
  const bareRuns: Record<string, LoadResult> = {};
  try {
    for (const e of list) {
      await runLoad({ url: bare.url, nextPath: () => `/${e.name}`, connections: 10, duration: 1 });
      bareRuns[e.name] = await runLoad({
        url: bare.url,
        nextPath: () => `/${e.name}`,
        connections: args.connections,
        duration: args.duration,
      });
    }
  } finally {
    await bare.stop();
  }
  const full = await startFullServer({
    databaseUrl: args.databaseUrl,
    redisUrl: args.redisUrl,
    poolMax,
    logFile: path.join(os.tmpdir(), 'bench-full-server.log'),
  });
  try {
    for (const e of list) {
      const headers = { authorization: `Bearer ${apiKey}` };
      await runLoad({ url: full.url, nextPath: () => PREFIX + e.fixed.path, connections: 10, duration: 1, headers });
      results[e.name] = {
        bare: bareRuns[e.name]!,
        full: await runLoad({
          url: full.url,
          nextPath: () => PREFIX + e.fixed.path,
          connections: args.connections,
          duration: args.duration,
          headers,
        }),
      };
    }
  } finally {
    await full.stop();
  }
  console.log(
    `\n## Full vs bare on the same fixed request (max throughput, ${args.connections} connections, ${args.duration} s)\n`,
  );
  console.log(
    table(
      [
        'endpoint',
        'request',
        'bare req/s',
        'bare p99 ms',
        'full req/s',
        'full p50 ms',
        'full p99 ms',
        'full/bare',
        'errors+non2xx',
      ],
      list.map((e) => {
        const r = results[e.name]!;
        const done = r.bare.total > 0 && r.full.total > 0;
        return [
          e.name,
          `\`${e.fixed.path}\``,
          f0(r.bare.rps),
          f1(r.bare.p99),
          f0(r.full.rps),
          f1(r.full.p50),
          f1(r.full.p99),
          done ? (r.full.rps / r.bare.rps).toFixed(2) : 'none completed',
          r.full.errors + r.full.non2xx + r.bare.errors + r.bare.non2xx,
        ];
      }),
    ),
  );
  return results;
}

async function main(): Promise<void> {
  if (process.argv.slice(2).some((a) => a === '--soak' || a.startsWith('--soak=')))
    return soakMain(process.argv.slice(2));
  let args: BenchArgs;
  try {
    args = parseBenchArgs(process.argv.slice(2), process.env);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${usage}\n`);
    process.exit(2);
  }
  const poolMax = Number(process.env.PG_POOL_MAX || 10);
  const db = await prepareDatabase(args.databaseUrl, args.bars, args.seed);
  const scale = `${db.bars.toLocaleString('en-US')} bars, ~${db.events.toLocaleString('en-US')} events, ~${db.posts.toLocaleString('en-US')} posts`;
  console.log(
    `# Partner API benchmark\n\n${new Date().toISOString()} · ${scale} · ${os.cpus().length} CPUs (${os.cpus()[0]?.model}) · Node ${process.version} · load avg ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} · PG_POOL_MAX ${poolMax}`,
  );

  const client = new pg.Client({ connectionString: args.databaseUrl });
  await client.connect();
  const sample = await sampleData(client).finally(() => client.end());
  const list = endpoints(sample).filter((e) => !args.only || args.only.includes(e.name));
  const all: Record<string, unknown> = {
    at: new Date().toISOString(),
    scale,
    args: { ...args, databaseUrl: undefined },
  };

  if (args.explain) {
    const summaries = await explainWorstCases(args.databaseUrl, list, args.explainDir, scale);
    console.log(`\n## EXPLAIN of the worst cases (files in ${args.explainDir})\n`);
    console.log(
      table(
        ['file', 'ms (with ANALYZE overhead)', 'seq scans of large tables'],
        summaries.map((s) => [path.basename(s.file), f1(s.ms), s.seqScans.join(', ') || 'none']),
      ),
    );
    all.explain = summaries;
  }
  if (args.db) all.db = await dbPhase(args, list);
  if (args.http) all.http = await httpPhase(args, list, db.apiKey, poolMax);
  if (args.ratio) all.ratio = await ratioPhase(args, list, db.apiKey, poolMax);

  const out = path.resolve(__dirname, '../../bench/results');
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, `${all.at as string}.json`.replace(/:/g, '-')), JSON.stringify(all, null, 2));
}

main().catch((e: Error) => {
  process.stderr.write(`bench failed: ${e.stack ?? e.message}\n`);
  process.exit(1);
});
