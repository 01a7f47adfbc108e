/**
 * A throwaway Redis Cluster of the test's own (3 masters, and optionally a replica each), on free
 * loopback ports (and their cluster-bus ports, +10000) under a temp dir:
 * `redis-server --cluster-enabled yes` ×3 + `redis-cli --cluster create`.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LOWEST_PORT, ephemeralLow, portIsFree } from '../../db/tools/ports';

/** Redis Cluster's bus port: the client port + 10000. */
const BUS_OFFSET = 10_000;

export function redisClusterBinariesMissing(): string | undefined {
  for (const b of ['redis-server', 'redis-cli']) if (spawnSync('which', [b]).status !== 0) return `${b} not found`;
  return undefined;
}

/** Below the ephemeral range with their bus ports too, so no outgoing connection takes either (db/tools/ports). */
async function clusterPorts(n: number): Promise<number[]> {
  const ports: number[] = [];
  const span = ephemeralLow() - BUS_OFFSET - LOWEST_PORT;
  if (span < n * 100) throw new Error(`too few ports below the ephemeral range (${ephemeralLow()}) for a cluster`);
  while (ports.length < n) {
    const p = LOWEST_PORT + Math.floor(Math.random() * span);
    if (ports.includes(p) || ports.includes(p - BUS_OFFSET) || ports.includes(p + BUS_OFFSET)) continue;
    if ((await portIsFree(p)) && (await portIsFree(p + BUS_OFFSET))) ports.push(p);
  }
  return ports;
}

function cli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('redis-cli', args, { timeout: 20_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`redis-cli ${args.join(' ')}: ${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout),
    ),
  );
}

export class OwnRedisCluster {
  private readonly children: ChildProcess[] = [];
  private constructor(
    readonly ports: number[],
    private readonly dir: string,
  ) {}

  get nodes(): string[] {
    return this.ports.map((p) => `127.0.0.1:${p}`);
  }

  static async start(size = 3, replicasPerMaster = 0): Promise<OwnRedisCluster> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pbapi-redis-cluster-'));
    const cluster = new OwnRedisCluster(await clusterPorts(size), dir);
    try {
      for (const port of cluster.ports) {
        cluster.children.push(
          spawn(
            'redis-server',
            [
              '--port',
              String(port),
              '--bind',
              '127.0.0.1',
              '--cluster-enabled',
              'yes',
              '--cluster-config-file',
              path.join(dir, `nodes-${port}.conf`),
              '--cluster-node-timeout',
              '2000',
              '--dir',
              dir,
              '--save',
              '',
              '--appendonly',
              'no',
              '--repl-diskless-sync-delay',
              '0',
              '--logfile',
              path.join(dir, `redis-${port}.log`),
            ],
            { stdio: 'ignore' },
          ),
        );
      }
      for (const port of cluster.ports) {
        for (let i = 0; ; i++) {
          if ((await cli(['-p', String(port), 'ping']).catch(() => '')).trim() === 'PONG') break;
          if (i > 100) throw new Error(`redis-server did not start on ${port}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      await cli([
        '--cluster',
        'create',
        ...cluster.nodes,
        '--cluster-replicas',
        String(replicasPerMaster),
        '--cluster-yes',
      ]);
      for (const port of cluster.ports) {
        for (let i = 0; ; i++) {
          if (/cluster_state:ok/.test(await cli(['-p', String(port), 'cluster', 'info']))) break;
          if (i > 200) throw new Error('the cluster did not become ready');
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      // cluster_state:ok comes before the replicas are attached and synced (seen: all six nodes still
      // masters in one node's view, the first sync not begun). A replica that never synced cannot be
      // promoted, and a master that still sees it as a master denies it its vote, so a test that kills
      // a master right away could wait for a failover that never comes. Wait for both.
      const replicas = size - size / (1 + replicasPerMaster);
      for (let i = 0; ; i++) {
        const port = (p: number) => ['-p', String(p)];
        const infos = await Promise.all(cluster.ports.map((p) => cli([...port(p), 'info', 'replication'])));
        const views = await Promise.all(cluster.ports.map((p) => cli([...port(p), 'cluster', 'nodes'])));
        const synced = infos.filter((info) => /role:slave/.test(info) && /master_link_status:up/.test(info)).length;
        const seen = views.map((view) => view.split('\n').filter((line) => / (myself,)?slave /.test(line)).length);
        if (synced === replicas && seen.every((n) => n === replicas)) break;
        if (i > 400)
          throw new Error(`after 20 s: ${synced} of ${replicas} replicas synced; seen as such: ${seen.join(', ')}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return cluster;
    } catch (e) {
      await cluster.stop();
      throw e;
    }
  }

  /** Runs redis-cli against one node. */
  cli(port: number, ...args: string[]): Promise<string> {
    return cli(['-p', String(port), ...args]);
  }

  /** The port of the master serving `slot` now, as `port` (a live node) sees it. */
  async masterOf(slot: number, port: number): Promise<number> {
    for (const line of (await this.cli(port, 'cluster', 'nodes')).trim().split('\n')) {
      const [, address, flags, , , , , state, ...ranges] = line.split(' ');
      if (!/master/.test(flags!) || /fail/.test(flags!) || state !== 'connected') continue;
      for (const r of ranges) {
        const [from, to = from] = r.split('-').map(Number);
        if (slot >= from! && slot <= to!) return Number(/:(\d+)@/.exec(address!)![1]);
      }
    }
    throw new Error(`no master serves slot ${slot}`);
  }

  /** What went wrong, for a test's error: each live node's view of the cluster and the end of its log. */
  async diagnosis(lines = 15): Promise<string> {
    const parts: string[] = [];
    for (const [i, port] of this.ports.entries()) {
      const child = this.children[i];
      if (!child || child.exitCode !== null || child.signalCode !== null) continue;
      const nodes = await this.cli(port, 'cluster', 'nodes').catch((e: Error) => e.message);
      let log = '';
      try {
        log = fs
          .readFileSync(path.join(this.dir, `redis-${port}.log`), 'utf8')
          .trimEnd()
          .split('\n')
          .slice(-lines)
          .join('\n');
      } catch {
        // no log written
      }
      parts.push(`--- node ${port}: cluster nodes\n${nodes.trim()}\n--- its log (last ${lines} lines)\n${log}`);
    }
    return parts.join('\n');
  }

  /** SIGKILLs one node (a crash) and waits until it is gone. */
  async kill(port: number): Promise<void> {
    const child = this.children[this.ports.indexOf(port)];
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGKILL');
          }),
      ),
    );
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
