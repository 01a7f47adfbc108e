/**
 * What a figure depends on besides the code: the commit, PostgreSQL's version and
 * settings (printed in every run's header), and a warm cache. `warm` loads the
 * hot relations of the serving path into shared buffers with pg_prewarm (the
 * contrib extension; created in the bench database when missing), so a first
 * run after a restart or a page-cache reclaim measures the same thing as the next.
 */
import { CALLS, apiSql } from '../server/contract/calls';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { execFileSync, spawnSync } from 'node:child_process';
import pg from 'pg';

/** The relations every partner endpoint reads (tables and their indexes), warmed in this order. */
const HOT_TABLES = [
  'private.bar_documents',
  'private.bar_live',
  'private.occupancy',
  'private.bar_next_events',
  'private.bars',
  'private.cities',
  'private.events',
  'private.city_events_today',
  'private.bar_open_slots',
  'private.search_terms',
];

const SETTINGS = [
  'server_version',
  'shared_buffers',
  'effective_cache_size',
  'work_mem',
  'max_wal_size',
  'random_page_cost',
  'jit',
  'max_connections',
  'huge_pages',
  'huge_pages_status', // PostgreSQL 17+: whether the server got them
];

export function gitCommit(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim();
    return dirty ? `${sha} (+ uncommitted changes)` : sha;
  } catch {
    return 'unknown';
  }
}

/**
 * The huge pages this machine's kernel has reserved (/proc/meminfo), e.g. `3,200 of 2048 kB, 74 in
 * use`, or `none reserved`; undefined where it cannot be read. With none, PostgreSQL's shared buffers
 * sit on 4 KB pages, whose TLB misses cost a random read of the 1M database up to 4× in a virtual
 * machine (docs/OPERATIONS.md › Huge pages).
 */
export function machineHugePages(meminfo?: string): string | undefined {
  let text = meminfo;
  if (text === undefined) {
    try {
      text = fs.readFileSync('/proc/meminfo', 'utf8');
    } catch {
      return undefined;
    }
  }
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  const total = field('HugePages_Total');
  const free = field('HugePages_Free');
  const size = field('Hugepagesize');
  if (!Number.isFinite(total)) return undefined;
  if (total === 0) return 'none reserved';
  return `${total.toLocaleString('en-US')} of ${size} kB, ${(total - free).toLocaleString('en-US')} in use`;
}

/** `name=value` of the settings that decide the figures, one line. */
export async function postgresSettings(client: pg.Client): Promise<string> {
  const { rows } = await client.query<{ name: string; value: string }>(
    `select name, case when unit = '8kB' then pg_size_pretty(setting::bigint * 8192)
                       when unit = 'kB' then pg_size_pretty(setting::bigint * 1024)
                       when unit = 'MB' then pg_size_pretty(setting::bigint * 1024 * 1024)
                       else setting end as value
     from pg_settings where name = any($1) order by array_position($1, name)`,
    [SETTINGS],
  );
  return rows.map((r) => `${r.name}=${r.value}`).join(', ');
}

/** pg_prewarm of the hot relations and their indexes; returns what it did (for the header). */
export async function warm(client: pg.Client): Promise<string> {
  try {
    await client.query('create extension if not exists pg_prewarm');
  } catch (e) {
    return `not warmed (pg_prewarm unavailable: ${(e as Error).message})`;
  }
  const started = Date.now();
  const { rows } = await client.query<{ blocks: string }>(
    `select coalesce(sum(pg_prewarm(r.oid::regclass)), 0) as blocks
     from pg_class r
     where r.oid in (select to_regclass(t) from unnest($1::text[]) t)
        or r.oid in (select i.indexrelid from pg_index i where i.indrelid in (select to_regclass(t) from unnest($1::text[]) t))`,
    [HOT_TABLES],
  );
  const gb = (Number(rows[0]!.blocks) * 8192) / 1024 ** 3;
  // what a periodic job does in production: renew the next-events fragments whose first event has ended
  const { rows: renewed } = await client.query<{ n: number | null }>(
    `select case when to_regprocedure('private.bar_next_events_refresh_expired()') is not null
                 then private.bar_next_events_refresh_expired() end as n`,
  );
  const fragments =
    renewed[0]?.n == null ? '' : `; ${renewed[0].n.toLocaleString('en-US')} expired next-events fragments renewed`;
  return `pg_prewarm of ${HOT_TABLES.length} hot tables and their indexes: ${gb.toFixed(1)} GB in ${(
    (Date.now() - started) /
    1000
  ).toFixed(0)} s${fragments}`;
}

/** One pgbench run of `api.bar` with random ids (4 clients, 2 threads); TPS, or undefined without pgbench. */
export function pgbenchBar(databaseUrl: string, bars: number, seconds: number): number | undefined {
  const call = apiSql(CALLS.bar, { id: 'id' }, (_n, name) => `:${name}`).text.replace('::text as body', '');
  const script = `\\set id random(1, ${bars})\n${call.replace(':id', ':id::text')};\n`;
  const run = spawnSync('pgbench', ['-n', '-c', '4', '-j', '2', '-T', String(seconds), '-f', '-', databaseUrl], {
    input: script,
    encoding: 'utf8',
  });
  const m = /tps = ([\d.]+)/.exec(run.stdout ?? '');
  return m ? Number(m[1]) : undefined;
}

/** Median and range of repeated figures: `1,234 (1,100–1,300)`. */
export function medianRange(values: number[], digits = 0): string {
  const ok = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (ok.length === 0) return '-';
  const fmt = (n: number) =>
    n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
  const mid = median(ok);
  return ok.length === 1 ? fmt(mid) : `${fmt(mid)} (${fmt(ok[0]!)}–${fmt(ok.at(-1)!)})`;
}

export function median(values: number[]): number {
  const ok = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (ok.length === 0) return NaN;
  return ok.length % 2 ? ok[(ok.length - 1) / 2]! : (ok[ok.length / 2 - 1]! + ok[ok.length / 2]!) / 2;
}

/** The p-th percentile of ascending `sorted` (the sample at floor(p % of n)); NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * How the servers reach PostgreSQL and Redis, for the header: `Unix socket <path>` or `TCP host:port`.
 * A socket costs both ends less than loopback TCP (docs/OPERATIONS.md › PostgreSQL and Redis on the
 * same machine), so runs over different transports are not comparable.
 */
export function transports(databaseUrl: string, redisUrl: string): { postgres: string; redis: string } {
  let postgres = 'unknown';
  try {
    const u = new URL(databaseUrl);
    const host = u.searchParams.get('host') ?? decodeURIComponent(u.hostname);
    postgres = host.startsWith('/') ? `Unix socket ${host}` : `TCP ${host || 'localhost'}:${u.port || 5432}`;
  } catch {
    // `postgres://user@/db?host=/dir` is no WHATWG URL (credentials without a host), but pg and libpq read it
    const host = /[?&]host=([^&]+)/.exec(databaseUrl)?.[1];
    if (host && decodeURIComponent(host).startsWith('/')) postgres = `Unix socket ${decodeURIComponent(host)}`;
  }
  let redis = /^([a-z][a-z0-9+.-]*):\/\//i.exec(redisUrl)?.[1] ?? 'unknown'; // a cluster, a sentinel: its scheme
  // a socket path's query may hold a password (docs/OPERATIONS.md): the path only
  if (redisUrl.startsWith('/')) redis = `Unix socket ${redisUrl.split('?')[0]}`;
  else if (/^rediss?:\/\//i.test(redisUrl))
    try {
      const u = new URL(redisUrl);
      redis = `TCP ${u.hostname}:${u.port || 6379}`;
    } catch {
      /* not a URL */
    }
  return { postgres, redis };
}

/**
 * A system-call yardstick for comparing machines: round trips per second of one byte over one
 * loopback TCP connection (both ends in this process; four socket calls each), best of 3 runs of
 * 1 s. Every request of the API costs several such calls (HTTP, PostgreSQL, Redis), and their price
 * differs between machines far more than the CPU's (virtual machines with page-table isolation).
 */
export async function loopbackYardstick(): Promise<number> {
  const server = net.createServer((socket) => socket.on('data', (d) => socket.write(d)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  client.setNoDelay(true);
  await new Promise((resolve) => client.once('connect', resolve));
  let best = 0;
  try {
    for (let run = 0; run < 3; run++) {
      const until = Date.now() + 1000;
      let trips = 0;
      await new Promise<void>((resolve) => {
        const onData = () => {
          trips++;
          if (Date.now() < until) client.write('x');
          else {
            client.off('data', onData);
            resolve();
          }
        };
        client.on('data', onData);
        client.write('x');
      });
      best = Math.max(best, trips);
    }
  } finally {
    client.destroy();
    server.close();
  }
  return best;
}

/**
 * A CPU yardstick for comparing machines: SHA-256 of 256 MB (1 MB at a time) on one core, best of
 * 3, in MB/s. Two machines of the same declared type can differ several times over (steal time,
 * CPU generation): a figure from another machine reproduces only in proportion to this one.
 */
export function cpuYardstick(): number {
  const block = Buffer.alloc(1 << 20, 7);
  let best = Infinity;
  for (let run = 0; run < 3; run++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < 256; i++) createHash('sha256').update(block).digest();
    best = Math.min(best, Number(process.hrtime.bigint() - started) / 1e6);
  }
  return Math.round((256 / best) * 1000);
}
