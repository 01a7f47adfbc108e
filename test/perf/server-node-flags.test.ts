/**
 * The server's V8 flags (server/node-flags.ts) are one setting with four readers: `npm start`,
 * the Dockerfile's CMD, the bench's full server and bench/instructions-per-request.sh. A figure measured by the bench is only the
 * product's if all three run the server alike, and a flag this Node does not know stops it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fullServerNodeArgs } from '../../bench/servers';
import { SERVER_NODE_FLAGS } from '../../server/node-flags';

const root = path.resolve(__dirname, '../..');

describe("the server's node flags", () => {
  test('npm start passes them, right before the server', () => {
    const { scripts } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const start = /&& node (.*)dist\/server\/main\.js$/.exec(scripts.start ?? '');
    expect(start).not.toBeNull();
    expect((start?.[1] ?? '').split(/\s+/).filter(Boolean)).toEqual(SERVER_NODE_FLAGS);
  });

  test("the Dockerfile's CMD passes them", () => {
    const cmd = /^CMD (\[.*\])$/m.exec(fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
    expect(cmd).not.toBeNull();
    expect(JSON.parse(cmd?.[1] ?? 'null')).toEqual(['node', ...SERVER_NODE_FLAGS, 'dist/server/main.js']);
  });

  test("the bench's full server runs with them, BENCH_SERVER_NODE_ARGS after (V8's last flag wins)", () => {
    expect(fullServerNodeArgs({})).toEqual(SERVER_NODE_FLAGS);
    expect(fullServerNodeArgs({ BENCH_SERVER_NODE_ARGS: ' --allocation-site-pretenuring  --trace-gc ' })).toEqual([
      ...SERVER_NODE_FLAGS,
      '--allocation-site-pretenuring',
      '--trace-gc',
    ]);
  });

  test("bench/instructions-per-request.sh runs the checkout it measures with that checkout's flags", () => {
    const script = fs.readFileSync(path.join(root, 'bench/instructions-per-request.sh'), 'utf8');
    expect(script).toMatch(/^\s*node \$node_flags "\$checkout\/dist\/server\/main\.js"/m);
    // the script's own lines that read them, run against this checkout's build (npm test builds dist)
    const reading = /^node_flags=\$\(.*\n.*node-flags\.js"\)$/m.exec(script)?.[0];
    expect(reading).toBeDefined();
    const read = spawnSync('bash', ['-c', `${reading}\nprintf %s "$node_flags"`], {
      encoding: 'utf8',
      env: { ...process.env, checkout: root },
    });
    expect(read.stdout).toBe(SERVER_NODE_FLAGS.join(' '));
  });

  test('this Node.js accepts them (and refuses a flag it does not know, so the check can fail)', () => {
    const run = (flags: readonly string[]) => spawnSync(process.execPath, [...flags, '-e', '0'], { encoding: 'utf8' });
    const ours = run(SERVER_NODE_FLAGS);
    expect({ status: ours.status, stderr: ours.stderr }).toEqual({ status: 0, stderr: '' });
    const unknown = run(['--no-such-v8-flag-at-all']);
    expect(unknown.status).not.toBe(0);
    expect(unknown.stderr).toMatch(/bad option|unrecognized/i);
  });
});
