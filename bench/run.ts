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
import {
  cpuYardstick,
  gitCommit,
  loopbackYardstick,
  machineHugePages,
  median,
  medianRange,
  pgbenchBar,
  postgresSettings,
  transports,
  warm,
} from './environment';
import { machineAtEnd, type Yardsticks } from './machine-drift';
import { table } from './markdown';
import { explainWorstCases } from './explain';
import { graphqlPhase } from './graphql';
import { runLoad, type LoadResult } from './load';
import { cpuRange, cpuUsOf, startBareServer, startFullServer, withCpu } from './servers';
import { soakMain } from './soak';
import { prepareDatabase } from './setup';
import { floodPhase } from './flood';
import { logFloodPhase } from './log-flood';
import { usagePathCostPhase } from './usage-path-cost';
import { measureInTurn, type CaseResult } from './in-turn';
import { alternationGroups, endpoints, sampleData, targetEndpoints, withEncodings, type Endpoint } from './workload';
import { PARTNER_PREFIX as PREFIX } from '../server/contract/identity';

const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '-');

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
  const worst: { endpoint: string; label: string; ms: number; firstMs: number }[] = [];
  const mixRuns: Record<string, Timing[]> = {};
  for (const e of list) {
    mixRuns[e.name] = [];
    for (let run = 0; run < args.runs; run++)
      mixRuns[e.name]!.push(
        await timeCalls(
          args.databaseUrl,
          Array.from({ length: args.dbSamples }, () => e.next()),
        ),
      );
    mix[e.name] = [...mixRuns[e.name]!].sort((a, b) => a.p50 - b.p50)[Math.floor((args.runs - 1) / 2)]!;
    // The same call 4 times on one new connection: the first pays for the session's caches (the
    // plpgsql function compiled, its statements planned), as a fresh pool connection would; the
    // median of the other 3 is what a warm pooled connection costs.
    for (const call of e.worst) {
      const [first = NaN, ...warmRuns] = (await timeCalls(args.databaseUrl, [call, call, call, call])).times;
      worst.push({ endpoint: e.name, label: call.label ?? '', ms: median(warmRuns), firstMs: first });
    }
  }
  console.log(
    `\n## Database time (sequential calls on one connection, ms; realistic mix, ${args.dbSamples} calls each; median (min–max) of ${args.runs} runs)\n`,
  );
  console.log(
    table(
      ['endpoint', 'p50', 'p90', 'p99', 'max', 'slowest call (median run)'],
      list.map((e) => {
        const runs = mixRuns[e.name]!;
        const of = (k: 'p50' | 'p90' | 'p99' | 'max') =>
          medianRange(
            runs.map((t) => t[k]),
            1,
          );
        return [e.name, of('p50'), of('p90'), of('p99'), of('max'), `\`${mix[e.name]!.worst?.path ?? ''}\``];
      }),
    ),
  );
  console.log(
    '\n## Database time of the worst cases (ms; one new connection per case: its first call, then the median of 3 more)\n',
  );
  console.log(
    table(
      ['endpoint', 'case', 'warm ms', 'first call on the connection ms'],
      worst.map((w) => [w.endpoint, w.label, f1(w.ms), f1(w.firstMs)]),
    ),
  );
  return { mix, mixRuns, worst };
}

async function httpPhase(args: BenchArgs, list: (Endpoint & { base?: string })[], apiKey: string, poolMax: number) {
  const server = await startFullServer({
    databaseUrl: args.databaseUrl,
    redisUrl: args.redisUrl,
    poolMax,
    logFile: path.join(os.tmpdir(), 'bench-full-server.log'),
  });
  const redis = new Redis(args.redisUrl);
  const keyHeader = { authorization: `Bearer ${apiKey}` };
  const results: Record<string, CaseResult> = {};
  try {
    for (const group of alternationGroups(list))
      Object.assign(
        results,
        await measureInTurn({
          url: server.url,
          group,
          headers: keyHeader,
          args,
          countRedisCommands: () => redisCommands(redis),
        }),
      );
  } finally {
    redis.disconnect();
    await server.stop();
  }
  console.log(
    `\n## Full server, realistic mix (${args.connections} connections, ${args.duration} s per run; median (min–max) of ${args.runs} runs)\n`,
  );
  console.log(
    'max = max-throughput mode (autocannon); latency columns = constant-rate mode at half the median max: one request every 1/rate s, timed from when it was due (bench/paced.ts: open loop, coordinated omission corrected)\n',
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
        const done = r.rateRuns.filter((x) => x.total > 0);
        const lat = (k: 'p50' | 'p90' | 'p99' | 'max') =>
          done.length
            ? medianRange(
                done.map((x) => x[k]),
                1,
              )
            : 'none completed';
        const sum = (runs: LoadResult[]) => runs.reduce((n, x) => n + x.errors + x.non2xx, 0);
        return [
          e.name,
          r.max.total ? medianRange(r.maxRuns.filter((x) => x.total > 0).map((x) => x.rps)) : 'none completed',
          sum(r.maxRuns),
          r.rateTarget,
          lat('p50'),
          lat('p90'),
          lat('p99'),
          lat('max'),
          sum(r.rateRuns),
          r.max.total ? r.redisPerRequest.toFixed(2) : '-',
        ];
      }),
    ),
  );
  return results;
}

async function ratioPhase(args: BenchArgs, list: Endpoint[], apiKey: string, poolMax: number) {
  const fixed = Object.fromEntries(list.map((e) => [e.name, { sql: e.fixed.sql, values: e.fixed.values }]));
  const results: Record<
    string,
    { bare: LoadResult; full: LoadResult; bareRuns: LoadResult[]; fullRuns: LoadResult[] }
  > = {};
  const bare = await startBareServer({ databaseUrl: args.databaseUrl, poolMax, fixed });
  const bareRuns: Record<string, LoadResult[]> = {};
  const middle = (runs: LoadResult[]) => [...runs].sort((a, b) => a.rps - b.rps)[Math.floor((runs.length - 1) / 2)]!;
  try {
    for (const e of list) {
      await runLoad({ url: bare.url, nextPath: () => `/${e.name}`, connections: 10, duration: 1 });
      bareRuns[e.name] = [];
      for (let run = 0; run < args.runs; run++)
        bareRuns[e.name]!.push(
          await withCpu(bare.pid, () =>
            runLoad({
              url: bare.url,
              nextPath: () => `/${e.name}`,
              connections: args.connections,
              duration: args.duration,
            }),
          ),
        );
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
      const fullRuns: LoadResult[] = [];
      for (let run = 0; run < args.runs; run++)
        fullRuns.push(
          await withCpu(full.pid, () =>
            runLoad({
              url: full.url,
              nextPath: () => PREFIX + e.fixed.path,
              connections: args.connections,
              duration: args.duration,
              headers,
            }),
          ),
        );
      results[e.name] = {
        bare: middle(bareRuns[e.name]!),
        full: middle(fullRuns),
        bareRuns: bareRuns[e.name]!,
        fullRuns,
      };
    }
  } finally {
    await full.stop();
  }
  console.log(
    `\n## Full vs bare on the same fixed request (max throughput, ${args.connections} connections, ${args.duration} s; median (min–max) of ${args.runs} runs; full/bare of the medians)\n`,
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
        'bare CPU µs/req',
        'full CPU µs/req',
        'errors+non2xx',
      ],
      list.map((e) => {
        const r = results[e.name]!;
        const done = r.bare.total > 0 && r.full.total > 0;
        return [
          e.name,
          `\`${e.fixed.path}\``,
          medianRange(r.bareRuns.map((x) => x.rps)),
          f1(r.bare.p99),
          medianRange(r.fullRuns.map((x) => x.rps)),
          f1(r.full.p50),
          f1(r.full.p99),
          done
            ? (median(r.fullRuns.map((x) => x.rps)) / median(r.bareRuns.map((x) => x.rps))).toFixed(2)
            : 'none completed',
          cpuRange(r.bareRuns),
          cpuRange(r.fullRuns),
          [...r.fullRuns, ...r.bareRuns].reduce((n, x) => n + x.errors + x.non2xx, 0),
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
  const atStart: Yardsticks = { cpu: cpuYardstick(), loopback: await loopbackYardstick() };
  console.log(
    `# Partner API benchmark\n\n${new Date().toISOString()} · ${scale} · ${os.cpus().length} CPUs (${os.cpus()[0]?.model}) · Node ${process.version} · load avg ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(
        ' ',
      )} · PG_POOL_MAX ${poolMax} · CPU yardstick (SHA-256, one core) ${atStart.cpu.toLocaleString('en-US')} MB/s · loopback yardstick ${atStart.loopback.toLocaleString('en-US')} round trips/s`,
  );

  const client = new pg.Client({ connectionString: args.databaseUrl });
  await client.connect();
  const settings = await postgresSettings(client);
  const warmed = args.warm ? await warm(client) : 'not warmed (--no-warm)';
  const hugePages = machineHugePages() ?? 'unknown';
  const via = transports(args.databaseUrl, args.redisUrl);
  console.log(
    `\ncommit ${gitCommit()} · PostgreSQL: ${settings} · this machine's huge pages: ${hugePages}\ncache: ${warmed}\nthe servers reach PostgreSQL by ${via.postgres}, Redis by ${via.redis}`,
  );
  const sample = await sampleData(client).finally(() => client.end());
  // the serving-path targets' shapes only when named (--only hot_bar,radius5,...)
  const targets = targetEndpoints(sample).filter((e) => args.only?.includes(e.name));
  const list = [...endpoints(sample).filter((e) => !args.only || args.only.includes(e.name)), ...targets];
  // The HTTP phase also with `Accept-Encoding: gzip, br` (--no-compressed: without); the database,
  // EXPLAIN and full/bare phases see no content coding, so they keep the plain list.
  const httpList = withEncodings(list, args.compressed);
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
  all.environment = {
    commit: gitCommit(),
    postgres: settings,
    hugePages,
    cache: warmed,
    runs: args.runs,
    transports: via,
  };
  if (args.db) all.db = await dbPhase(args, list);
  if (args.pgbench) {
    const tps: number[] = [];
    for (let run = 0; run < args.runs; run++) {
      const t = pgbenchBar(args.databaseUrl, db.bars, 10);
      if (t !== undefined) tps.push(t);
    }
    console.log(
      `\n## pgbench \`api.bar\` (random ids, 4 clients, 2 threads, 10 s; median (min–max) of ${args.runs} runs)\n\n` +
        (tps.length ? `${medianRange(tps)} TPS` : 'pgbench not found or failed: skipped'),
    );
    all.pgbench = { bar: tps };
    if (tps.length) atStart.pgbench = median(tps);
  }
  if (args.http) all.http = await httpPhase(args, httpList, db.apiKey, poolMax);
  if (args.ratio) {
    const ratio = await ratioPhase(args, list, db.apiKey, poolMax);
    all.ratio = ratio;
    const bar = ratio.bar?.fullRuns.filter((r) => r.total > 0) ?? [];
    if (bar.length) {
      const cpuUs = median(cpuUsOf(bar));
      const rate = median(bar.map((r) => r.rps));
      all.usagePathCost = await usagePathCostPhase(args.redisUrl, rate, Number.isNaN(cpuUs) ? undefined : cpuUs);
    }
  }
  if (args.flood) all.flood = await floodPhase(args, list, db.apiKey, poolMax); // bench/flood.ts
  if (args.logFlood) all.logFlood = await logFloodPhase(args, list, db.apiKey, poolMax); // bench/log-flood.ts
  if (!args.floodOnly && !args.logFloodOnly && (!args.only || args.only.includes('graphql')))
    all.graphql = await graphqlPhase({ ...args, apiKey: db.apiKey, poolMax }); // bench/graphql.ts
  const explainOnly = args.explain && !(args.db || args.http || args.ratio || args.flood || args.logFlood);
  if (!explainOnly) all.machineAtEnd = await machineAtEnd(args.databaseUrl, db.bars, atStart);

  const out = path.resolve(__dirname, '../../bench/results');
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, `${all.at as string}.json`.replace(/:/g, '-')), JSON.stringify(all, null, 2));
}

main().catch((e: Error) => {
  process.stderr.write(`bench failed: ${e.stack ?? e.message}\n`);
  process.exit(1);
});
