/** One autocannon run at max throughput (constant-rate runs: bench/paced.ts). */
import autocannon from 'autocannon';

export interface LoadResult {
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  errors: number;
  non2xx: number;
  /** Requests answered (autocannon); requests sent, answered + errors (constant-rate runs, bench/paced.ts). */
  total: number;
  /** The server process's CPU time per answered request, in µs (the full-vs-bare runs). */
  cpuUsPerRequest?: number;
  /** This process's (the load generator's) CPU time per answered request, in µs. */
  clientCpuUsPerRequest?: number;
  /** Answers by HTTP status (constant-rate runs, bench/paced.ts). */
  statuses?: Record<string, number>;
}

export async function runLoad(opts: {
  url: string;
  nextPath: () => string;
  connections: number;
  duration: number;
  headers?: Record<string, string>;
}): Promise<LoadResult> {
  const result = await autocannon({
    url: opts.url,
    connections: opts.connections,
    duration: opts.duration,
    headers: { accept: 'application/json', ...opts.headers },
    requests: [{ method: 'GET', setupRequest: (req: Record<string, unknown>) => ({ ...req, path: opts.nextPath() }) }],
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    total: result.requests.total,
  };
}
