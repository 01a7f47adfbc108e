/**
 * The 429-flood phase (issue 34): one key, whose plan allows 1 request a
 * minute, floods the full server at `--flood-rate` req/s (default 10,000; a
 * forked client, bench/flood-client.ts) while another key is measured on a
 * fixed request: max throughput (autocannon) and constant rate (p99), each
 * without and then with the flood (running 2 s already when the measured run
 * starts, FLOOD_RAMP_MS), so the flood's cost to other keys shows as the
 * difference. The server is started as `npm start` runs it: a refused key's
 * 429s are held (http/refusal-hold.ts), so the flood's 50 connections (--flood-connections)
 * get about 50 answers a second and the rest of its requests wait in its client (errors
 * when it stops). Also printed: the rate the flood reached and its share of
 * 429s (after its first request every answer should be a 429 answered in
 * process: no Redis, no PostgreSQL), Redis commands per measured request, and
 * what one 429 costs the server in CPU (the flood key alone at autocannon's max
 * rate on a server that writes 429s at once, after the measured runs), hence
 * how many cores `--flood-rate` would take unheld, and the floor under it: the
 * same 429 (captured: status, headers, body) given as it is by node:http alone
 * (the bare server), with the load generator's CPU per request beside both.
 * With --flood-address the flood sends a made-up key instead: its address goes
 * over the failed-authentication limit (the measured key, valid and known, is
 * still served from the same address).
 */
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { DEFAULT_REFUSAL_HOLD } from '../server/config';
import { FAILED_AUTH_LIMIT } from '../server/ratelimit/limiters';
import type { BenchArgs } from './args';
import { track } from './children';
import { median, medianRange } from './environment';
import { runLoad, type LoadResult } from './load';
import { runPaced } from './paced';
import { cpuUsOf, startBareServer, startFullServer, withCpu, type CannedAnswer } from './servers';
import { issueKeyOnPlan } from './setup';
import type { Endpoint } from './workload';
import { PARTNER_PREFIX as PREFIX } from '../server/contract/identity';

/** A key of a new subscriber on `plan` (created when missing with `perMinute` requests a minute). */
export async function keyOnPlan(
  databaseUrl: string,
  plan: string,
  perMinute: number,
): Promise<{ apiKey: string; keyId: string }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await issueKeyOnPlan(client, plan, perMinute);
  } finally {
    await client.end();
  }
}

/** A key on the `bench-flood` plan: 1 request a minute, so all but its first request are 429s. */
export async function floodKey(databaseUrl: string): Promise<string> {
  return (await keyOnPlan(databaseUrl, 'bench-flood', 1)).apiKey;
}

/** `floodPath` sent with `key` at `rate` req/s for `duration` s from a forked client (bench/flood-client.ts). */
export function runFlood(
  url: string,
  key: string,
  floodPath: string,
  o: { rate: number; duration: number; connections?: number },
): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const order = {
      url,
      path: floodPath,
      key,
      rate: o.rate,
      duration: o.duration,
      connections: o.connections ?? 50,
      drainMs: 2_000, // held answers: what is still queued then is not waited for (errors)
    };
    const child = track(fork(path.resolve(__dirname, 'flood-client.js'), [JSON.stringify(order)]));
    let result: LoadResult | undefined;
    child.on('message', (m) => (result = m as LoadResult));
    child.on('error', reject);
    child.on('exit', (code) =>
      result ? resolve(result) : reject(new Error(`flood client exited ${code} without a result`)),
    );
  });
}

/** How long a flood runs before the measured key's run starts: the client's fork, start-up and connections are not the flood. */
export const FLOOD_RAMP_MS = 2000;
/** How long it runs on after the measured run's end would be, so that its own end falls outside too. */
const FLOOD_TAIL_MS = 1000;

/** How long a flood must last to cover a measured run of `measuredSeconds` with its ramp and tail (whileFlooding). */
export function floodSecondsAround(measuredSeconds: number, rampMs = FLOOD_RAMP_MS): number {
  return measuredSeconds + (rampMs + FLOOD_TAIL_MS) / 1000;
}

/**
 * `measure` while a flood runs: `startFlood()` is called first and `measure` only `rampMs` later, so the
 * measured runs see the flood's steady state only (the 429 flood's and the log flood's phases). The flood's
 * failure is thrown once `measure` is done.
 */
export async function whileFlooding<T, F>(
  startFlood: () => Promise<F>,
  measure: () => Promise<T>,
  rampMs = FLOOD_RAMP_MS,
): Promise<[T, F]> {
  const flood = startFlood();
  flood.catch(() => undefined); // its failure is thrown below, not an unhandled rejection meanwhile
  await new Promise((r) => setTimeout(r, rampMs));
  const measured = await measure();
  return [measured, await flood];
}

async function redisCommands(redis: Redis): Promise<number> {
  const info = await redis.info('stats');
  return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0);
}

/**
 * What the flood sends: a key on a 1-request-a-minute plan, or (--flood-address) a made-up key, so that
 * the bench's address goes over the failed-authentication limit (the measured key, valid and already
 * known, is still served from it).
 */
async function floodingKey(args: BenchArgs): Promise<{ key: string; refusedAfter: number }> {
  if (args.floodAddress)
    return { key: `pbk_${randomBytes(32).toString('base64url')}`, refusedAfter: FAILED_AUTH_LIMIT };
  return { key: await floodKey(args.databaseUrl), refusedAfter: 1 };
}

/** The flood's requests until its first 429 (from here on refused in process). */
async function primeFlood(url: string, flooding: { key: string; refusedAfter: number }): Promise<void> {
  for (let i = 0; i <= flooding.refusedAfter; i++)
    await fetch(url, { headers: { authorization: `Bearer ${flooding.key}` } });
}

/**
 * What one 429 costs the server: the flood key alone at autocannon's max rate, CPU from /proc (Linux),
 * on a server of its own that writes refused 429s at once (RATE_LIMIT_REFUSAL_HOLD_MS=0: held, a
 * connection gets one a second and the CPU per answer would be mostly idle time); and its answer.
 */
async function floodAloneCost(
  args: BenchArgs,
  flooding: { key: string; refusedAfter: number },
  floodPath: string,
  poolMax: number,
) {
  const server = await startFullServer({
    databaseUrl: args.databaseUrl,
    redisUrl: args.redisUrl,
    poolMax,
    logFile: path.join(os.tmpdir(), 'bench-flood-alone-server.log'),
    extraEnv: { RATE_LIMIT_REFUSAL_HOLD_MS: '0' },
  });
  const floodHeaders = { authorization: `Bearer ${flooding.key}` };
  const runs: LoadResult[] = [];
  try {
    await primeFlood(`${server.url}${floodPath}`, flooding);
    for (let run = 0; run < args.runs; run++)
      runs.push(
        await withCpu(server.pid, () =>
          runLoad({
            url: server.url,
            nextPath: () => floodPath,
            connections: args.connections,
            duration: args.duration,
            headers: floodHeaders,
          }),
        ),
      );
    return { runs, canned429: await capture(`${server.url}${floodPath}`, floodHeaders) };
  } finally {
    await server.stop();
  }
}

export async function floodPhase(args: BenchArgs, list: Endpoint[], apiKey: string, poolMax: number) {
  const measured = list.find((e) => e.name === 'bar') ?? list[0];
  if (!measured) return undefined;
  const flooding = await floodingKey(args);
  const key = flooding.key;
  const floodPath = `${PREFIX}${measured.fixed.path}`;
  // the server as `npm start` runs it (refused keys' 429s held as RATE_LIMIT_REFUSAL_HOLD_MS says)
  const server = await startFullServer({
    databaseUrl: args.databaseUrl,
    redisUrl: args.redisUrl,
    poolMax,
    logFile: path.join(os.tmpdir(), 'bench-flood-server.log'),
  });
  const redis = new Redis(args.redisUrl);
  const flood = () =>
    runFlood(server.url, key, floodPath, {
      rate: args.floodRate,
      duration: floodSecondsAround(args.duration),
      connections: args.floodConnections,
    });
  const headers = { authorization: `Bearer ${apiKey}` };
  const nextPath = () => PREFIX + measured.next().path;
  const runs = { quiet: [] as LoadResult[], flooded: [] as LoadResult[] };
  const paced = { quiet: [] as LoadResult[], flooded: [] as LoadResult[] };
  const floods: LoadResult[] = [];
  const floor: LoadResult[] = [];
  let rate: number;
  let redisQuiet = 0;
  let redisFlooded = 0;
  try {
    if (args.floodAddress) {
      // an earlier run's failures from this address, counted in Redis for their minute, would refuse
      // the measured key's first lookup in this server: start in a minute of its own
      const left = 60_000 - (Date.now() % 60_000);
      await new Promise((r) => setTimeout(r, left + 200));
    }
    await runLoad({ url: server.url, nextPath, connections: 10, duration: 1, headers }); // warm-up
    await primeFlood(`${server.url}${floodPath}`, flooding);
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
      const [flooded, f] = await whileFlooding(flood, () =>
        runLoad({ url: server.url, nextPath, connections: args.connections, duration: args.duration, headers }),
      );
      redisFlooded += ((await redisCommands(redis)) - before) / Math.max(1, flooded.total);
      runs.flooded.push(flooded);
      floods.push(f);
    }
    rate = Math.max(1, Math.round(args.rate || (runs.quiet.map((r) => r.rps).sort((a, b) => a - b)[0] ?? 2) / 2));
    for (let run = 0; run < args.runs; run++) {
      const opts = { url: server.url, nextPath, connections: args.connections, duration: args.duration, rate, headers };
      paced.quiet.push(await runPaced(opts));
      const [flooded, f] = await whileFlooding(flood, () => runPaced(opts));
      paced.flooded.push(flooded);
      floods.push(f);
    }
  } finally {
    redis.disconnect();
    await server.stop();
  }
  // After the measured server (one server at a time): with --flood-address its failures, counted in Redis
  // for the minute, would have refused the measured key's first lookup there.
  const { runs: floodAlone, canned429 } = await floodAloneCost(args, flooding, floodPath, poolMax);
  if (canned429) {
    // The floor: the same 429 from node:http alone (after the full server stopped: one server at a time).
    const bare = await startBareServer({
      databaseUrl: args.databaseUrl,
      poolMax: 1,
      fixed: {},
      canned: { flood429: canned429 },
    });
    try {
      for (let run = 0; run < args.runs; run++) {
        const r = await withCpu(bare.pid, () =>
          runLoad({
            url: bare.url,
            nextPath: () => '/flood429',
            connections: args.connections,
            duration: args.duration,
          }),
        );
        floor.push(r);
      }
    } finally {
      await bare.stop();
    }
  }
  const rps = (r: LoadResult[]) => medianRange(r.map((x) => x.rps));
  const p99 = (r: LoadResult[]) =>
    medianRange(
      r.map((x) => x.p99),
      1,
    );
  const errs = (r: LoadResult[]) => r.reduce((n, x) => n + x.errors + x.non2xx, 0);
  console.log(
    `\n## A 429 flood (${args.floodAddress ? 'one address over the failed-authentication limit, made-up keys' : 'one key, a 1-request-a-minute plan'}, at ${args.floodRate} req/s) against \`${measured.name}\` of another key (${args.connections} connections, ${args.duration} s; median (min–max) of ${args.runs} runs)\n`,
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
    `\nflood offered at ${args.floodRate} req/s (${args.floodConnections} connections), reached ${medianRange(floods.map((f) => f.rps))} req/s; ` +
      `${answered} answered, ${refused} of them non-2xx (429s), ${floods.reduce((n, f) => n + f.errors, 0)} errors ` +
      `(due but unanswered when the flood's client stopped: its requests wait for one of its connections; ` +
      `the server's RATE_LIMIT_REFUSAL_HOLD_MS=${process.env.RATE_LIMIT_REFUSAL_HOLD_MS ?? `${DEFAULT_REFUSAL_HOLD.ms} (the default)`})`,
  );
  const cpu = cpuUsOf(floodAlone);
  if (cpu.length) {
    const us = median(cpu);
    console.log(
      `the flood alone (autocannon, ${args.connections} connections): ${medianRange(floodAlone.map((r) => r.rps))} req/s, ` +
        `${floodAlone.reduce((n, r) => n + r.non2xx, 0)} non-2xx of ${floodAlone.reduce((n, r) => n + r.total, 0)}; ` +
        `the server's CPU per 429: ${medianRange(cpu)} µs, so ${args.floodRate} req/s of 429s written at once would take ` +
        `${((us * args.floodRate) / 1e6).toFixed(2)} cores of the server's alone; the load generator's CPU per request: ` +
        `${clientRange(floodAlone)} µs`,
    );
  }
  const floorUs = cpuUsOf(floor);
  if (floorUs.length) {
    const us = median(floorUs);
    console.log(
      `the floor: the same 429 (status, ${Object.keys(canned429!.headers).length} headers, body) from node:http alone: ` +
        `${medianRange(floor.map((r) => r.rps))} req/s, CPU per answer ${medianRange(floorUs)} µs ` +
        `(${((us * args.floodRate) / 1e6).toFixed(2)} cores at ${args.floodRate} req/s); the load generator's: ${clientRange(floor)} µs`,
    );
  }
  return { measured: measured.name, rate, runs, paced, floods, floodAlone, floor, canned429, redisQuiet, redisFlooded };
}

/** The load generator's CPU µs per request of the runs, median (min–max). */
function clientRange(runs: LoadResult[]): string {
  const us = runs.flatMap((r) => (r.clientCpuUsPerRequest === undefined ? [] : [r.clientCpuUsPerRequest]));
  return us.length ? medianRange(us) : 'n/a';
}

/** One answer as it came (status, headers but those node:http writes itself, body), to be given again as it is. */
export async function capture(url: string, headers: Record<string, string>): Promise<CannedAnswer> {
  // identity, as autocannon asks (fetch would ask for gzip and decode it)
  const res = await fetch(url, { headers: { accept: 'application/json', 'accept-encoding': 'identity', ...headers } });
  const kept: Record<string, string> = {};
  const own = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);
  res.headers.forEach((value, name) => {
    if (!own.has(name)) kept[name] = value;
  });
  return { status: res.status, headers: kept, body: await res.text() };
}
