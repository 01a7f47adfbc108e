/**
 * What each partner middleware costs per request (issue 9 item 5): the same
 * express app with the middlewares added one by one, each variant in its own
 * process, measured with autocannon from this one. The handler answers a
 * constant JSON body, so only the middleware differs between variants.
 *
 *   DATABASE_URL=... node test/hardening/run-ts.js bench/middleware-cost.ts [seconds]
 *
 * DATABASE_URL is needed for the variant with the real credentials guard (a
 * key is issued there; its identity is cached, limits count in-process).
 */
import { fork } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import express, { type RequestHandler } from 'express';
import pino from 'pino';
import { createPartnerGuard } from '../server/credentials/guard';
import { createPool } from '../server/db/pools';
import { accessLog } from '../server/http/access-log';
import { keyHeaderHygiene, urlHygiene } from '../server/web/input-hygiene';
import { onlyGetAndHead, requireJsonAcceptable, strictTransportSecurity } from '../server/http/negotiation';
import { requestId } from '../server/http/request-id';

const VARIANTS = ['bare', '+request-id', '+access-log', '+protocol-checks', '+input-hygiene', '+guard'] as const;
type Variant = (typeof VARIANTS)[number];

async function serve(variant: Variant): Promise<void> {
  const level = VARIANTS.indexOf(variant);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (level >= 1) app.use(requestId);
  if (level >= 2) app.use(accessLog(pino({ level: 'info' }, fs.createWriteStream('/dev/null'))));
  if (level >= 3) app.use(strictTransportSecurity, onlyGetAndHead, requireJsonAcceptable);
  if (level >= 4) app.use(keyHeaderHygiene, urlHygiene);
  let guard: RequestHandler[] = [];
  let key = '';
  if (level >= 5) {
    const url = process.env.DATABASE_URL!;
    const owner = createPool(url, { max: 2, applicationName: 'bench-owner' });
    const plan = `bench-${process.pid}`;
    await owner.query('select admin.create_plan($1, null, null, null)', [plan]); // unlimited: no 429s
    const { rows } = await owner.query<{ api_key: string }>(
      `select k.api_key from admin.create_subscriber($1, $2) s, admin.issue_key(s.id) k`,
      [`bench ${process.pid}`, plan],
    );
    key = rows[0]!.api_key;
    const pool = createPool(url, { max: 4, role: 'bar_partner', applicationName: 'bench-partner' });
    guard = (await createPartnerGuard({ pool, databaseUrl: url, logger: pino({ level: 'silent' }) })).handlers;
  }
  app.get('/x', ...guard, (_req, res) => {
    res.type('application/json').send('{"ok":true}');
  });
  const server = app.listen(0, '127.0.0.1', () => {
    process.send!({ port: (server.address() as AddressInfo).port, key });
  });
}

async function measure(seconds: number): Promise<void> {
  const rows: string[] = [];
  for (const variant of VARIANTS) {
    const child = fork(process.argv[1]!, [process.argv[2]!], { env: { ...process.env, MW_VARIANT: variant } });
    const { port, key } = await new Promise<{ port: number; key: string }>((resolve) => child.once('message', resolve));
    const url = `http://127.0.0.1:${port}/x?a=1&b=caf%C3%A9`;
    const headers: Record<string, string> = key ? { 'X-API-Key': key } : {};
    await autocannon({ url, connections: 10, duration: 1, headers }); // warm-up
    const r = await autocannon({ url, connections: 10, duration: seconds, headers });
    const usPerRequest = 1e6 / r.requests.average;
    rows.push(
      `| ${variant} | ${Math.round(r.requests.average)} | ${usPerRequest.toFixed(1)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} |`,
    );
    child.kill('SIGKILL');
  }
  process.stdout.write(
    `| variant (cumulative) | req/s | µs/request (CPU of one core) | p50 ms | p99 ms | non-2xx |\n|---|---|---|---|---|---|\n${rows.join('\n')}\n`,
  );
}

if (process.env.MW_VARIANT) void serve(process.env.MW_VARIANT as Variant);
else void measure(Number(process.argv[3] ?? 5));
