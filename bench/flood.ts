/**
 * The 429-flood phase (issue 34): one key, whose plan allows 1 request a
 * minute, floods the full server at `--flood-rate` req/s (default 10,000; a
 * forked client, bench/flood-client.ts) while another key is measured on a
 * fixed request: max throughput (autocannon) and constant rate (p99), each
 * without and then with the flood, so the flood's cost to other keys shows as
 * the difference. Also printed: the rate the flood reached and its share of
 * 429s (after its first request every answer should be a 429 answered in
 * process: no Redis, no PostgreSQL), and Redis commands per measured request.
 */
import { fork } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { BenchArgs } from './args';
import { track } from './children';
import { medianRange } from './environment';
import { runLoad, type LoadResult } from './load';
import { runPaced } from './paced';
import { startFullServer } from './servers';
import type { Endpoint } from './workload';

const PREFIX = '/api/v1/partner';

/** A key on the `bench-flood` plan: 1 request a minute, so all but its first request are 429s. */
export async function floodKey(databaseUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const max = 2147483647;
    await client.query(
      `select admin.create_plan('bench-flood', 1, $1, $1)
      where not exists (select from admin.plans where name = 'bench-flood')`,
      [max],
    );
    const {
      rows: [subscriber],
    } = await client.query(`select id from admin.create_subscriber('bench flood ' || now()::text, 'bench-flood')`);
    const {
      rows: [key],
    } = await client.query('select (admin.issue_key($1)).api_key as api_key', [subscriber.id]);
    return key.api_key as string;
  } finally {
    await client.end();
  }
}

function flood(url: string, key: string, floodPath: string, args: BenchArgs): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const order = { url, path: floodPath, key, rate: args.floodRate, duration: args.duration, connections: 50 };
    const child = track(fork(path.resolve(__dirname, 'flood-client.js'), [JSON.stringify(order)]));
    let result: LoadResult | undefined;
    child.on('message', (m) => (result = m as LoadResult));
    child.on('error', reject);
    child.on('exit', (code) =>
      result ? resolve(result) : reject(new Error(`flood client exited ${code} without a result`)),
    );
  });
}

async function redisCommands(redis: Redis): Promise<number> {
  const info = await redis.info('stats');
  return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0);
}

export async function floodPhase(args: BenchArgs, list: Endpoint[], apiKey: string, poolMax: number) {
  const measured = list.find((e) => e.name === 'bar') ?? list[0];
  if (!measured) return undefined;
  const key = await floodKey(args.databaseUrl);
  const server = await startFullServer({
    databaseUrl: args.databaseUrl,
    redisUrl: args.redisUrl,
    poolMax,
    logFile: path.join(os.tmpdir(), 'bench-flood-server.log'),
  });
  const redis = new Redis(args.redisUrl);
  const headers = { authorization: `Bearer ${apiKey}` };
  const nextPath = () => PREFIX + measured.next().path;
  const floodPath = `${PREFIX}${measured.fixed.path}`;
  const runs = { quiet: [] as LoadResult[], flooded: [] as LoadResult[] };
  const paced = { quiet: [] as LoadResult[], flooded: [] as LoadResult[] };
  const floods: LoadResult[] = [];
  let rate: number;
  let redisQuiet = 0;
  let redisFlooded = 0;
  try {
    await runLoad({ url: server.url, nextPath, connections: 10, duration: 1, headers }); // warm-up
    // the flood key's one request of the minute, then its first 429 (from here on refused in process)
    for (let i = 0; i < 2; i++)
      await fetch(`${server.url}${floodPath}`, { headers: { authorization: `Bearer ${key}` } });
    for (let run = 0; run < args.runs; run++) {
      let before = await redisCommands(redis);
      const quiet = await runLoad({
        url: server.url,
        nextPath,
        connections: args.connections,
        duration: args.duration,
        headers,
      });
      redisQuiet += ((await redisCommands(redis)) - before) / Math.max(1, quiet.total);
      runs.quiet.push(quiet);
      before = await redisCommands(redis);
      const [flooded, f] = await Promise.all([
        runLoad({ url: server.url, nextPath, connections: args.connections, duration: args.duration, headers }),
        flood(server.url, key, floodPath, args),
      ]);
      redisFlooded += ((await redisCommands(redis)) - before) / Math.max(1, flooded.total);
      runs.flooded.push(flooded);
      floods.push(f);
    }
    rate = Math.max(1, Math.round(args.rate || (runs.quiet.map((r) => r.rps).sort((a, b) => a - b)[0] ?? 2) / 2));
    for (let run = 0; run < args.runs; run++) {
      const opts = { url: server.url, nextPath, connections: args.connections, duration: args.duration, rate, headers };
      paced.quiet.push(await runPaced(opts));
      const [flooded, f] = await Promise.all([runPaced(opts), flood(server.url, key, floodPath, args)]);
      paced.flooded.push(flooded);
      floods.push(f);
    }
  } finally {
    redis.disconnect();
    await server.stop();
  }
  const rps = (r: LoadResult[]) => medianRange(r.map((x) => x.rps));
  const p99 = (r: LoadResult[]) =>
    medianRange(
      r.map((x) => x.p99),
      1,
    );
  const errs = (r: LoadResult[]) => r.reduce((n, x) => n + x.errors + x.non2xx, 0);
  console.log(
    `\n## A 429 flood (one key at ${args.floodRate} req/s, a 1-request-a-minute plan) against \`${measured.name}\` of another key (${args.connections} connections, ${args.duration} s; median (min–max) of ${args.runs} runs)\n`,
  );
  console.log(
    '| other key | max req/s | errors+non2xx | p99 ms at ' + rate + ' req/s | errors+non2xx | redis cmds/req |',
  );
  console.log('|---|---|---|---|---|---|');
  console.log(
    `| no flood | ${rps(runs.quiet)} | ${errs(runs.quiet)} | ${p99(paced.quiet)} | ${errs(paced.quiet)} | ${(redisQuiet / args.runs).toFixed(2)} |`,
  );
  console.log(
    `| during the flood | ${rps(runs.flooded)} | ${errs(runs.flooded)} | ${p99(paced.flooded)} | ${errs(paced.flooded)} | ${(redisFlooded / args.runs).toFixed(2)} |`,
  );
  const answered = floods.reduce((n, f) => n + f.total - f.errors, 0);
  const refused = floods.reduce((n, f) => n + f.non2xx, 0);
  console.log(
    `\nflood reached ${medianRange(floods.map((f) => f.rps))} req/s; ${answered} answered, ${refused} of them non-2xx (429s), ${floods.reduce((n, f) => n + f.errors, 0)} errors`,
  );
  return { measured: measured.name, rate, runs, paced, floods, redisQuiet, redisFlooded };
}
