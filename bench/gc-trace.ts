/**
 * What V8's young-generation collector did in a server's log, second by second: a full server
 * started by the bench with `BENCH_SERVER_NODE_ARGS="--trace-gc --trace-gc-nvp"` writes one JSON
 * line per collection to its log (os.tmpdir()/bench-full-server.log).
 *
 *   node dist/bench/gc-trace.js /tmp/bench-full-server.log
 *
 * Per second of the isolate's life: scavenges, bytes promoted to the old generation and bytes that
 * survived, the scavenges' main-thread pause and their helpers' time, mark-compacts and their
 * pause. Under a steady load the busy seconds are the measured run's; their promoted bytes divided
 * by the answers of a second are what each answer left for the old generation's collector.
 */
import fs from 'node:fs';

interface Collection {
  gc: string;
  pause: number;
  promoted?: number;
  new_space_survived?: number;
  'background.scavenge.parallel'?: number;
}

export interface GcSecond {
  second: number;
  scavenges: number;
  promotedMB: number;
  survivedMB: number;
  scavengePauseMs: number;
  scavengeHelpersMs: number;
  markCompacts: number;
  markCompactPauseMs: number;
}

const LINE = /^\[\d+:\w+:\d+\]\s+(\d+) ms: GC: (\{.*\})\s*$/;

/** The collections of a `--trace-gc --trace-gc-nvp` log, summed per second of the isolate's life. */
export function gcSeconds(log: string): GcSecond[] {
  const seconds = new Map<number, GcSecond>();
  for (const line of log.split('\n')) {
    const m = LINE.exec(line);
    if (!m) continue;
    const second = Math.floor(Number(m[1]) / 1000);
    const c = JSON.parse(m[2]!) as Collection;
    let s = seconds.get(second);
    if (!s) {
      s = {
        second,
        scavenges: 0,
        promotedMB: 0,
        survivedMB: 0,
        scavengePauseMs: 0,
        scavengeHelpersMs: 0,
        markCompacts: 0,
        markCompactPauseMs: 0,
      };
      seconds.set(second, s);
    }
    if (c.gc === 's') {
      s.scavenges++;
      s.promotedMB += (c.promoted ?? 0) / 1e6;
      s.survivedMB += (c.new_space_survived ?? 0) / 1e6;
      s.scavengePauseMs += c.pause;
      s.scavengeHelpersMs += c['background.scavenge.parallel'] ?? 0;
    } else if (c.gc === 'mc') {
      // ('ms' is V8's minor mark-sweep, a young-generation collector off by default: not a mark-compact)
      s.markCompacts++;
      s.markCompactPauseMs += c.pause;
    }
  }
  return [...seconds.values()].sort((a, b) => a.second - b.second);
}

if (require.main === module) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node dist/bench/gc-trace.js <server log written with --trace-gc --trace-gc-nvp>');
    process.exit(2);
  }
  let log: string;
  try {
    log = fs.readFileSync(file, 'utf8');
  } catch (err) {
    console.error(`${file}: ${(err as Error).message}`);
    process.exit(1);
  }
  const rows = gcSeconds(log);
  if (rows.length === 0) {
    console.error(`${file}: no --trace-gc-nvp lines`);
    process.exit(1);
  }
  const f = (n: number) => n.toFixed(1);
  console.log(
    '| second | scavenges | promoted MB | survived MB | scavenge pause ms | helpers ms | mark-compacts | their pause ms |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of rows)
    console.log(
      `| ${r.second} | ${r.scavenges} | ${f(r.promotedMB)} | ${f(r.survivedMB)} | ${f(r.scavengePauseMs)} | ${f(r.scavengeHelpersMs)} | ${r.markCompacts} | ${f(r.markCompactPauseMs)} |`,
    );
}
