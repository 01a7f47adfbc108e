/**
 * The GraphQL phase of `npm run bench` (issue 20), side by side with REST on
 * the same server and data:
 *
 * 1. `{ bar(id) { ...GET bars/:id's fields } }` req/s beside GET bars/:id (goal: at least 60 %);
 * 2. a city page (20 bars, each bar's next 3 events) as one GraphQL request vs the equivalent
 *    REST calls made one after another (bars_by_city, then bars/:id of each bar): mean ms;
 * 3. the memory a 10,000-node query takes (executed in this process: heap and RSS growth; goal < 100 MB);
 * 4. the CPU one `bar(id)` execution takes in this process, the bar's object in memory (grafast's share).
 */
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import '../server/graphile/env';
import '../server/graphile/node20-compat';
import { execute } from 'postgraphile/grafast';
import { parse, type ExecutionResult } from 'postgraphile/graphql';
import { createPool } from '../server/db/pools';
import { answerJson, GRAPHQL_ROLE, partnerSchema } from '../server/graphql/endpoint';
import { RequestData } from '../server/graphql/data';
import { CALLS } from '../server/contract/calls';
import { median } from './environment';
import { runLoad, type LoadResult } from './load';
import { startFullServer } from './servers';
import { PARTNER_PREFIX as PREFIX } from '../server/contract/identity';

export const BAR_QUERY = `query Bar($id: ID!) { bar(id: $id) {
  id name address city { name state } state zipCode latitude longitude phone website googleRating googleRatingsTotal
  primaryCategory { name slug } categories(first: 10) { nodes { name slug } }
  hours { monday { open close } tuesday { open close } wednesday { open close } thursday { open close }
          friday { open close } saturday { open close } sunday { open close } }
  profilePictureUrl photos(first: 10) { nodes { url } }
  occupancy { currentIntensity status hourly { hour intensity } } description priceLevel
  events(first: 10) { nodes { id name description startAt endAt } } } }`;

export const CITY_PAGE_QUERY = `query CityPage($state: String!, $name: String!) { city(state: $state, name: $name) {
  name state bars(first: 20) { totalCount nodes { id name address googleRating occupancy { status currentIntensity }
    events(first: 3) { nodes { id name startAt endAt } } } } } }`;

/** 100 bars x 99 events each: 100 + 9,900 = 10,000 nodes (the node limit). */
export const TEN_THOUSAND_NODES = `{ bars(first: 100) { nodes { id name address description hours { friday { open close } }
  occupancy { hourly { hour intensity } } categories(first: 1) { totalCount }
  events(first: 99) { nodes { id title description startAt endAt } } } } }`;

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

async function graphqlLoad(opts: {
  url: string;
  connections: number;
  duration: number;
  headers: Record<string, string>;
  nextBody: () => string;
}): Promise<LoadResult> {
  const result = await autocannon({
    url: opts.url,
    connections: opts.connections,
    duration: opts.duration,
    headers: { accept: 'application/json', 'content-type': 'application/json', ...opts.headers },
    requests: [
      {
        method: 'POST',
        setupRequest: (req: Record<string, unknown>) => ({ ...req, path: `${PREFIX}/graphql`, body: opts.nextBody() }),
      },
    ],
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

async function samples(databaseUrl: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    let { rows: bars } = await client.query<{ id: string }>(
      'select id::text as id from private.bars tablesample system (1) limit 300',
    );
    if (bars.length < 50)
      bars = (await client.query<{ id: string }>('select id::text as id from private.bars limit 300')).rows;
    const { rows: cities } = await client.query<{ state: string; name: string }>(
      `select c.state, c.name from private.cities c
        where exists (select 1 from private.bars b where b.city_id = c.id offset 19) order by c.id limit 10`,
    );
    return { bars: bars.map((b) => b.id), cities };
  } finally {
    await client.end();
  }
}

async function timed<T>(fn: () => Promise<T>): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

/** One 10,000-node query executed here (same schema and SQL as the server): heap and RSS it adds. */
async function memoryOfTenThousandNodes(databaseUrl: string) {
  const pool = createPool(databaseUrl, { max: 4, role: GRAPHQL_ROLE, applicationName: 'bench-graphql' });
  const schema = partnerSchema();
  const document = parse(TEN_THOUSAND_NODES);
  const run = async () => {
    const result = (await execute({
      schema,
      document,
      outputDataAsString: true, // as the server executes it
      contextValue: {
        data: new RequestData(pool),
        rateLimit: () => ({
          cost: 1,
          limit: -1,
          remaining: -1,
          used: 0,
          resetAt: new Date().toISOString(),
          nodeCount: 0,
        }),
      },
    })) as ExecutionResult<string | null>;
    return answerJson(result.errors as unknown[] | undefined, result.data ?? null, {}).length;
  };
  try {
    await run(); // warm: plans, connections
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    const before = process.memoryUsage();
    let peakRss = before.rss;
    let peakHeap = before.heapUsed;
    const sampler = setInterval(() => {
      const m = process.memoryUsage();
      peakRss = Math.max(peakRss, m.rss);
      peakHeap = Math.max(peakHeap, m.heapUsed);
    }, 1);
    const bytes = await run();
    const after = process.memoryUsage();
    clearInterval(sampler);
    peakRss = Math.max(peakRss, after.rss);
    peakHeap = Math.max(peakHeap, after.heapUsed);
    const mb = (n: number) => n / 1024 / 1024;
    return {
      responseBytes: bytes,
      heapGrowthMb: mb(peakHeap - before.heapUsed),
      rssGrowthMb: mb(peakRss - before.rss),
      gcExposed: Boolean(gc),
    };
  } finally {
    await pool.end();
  }
}

/**
 * CPU per execution of `bar(id)` with all its fields (the seed's first bar), executed here with the
 * bar's object in memory (no database, no HTTP): grafast's share of a GraphQL request. Median of 5
 * rounds after a warm-up.
 */
export async function executionCpuOfBar(databaseUrl: string, o = { perRound: 5_000, warm: 2_000 }) {
  const pool = createPool(databaseUrl, { max: 1, applicationName: 'bench-graphql' });
  // the same bar on every run and machine of a seed: the first
  let id: string;
  let body: string; // GET bars/:id's body, parsed per query as the server's RequestData does
  try {
    id = (await pool.query<{ id: string }>('select min(id)::text as id from private.bars')).rows[0]!.id;
    body = JSON.stringify(await new RequestData(pool).call(CALLS.bar, { id }));
  } finally {
    await pool.end();
  }
  const schema = partnerSchema();
  const document = parse(BAR_QUERY);
  const data = { now: new Date(), bar: async () => (JSON.parse(body) as { bar: unknown }).bar };
  const run = async () => {
    const result = (await execute({
      schema,
      document,
      variableValues: { id },
      contextValue: { data, rateLimit: () => ({}) },
      outputDataAsString: true, // as the server executes it, and its answer's text as the server writes it
    })) as ExecutionResult<string | null>;
    if (result.errors?.length) throw new Error(`bar(id) in process: ${result.errors[0]!.message}`);
    return answerJson(undefined, result.data ?? null, {});
  };
  let answer = '';
  for (let i = 0; i < o.warm; i++) answer = await run(); // warm: the plan, the JIT
  const rounds: number[] = [];
  for (let r = 0; r < 5; r++) {
    const before = process.cpuUsage();
    for (let i = 0; i < o.perRound; i++) await run();
    const used = process.cpuUsage(before);
    rounds.push((used.user + used.system) / o.perRound);
  }
  return { id, answer, rounds, medianUs: median(rounds), minUs: Math.min(...rounds), maxUs: Math.max(...rounds) };
}

export async function graphqlPhase(args: {
  databaseUrl: string;
  redisUrl: string;
  duration: number;
  connections: number;
  apiKey: string;
  poolMax: number;
}) {
  const sample = await samples(args.databaseUrl);
  const execution = await executionCpuOfBar(args.databaseUrl); // first: nothing else runs beside it
  const pick = () => sample.bars[Math.floor(Math.random() * sample.bars.length)]!;
  const headers = { authorization: `Bearer ${args.apiKey}` };
  const server = await startFullServer({
    databaseUrl: args.databaseUrl,
    redisUrl: args.redisUrl,
    poolMax: args.poolMax,
    logFile: path.join(os.tmpdir(), 'bench-graphql-server.log'),
  });
  try {
    const rest = () => `${PREFIX}/bars/${pick()}`;
    const gqlBody = () => JSON.stringify({ query: BAR_QUERY, variables: { id: pick() } });
    await runLoad({ url: server.url, nextPath: rest, connections: 10, duration: 1, headers });
    await graphqlLoad({ url: server.url, connections: 10, duration: 1, headers, nextBody: gqlBody });
    // REST and GraphQL alternate (two runs each, half the duration): a shared machine's load drifts
    const runs: { rest: LoadResult[]; gql: LoadResult[] } = { rest: [], gql: [] };
    for (let round = 0; round < 2; round++) {
      const duration = Math.max(1, Math.round(args.duration / 2));
      runs.rest.push(
        await runLoad({ url: server.url, nextPath: rest, connections: args.connections, duration, headers }),
      );
      runs.gql.push(
        await graphqlLoad({ url: server.url, connections: args.connections, duration, headers, nextBody: gqlBody }),
      );
    }
    const combine = (rs: LoadResult[]): LoadResult => ({
      rps: mean(rs.map((r) => r.rps)),
      p50: mean(rs.map((r) => r.p50)),
      p90: mean(rs.map((r) => r.p90)),
      p99: Math.max(...rs.map((r) => r.p99)),
      max: Math.max(...rs.map((r) => r.max)),
      errors: rs.reduce((n, r) => n + r.errors, 0),
      non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
      total: rs.reduce((n, r) => n + r.total, 0),
    });
    const restBar = combine(runs.rest);
    const gqlBar = combine(runs.gql);

    // A city page, one request after another (a partner's page build).
    const get = async (path: string) => {
      const res = await fetch(`${server.url}${PREFIX}/${path}`, { headers });
      if (res.status !== 200) throw new Error(`GET ${path}: ${res.status}`);
      return (await res.json()) as { bars?: { id: string }[] };
    };
    const restPage = async (c: { state: string; name: string }) => {
      const page = await get(`bars_by_city/${encodeURIComponent(c.state)}/${encodeURIComponent(c.name)}?per_page=20`);
      for (const b of page.bars ?? []) await get(`bars/${b.id}`); // each bar's next events are in its detail
    };
    const gqlPage = async (c: { state: string; name: string }) => {
      const res = await fetch(`${server.url}${PREFIX}/graphql`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ query: CITY_PAGE_QUERY, variables: c }),
      });
      const body = (await res.json()) as { errors?: unknown };
      if (res.status !== 200 || body.errors)
        throw new Error(`GraphQL city page: ${res.status} ${JSON.stringify(body.errors)}`);
    };
    const restMs: number[] = [];
    const gqlMs: number[] = [];
    for (let round = 0; round < 3; round++) {
      for (const c of sample.cities) {
        const r = await timed(() => restPage(c));
        const g = await timed(() => gqlPage(c));
        if (round > 0) {
          restMs.push(r);
          gqlMs.push(g);
        }
      }
    }
    const memory = await memoryOfTenThousandNodes(args.databaseUrl);

    const f0 = (n: number) => Math.round(n).toString();
    const f1 = (n: number) => n.toFixed(1);
    console.log(`\n## GraphQL (beta) beside REST (${args.connections} connections, ${args.duration} s per run)\n`);
    console.log('| measure | REST | GraphQL | GraphQL/REST | goal |\n| --- | --- | --- | --- | --- |');
    console.log(
      `| bar detail req/s (\`GET bars/:id\` / \`{ bar(id) {…all its fields} }\`) | ${f0(restBar.rps)} | ${f0(gqlBar.rps)} | ${(gqlBar.rps / restBar.rps).toFixed(2)} | ≥ 0.60 |`,
    );
    console.log(
      `| bar detail p99 ms | ${f1(restBar.p99)} | ${f1(gqlBar.p99)} | | errors+non2xx ${restBar.errors + restBar.non2xx} / ${gqlBar.errors + gqlBar.non2xx} |`,
    );
    console.log(
      `| city page: 20 bars + each bar's next 3 events, sequential, mean ms (${restMs.length} pages; REST = 21 calls) | ${f1(mean(restMs))} | ${f1(mean(gqlMs))} | ${(mean(gqlMs) / mean(restMs)).toFixed(2)} | < 1 |`,
    );
    console.log(
      `| bar detail executed in process (grafast, the bar's object in memory): CPU µs per query, median (min–max) of 5 rounds | | ${f0(execution.medianUs)} (${f0(execution.minUs)}–${f0(execution.maxUs)}) | | |`,
    );
    console.log(
      `| 10,000-node query: heap / RSS growth (MB), answer ${(memory.responseBytes / 1024).toFixed(0)} KB | | ${f1(memory.heapGrowthMb)} / ${f1(memory.rssGrowthMb)} | | < 100 MB |`,
    );
    return {
      restBar,
      gqlBar,
      cityPage: { restMs: mean(restMs), graphqlMs: mean(gqlMs), pages: restMs.length },
      memory,
      execution,
    };
  } finally {
    await server.stop();
  }
}
