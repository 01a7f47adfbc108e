/**
 * The 4xx-flood phase (issue 30: "a 4xx flood of 2,000 requests/s from one key
 * stores at most 1,000 entries a minute, and serving is unaffected"). One key
 * on the unlimited `bench` plan sends `bars?limit=flood` (a 400 the request log
 * keeps, answered before the database) at `--log-flood-rate` req/s (default
 * 2,000; the forked client of the 429 flood, bench/flood.ts) to the full server
 * (REQUEST_LOG=errors) until two whole UTC minutes have passed, while another
 * key's `bar` is measured as in the 429 flood: max req/s (autocannon) and paced
 * p99, without and then with the flood. Afterwards (after the log's flush) it
 * reads the flood key's stored entries per minute from PostgreSQL
 * (admin.request_log_since) and the log's counters from the operator /metrics.
 */
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { PER_KEY_MINUTE } from '../server/usage/request-log';
import type { BenchArgs } from './args';
import { median, medianRange } from './environment';
import { FLOOD_RAMP_MS, keyOnPlan, runFlood, whileFlooding } from './flood';
import { PARTNER_PREFIX as PREFIX } from '../server/contract/identity';
import { runLoad, type LoadResult } from './load';
import { runPaced } from './paced';
import { startFullServer, type RunningServer } from './servers';
import { UNREACHABLE } from './setup';
import { operatorToken } from './soak';
import type { Endpoint } from './workload';

/** A 400 (`limit` is not a number) the request log keeps: validated before any database call. */
const FLOOD_PATH = `${PREFIX}/bars?limit=flood`;
/** The log writes about once a second; this leaves it two flushes. */
const FLUSH_WAIT_MS = 2500;
/** A minute counts as the flood's whole minute when it starts this long after the flood was started (the client's fork). */
const START_SLACK_MS = 3000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/**
 * How long the flood lasts, in whole seconds: until a second after the end of its second whole UTC
 * minute (the first one starting at least START_SLACK_MS after `startMs`: 124–183 s), and at least
 * as long as the flooded runs of the measured key.
 */
export function floodSeconds(startMs: number, measuredSeconds: number): number {
  const firstWhole = Math.ceil((startMs + START_SLACK_MS) / 60_000) * 60_000;
  return Math.ceil(Math.max((firstWhole + 121_000 - startMs) / 1000, measuredSeconds + FLOOD_RAMP_MS / 1000 + 5));
}

/** Whether `minute` (its start, ms) lies whole inside a flood started at `startMs` for `seconds`. */
export function wholeMinute(minute: number, startMs: number, seconds: number): boolean {
  return minute >= startMs + START_SLACK_MS && minute + 60_000 <= startMs + seconds * 1000;
}

/** Sums of each `name{labels}` sample in a /metrics text, by its `reason` label ('' without one). */
export function byReason(text: string, name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))) {
    const reason = /reason="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '';
    out[reason] = (out[reason] ?? 0) + Number(m[2]);
  }
  return out;
}

const COUNTERS = [
  'partner_request_log_written_total',
  'partner_request_log_dropped_total',
  'partner_request_log_capped_total',
];
type Counters = Record<string, Record<string, number>>;

async function logCounters(server: RunningServer, token: string): Promise<Counters | undefined> {
  if (!server.adminUrl) return undefined;
  try {
    const res = await fetch(`${server.adminUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
    const text = await res.text();
    return Object.fromEntries(COUNTERS.map((n) => [n, byReason(text, n)]));
  } catch (e) {
    process.stderr.write(`log flood: /metrics not read: ${(e as Error).message}\n`);
    return undefined;
  }
}

/** after − before of each counter and reason. */
function delta(before: Counters | undefined, after: Counters | undefined): Counters | undefined {
  if (!before || !after) return undefined;
  return Object.fromEntries(
    COUNTERS.map((n) => [
      n,
      Object.fromEntries(Object.entries(after[n] ?? {}).map(([r, v]) => [r, v - (before[n]?.[r] ?? 0)])),
    ]),
  );
}

/** The flood key's entries per UTC minute, as stored (the existing operator read, admin.request_log_since). */
async function storedPerMinute(databaseUrl: string, keyId: string, since: Date) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      `select (extract(epoch from date_trunc('minute', l.created_at)) * 1000)::bigint as minute,
              count(*)::int as entries
         from admin.request_log_since($1) l where l.api_key_id = $2 group by 1 order by 1`,
      [since, keyId],
    );
    return rows.map((r) => ({ minute: Number(r.minute), entries: r.entries as number }));
  } finally {
    await client.end();
  }
}

interface OtherKey {
  max: LoadResult[];
  paced: LoadResult[];
}

export async function logFloodPhase(args: BenchArgs, list: Endpoint[], apiKey: string, poolMax: number) {
  const measured = list.find((e) => e.name === 'bar') ?? list[0];
  if (!measured) return undefined;
  // unlimited: its answers are the 400s the log keeps, never 429s
  const flooder = await keyOnPlan(args.databaseUrl, 'bench', UNREACHABLE);
  const token = await operatorToken(args.databaseUrl);
  const server = await startFullServer({
    databaseUrl: args.databaseUrl,
    redisUrl: args.redisUrl,
    poolMax,
    logFile: path.join(os.tmpdir(), 'bench-log-flood-server.log'),
    extraEnv: { REQUEST_LOG: args.logFloodRequestLog },
  });
  const headers = { authorization: `Bearer ${apiKey}` };
  const nextPath = () => PREFIX + measured.next().path;
  const load = { url: server.url, nextPath, connections: args.connections, duration: args.duration, headers };
  const quiet: OtherKey = { max: [], paced: [] };
  const flooded: OtherKey = { max: [], paced: [] };
  let rate = 0; // paced runs: --rate, or half the lowest quiet max (as the 429 flood)
  const measure = async (into: OtherKey) => {
    for (let run = 0; run < args.runs; run++) into.max.push(await runLoad(load));
    rate ||= Math.max(1, Math.round(args.rate || Math.min(...into.max.map((x) => x.rps)) / 2));
    for (let run = 0; run < args.runs; run++) into.paced.push(await runPaced({ ...load, rate }));
  };
  let seconds: number;
  let started: number;
  let floodResult: LoadResult;
  let counters: Counters | undefined;
  let minutes: { minute: number; entries: number }[];
  try {
    await runLoad({ ...load, connections: 10, duration: 1 }); // warm-up
    await measure(quiet);
    const before = await logCounters(server, token);
    started = Date.now();
    seconds = floodSeconds(started, 2 * args.runs * (args.duration + 1));
    process.stderr.write(
      `bench: log flood at ${args.logFloodRate} req/s for ${seconds} s (${hhmm(started)}–${hhmm(started + seconds * 1000)} UTC)\n`,
    );
    [, floodResult] = await whileFlooding(
      () => runFlood(server.url, flooder.apiKey, FLOOD_PATH, { rate: args.logFloodRate, duration: seconds }),
      () => measure(flooded),
    );
    await sleep(FLUSH_WAIT_MS);
    counters = delta(before, await logCounters(server, token));
    minutes = await storedPerMinute(args.databaseUrl, flooder.keyId, new Date(started - 60_000));
  } finally {
    await server.stop();
  }
  return report(args, measured.name, { rate, seconds, started, floodResult, counters, minutes, quiet, flooded });
}

function report(
  args: BenchArgs,
  measured: string,
  r: {
    rate: number;
    seconds: number;
    started: number;
    floodResult: LoadResult;
    counters: Counters | undefined;
    minutes: { minute: number; entries: number }[];
    quiet: OtherKey;
    flooded: OtherKey;
  },
) {
  const ended = r.started + r.seconds * 1000;
  const whole = (m: number) => wholeMinute(m, r.started, r.seconds);
  const maxStored = Math.max(0, ...r.minutes.map((m) => m.entries));
  const rps = (x: OtherKey) => median(x.max.map((l) => l.rps));
  const p99 = (x: OtherKey) => median(x.paced.map((l) => l.p99));
  const change = (q: number, f: number) => (q > 0 ? `${(((f - q) / q) * 100).toFixed(1)} %` : '-');
  const errs = (l: LoadResult[]) => l.reduce((n, x) => n + x.errors + x.non2xx, 0);
  console.log(
    `\n## A 4xx flood and the request log (REQUEST_LOG=${args.logFloodRequestLog}; one key at ${args.logFloodRate} req/s of \`${FLOOD_PATH}\` (400) for ${r.seconds} s, ${hhmm(r.started)}–${hhmm(ended)} UTC: two whole minutes at least) against \`${measured}\` of another key (${args.connections} connections, ${args.duration} s; median (min–max) of ${args.runs} runs)\n`,
  );
  console.log(`| other key | max req/s | errors+non2xx | p99 ms at ${r.rate} req/s | errors+non2xx |`);
  console.log('|---|---|---|---|---|');
  for (const [label, x] of [
    ['no flood', r.quiet],
    ['during the flood', r.flooded],
  ] as const)
    console.log(
      `| ${label} | ${medianRange(x.max.map((l) => l.rps))} | ${errs(x.max)} | ${medianRange(
        x.paced.map((l) => l.p99),
        1,
      )} | ${errs(x.paced)} |`,
    );
  console.log(
    `| change (medians) | ${change(rps(r.quiet), rps(r.flooded))} | | ${change(p99(r.quiet), p99(r.flooded))} | |`,
  );
  const f = r.floodResult;
  const mix = Object.entries(f.statuses ?? {})
    .map(([s, n]) => `${s}: ${n}`)
    .join(', ');
  console.log(
    `\nflood reached ${f.rps.toFixed(0)} req/s (asked ${args.logFloodRate}); ${f.total} sent, statuses ${mix || 'none'}, ${f.errors} errors`,
  );
  console.log('\n| minute (UTC) | whole minute of the flood | flood key entries stored |\n|---|---|---|');
  for (const m of r.minutes) console.log(`| ${hhmm(m.minute)} | ${whole(m.minute) ? 'yes' : 'no'} | ${m.entries} |`);
  console.log(
    `\nmost entries stored in a minute: ${maxStored} (${maxStored <= PER_KEY_MINUTE ? 'within' : 'OVER'} the ${PER_KEY_MINUTE.toLocaleString('en-US')} bound)`,
  );
  const c = r.counters;
  const show = (n: string) =>
    Object.entries(c?.[n] ?? {})
      .map(([reason, v]) => (reason ? `${reason} ${v}` : String(v)))
      .join(', ') || '0';
  console.log(
    c
      ? `request log during the flood (full server's /metrics): written ${show(COUNTERS[0]!)}; dropped ${show(COUNTERS[1]!)}; left out by the bounds ${show(COUNTERS[2]!)}`
      : "request log counters: the full server's /metrics was not read",
  );
  return {
    measured,
    path: FLOOD_PATH,
    rate: r.rate,
    floodRate: args.logFloodRate,
    requestLog: args.logFloodRequestLog,
    floodSeconds: r.seconds,
    floodStarted: new Date(r.started).toISOString(),
    flood: r.floodResult,
    minutes: r.minutes.map((m) => ({ ...m, at: new Date(m.minute).toISOString(), whole: whole(m.minute) })),
    maxStoredPerMinute: maxStored,
    counters: r.counters,
    quiet: r.quiet,
    flooded: r.flooded,
    change: {
      rps: (rps(r.flooded) - rps(r.quiet)) / rps(r.quiet),
      p99: (p99(r.flooded) - p99(r.quiet)) / p99(r.quiet),
    },
  };
}
