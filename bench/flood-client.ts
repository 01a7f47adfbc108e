/**
 * The 429 flood's client, in its own process (bench/flood.ts forks it) so that
 * sending thousands of requests a second does not slow the runner's own
 * measurement of the other keys. Argument: JSON { url, path, key, rate, duration,
 * connections, drainMs }; answers the parent with the run's LoadResult and its statuses.
 */
import { runPaced } from './paced';

interface FloodOrder {
  url: string;
  path: string;
  key: string;
  rate: number;
  duration: number;
  connections: number;
  drainMs: number;
}

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2]!) as FloodOrder;
  const result = await runPaced({
    url: o.url,
    nextPath: () => o.path,
    connections: o.connections,
    duration: o.duration,
    rate: o.rate,
    drainMs: o.drainMs,
    headers: { authorization: `Bearer ${o.key}` },
  });
  process.send!(result, () => process.exit(0));
}

main().catch((e: Error) => {
  process.stderr.write(`flood client failed: ${e.stack ?? e.message}\n`);
  process.exit(1);
});
