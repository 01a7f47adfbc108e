/**
 * EXPLAIN (ANALYZE, BUFFERS) of the statements inside the SECURITY DEFINER
 * endpoint functions, for each endpoint's worst cases: auto_explain logs every
 * nested statement to the session as LOG notices. Statements run once per row
 * (the per-bar helpers) are folded into one entry with their call count, the
 * slowest instance's plan shown.
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Call, Endpoint } from './workload';

const LARGE_TABLES = [
  'bars',
  'events',
  'posts',
  'post_media',
  'opening_hours',
  'occupancy',
  'photos',
  'bar_categories',
  'bar_groups',
  'users',
];

interface Entry {
  text: string;
  calls: number;
  totalMs: number;
  slowestMs: number;
  plan: string;
}

export interface ExplainSummary {
  file: string;
  ms: number;
  seqScans: string[];
}

function fold(notices: string[]): Entry[] {
  const entries = new Map<string, Entry>();
  for (const notice of notices) {
    const m = /^duration: ([\d.]+) ms\s+plan:\n([\s\S]*)$/.exec(notice);
    if (!m) continue;
    const ms = Number(m[1]);
    const body = m[2]!;
    const text = (/Query Text: ([\s\S]*?)\n(?=\S)/.exec(body)?.[1] ?? body.split('\n')[0]!).trim();
    const e = entries.get(text) ?? { text, calls: 0, totalMs: 0, slowestMs: -1, plan: '' };
    e.calls++;
    e.totalMs += ms;
    if (ms > e.slowestMs) {
      e.slowestMs = ms;
      e.plan = body;
    }
    entries.set(text, e);
  }
  return [...entries.values()].sort((a, b) => b.totalMs - a.totalMs);
}

export async function explainWorstCases(
  url: string,
  list: Endpoint[],
  dir: string,
  scale: string,
): Promise<ExplainSummary[]> {
  fs.mkdirSync(dir, { recursive: true });
  const client = new pg.Client({ connectionString: url, application_name: 'bench-explain' });
  await client.connect();
  const notices: string[] = [];
  client.on('notice', (n) => notices.push(n.message ?? ''));
  const summaries: ExplainSummary[] = [];
  try {
    await client.query(`LOAD 'auto_explain'`);
    for (const endpoint of list) {
      for (const call of endpoint.worst) {
        await client.query(call.sql, call.values); // warm the cache: plans of the second run
        await client.query(`SET auto_explain.log_nested_statements = on; SET auto_explain.log_min_duration = 0;
          SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on; SET auto_explain.log_timing = on;
          SET client_min_messages = log`);
        notices.length = 0;
        const t = process.hrtime.bigint();
        await client.query(call.sql, call.values);
        const ms = Number(process.hrtime.bigint() - t) / 1e6;
        await client.query('RESET client_min_messages; SET auto_explain.log_min_duration = -1');
        const entries = fold(notices);
        const seqScans = [
          ...new Set(entries.flatMap((e) => [...e.plan.matchAll(/Seq Scan on (\w+)/g)].map((x) => x[1]!))),
        ].filter((t) => LARGE_TABLES.includes(t));
        const file = path.join(dir, `${endpoint.name}--${call.label ?? 'case'}.txt`);
        fs.writeFileSync(file, render(endpoint.name, call, ms, scale, entries, seqScans));
        summaries.push({ file, ms, seqScans });
      }
    }
  } finally {
    await client.end();
  }
  writeSummary(dir, scale);
  return summaries;
}

/** SUMMARY.txt over every explain file in the folder (a run with --only refreshes its own files only). */
function writeSummary(dir: string, scale: string): void {
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.txt') && f !== 'SUMMARY.txt')
    .sort();
  const lines = files.map((f) => {
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    const ms = /^Run time: ([\d.]+) ms/m.exec(text)?.[1] ?? '?';
    const seq = /^Seq scans of large tables: (.*)$/m.exec(text)?.[1] ?? '?';
    return `${f.padEnd(72)} ${ms.padStart(9)} ms  ${seq === 'none' ? 'no seq scan of a large table' : `SEQ SCAN: ${seq}`}`;
  });
  fs.writeFileSync(
    path.join(dir, 'SUMMARY.txt'),
    [
      `Worst cases at ${scale} (${new Date().toISOString()})`,
      'time = one warm run with auto_explain ANALYZE on (its timing overhead included)',
      '',
      ...lines,
      '',
    ].join('\n'),
  );
}

function render(name: string, call: Call, ms: number, scale: string, entries: Entry[], seqScans: string[]): string {
  return [
    `Endpoint: ${name}   case: ${call.label}`,
    `Request:  GET /api/v1/partner${call.path}`,
    `SQL:      ${call.sql.replace(/\s+/g, ' ')}`,
    `Values:   ${JSON.stringify(call.values)}`,
    `Scale:    ${scale}`,
    `Run time: ${ms.toFixed(1)} ms (warm, auto_explain ANALYZE timing overhead included)`,
    `Seq scans of large tables: ${seqScans.length ? seqScans.join(', ') : 'none'}`,
    '',
    'Nested statements, most total time first (calls = executions in this request):',
    '',
    ...entries.map((e) =>
      [
        '-'.repeat(100),
        `calls: ${e.calls}   total: ${e.totalMs.toFixed(2)} ms   slowest: ${e.slowestMs.toFixed(2)} ms`,
        e.plan.trimEnd(),
        '',
      ].join('\n'),
    ),
  ].join('\n');
}
