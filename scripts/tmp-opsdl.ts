import { printSchema, buildClientSchema, getIntrospectionQuery } from 'graphql';
import pg from 'pg';
import { migrateDatabase } from '../server/db/migrate';
import { createLogger } from '../server/log';
import { startOperatorServer } from '../server/operator/server';
(async () => {
  const url = process.env.DATABASE_URL!;
  await migrateDatabase(url, { includeCurrent: true });
  const c = new pg.Client({ connectionString: url }); await c.connect();
  const { rows } = await c.query<{ token: string }>("select token from admin.create_operator('dev-' || gen_random_uuid())");
  await c.end();
  const s = await startOperatorServer({ databaseUrl: url, config: { env: 'test', adminHost: '127.0.0.1', adminPort: 0, pgPoolMax: 2 }, logger: createLogger('silent') });
  const r = await fetch(`${s.url}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${rows[0]!.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ query: getIntrospectionQuery() }) });
  const j = (await r.json()) as { data: never };
  console.log(printSchema(buildClientSchema(j.data)));
  console.error('TOKEN', rows[0]!.token);
  await s.close();
})().catch((e) => { console.error(e); process.exit(1); });
