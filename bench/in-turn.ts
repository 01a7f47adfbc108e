/**
 * The HTTP phase's measurement of one alternation group (workload.ts alternationGroups): an endpoint
 * and its compressed twin, warmed, then their max-throughput runs in turn, then their paced runs in
 * turn, so a drifting machine moves both sides of their ratio alike.
 */
import type { BenchArgs } from './args';
import { runLoad, type LoadResult } from './load';
import { runPaced } from './paced';
import type { Endpoint } from './workload';
import { PARTNER_PREFIX as PREFIX } from '../server/contract/identity';

export interface CaseResult {
  /** The median run by req/s. */
  max: LoadResult;
  /** The median paced run by p99. */
  rate: LoadResult;
  rateTarget: number;
  redisPerRequest: number;
  maxRuns: LoadResult[];
  rateRuns: LoadResult[];
}

export async function measureInTurn(opts: {
  url: string;
  group: Endpoint[];
  /** The key's header, sent with each case's own headers. */
  headers: Record<string, string>;
  args: Pick<BenchArgs, 'runs' | 'connections' | 'duration' | 'rate'>;
  /** Redis's commands processed so far (its INFO), for commands per request over the max runs. */
  countRedisCommands: () => Promise<number>;
}): Promise<Record<string, CaseResult>> {
  const { url, args } = opts;
  const cases = opts.group.map((e) => ({
    e,
    nextPath: () => PREFIX + e.next().path,
    headers: { ...opts.headers, ...e.headers }, // e.g. Accept-Encoding of the compressed cases
    maxRuns: [] as LoadResult[],
    rateRuns: [] as LoadResult[],
    redisCommands: 0,
  }));
  for (const c of cases) await runLoad({ url, nextPath: c.nextPath, connections: 10, duration: 1, headers: c.headers }); // warm-up
  for (let run = 0; run < args.runs; run++)
    for (const c of cases) {
      const before = await opts.countRedisCommands();
      c.maxRuns.push(
        await runLoad({
          url,
          nextPath: c.nextPath,
          connections: args.connections,
          duration: args.duration,
          headers: c.headers,
        }),
      );
      c.redisCommands += (await opts.countRedisCommands()) - before;
    }
  const median = (runs: LoadResult[], by: (r: LoadResult) => number) =>
    [...runs].sort((a, b) => by(a) - by(b))[Math.floor((args.runs - 1) / 2)]!;
  const targets = cases.map((c) => Math.max(1, Math.round(args.rate || median(c.maxRuns, (r) => r.rps).rps / 2)));
  for (let run = 0; run < args.runs; run++)
    for (const [i, c] of cases.entries())
      c.rateRuns.push(
        await runPaced({
          url,
          nextPath: c.nextPath,
          connections: args.connections,
          duration: args.duration,
          rate: targets[i]!,
          headers: c.headers,
        }),
      );
  const results: Record<string, CaseResult> = {};
  for (const [i, c] of cases.entries()) {
    const total = c.maxRuns.reduce((n, r) => n + r.total, 0);
    results[c.e.name] = {
      max: median(c.maxRuns, (r) => r.rps),
      rate: median(c.rateRuns, (r) => r.p99),
      rateTarget: targets[i]!,
      redisPerRequest: c.redisCommands / Math.max(1, total),
      maxRuns: c.maxRuns,
      rateRuns: c.rateRuns,
    };
  }
  return results;
}
