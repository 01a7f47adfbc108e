/**
 * The ceiling of this stack: node:http + pg, no express, no auth, no limiter,
 * no logging. GET /<endpoint> calls that endpoint's api function with its
 * fixed parameters (BENCH_FIXED: {name: {sql, values}}) and writes the JSON;
 * GET /<name> of BENCH_CANNED ({name: {status, headers, body}}) writes that
 * answer as it is (the floor of any answer node:http gives, e.g. a 429).
 */
import http from 'node:http';
import { createPool } from '../server/db/pools';

const fixed = JSON.parse(process.env.BENCH_FIXED ?? '{}') as Record<string, { sql: string; values: unknown[] }>;
const canned = JSON.parse(process.env.BENCH_CANNED ?? '{}') as Record<
  string,
  { status: number; headers: Record<string, string>; body: string }
>;
const pool = createPool(process.env.DATABASE_URL!, {
  max: Number(process.env.PG_POOL_MAX ?? 10),
  role: 'bar_partner',
  applicationName: 'bench-bare',
});

/** BENCH_NAMED=1: pg named (prepared) statements, to measure what they buy. */
const named = process.env.BENCH_NAMED === '1';

const server = http.createServer((req, res) => {
  const name = (req.url ?? '/').slice(1).split('?')[0]!;
  const answer = canned[name];
  if (answer) {
    res.writeHead(answer.status, answer.headers).end(answer.body);
    return;
  }
  const call = fixed[name];
  if (!call) {
    res.writeHead(404).end();
    return;
  }
  const query = named
    ? { name: `bench_${req.url}`, text: call.sql, values: call.values }
    : { text: call.sql, values: call.values };
  pool.query<{ body: string }>(query).then(
    ({ rows }) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(rows[0]?.body ?? 'null');
    },
    (err: Error) => {
      res.writeHead(500).end(err.message);
    },
  );
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
process.on('SIGTERM', () => {
  server.close();
  void pool.end().then(() => process.exit(0));
});
