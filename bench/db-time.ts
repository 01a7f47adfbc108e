/**
 * Database time: the api functions called one after another on one
 * connection (as the server calls them: bar_partner role, named prepared
 * statements), timed from send to last byte. No HTTP, no pool contention: what
 * each request costs PostgreSQL.
 */
import pg from 'pg';
import { partnerStatements } from '../server/db/prepared-statements';
import { percentile } from './environment';
import type { Call } from './workload';

export interface Timing {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  worst?: Call;
  /** Each call's time, in call order (the first one on the new connection pays for its caches). */
  times: number[];
}

export async function timeCalls(url: string, calls: Call[]): Promise<Timing> {
  const client = new pg.Client({ connectionString: url, options: '-c role=bar_partner' });
  await client.connect();
  try {
    const times: { ms: number; call: Call }[] = [];
    for (const call of calls) {
      const t = process.hrtime.bigint();
      await client.query(partnerStatements.query({ text: call.sql, values: call.values }));
      times.push({ ms: Number(process.hrtime.bigint() - t) / 1e6, call });
    }
    const sorted = times.map((t) => t.ms).sort((a, b) => a - b);
    const worst = times.reduce((a, b) => (b.ms > a.ms ? b : a), times[0]!);
    return {
      n: times.length,
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      max: sorted.at(-1) ?? NaN,
      worst: worst?.call,
      times: times.map((t) => t.ms),
    };
  } finally {
    await client.end();
  }
}
