/**
 * A throwaway redis-server of our own (never the machine's), for tests that
 * stop Redis mid-run. Listens on a free loopback port (or on a Unix socket only), keeps nothing on disk.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { freePort } from '../../db/tools/ports';
import type { RedisClient } from '../../server/redis';

/** Whether a connection to the loopback `port`, or to the Unix socket at a path, is accepted. */
function answers(target: number | string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = typeof target === 'number' ? net.connect(target, '127.0.0.1') : net.connect(target);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export class OwnRedisServer {
  private child?: ChildProcess;
  /** `port` 0 with `unixSocket`: it listens on that socket only. */
  private constructor(
    readonly port: number,
    readonly unixSocket?: string,
    private readonly extraArgs: readonly string[] = [],
  ) {}

  static async start(): Promise<OwnRedisServer> {
    const server = new OwnRedisServer(await freePort());
    await server.start();
    return server;
  }

  /** One that listens on the Unix socket at `socketPath` and on no TCP port (`extraArgs`: e.g. `--requirepass`). */
  static async startOnSocket(socketPath: string, extraArgs: readonly string[] = []): Promise<OwnRedisServer> {
    const server = new OwnRedisServer(0, socketPath, extraArgs);
    await server.start();
    return server;
  }

  /** Its URL, or its socket's path (ioredis's form, as REDIS_URL takes it). */
  get url(): string {
    return this.unixSocket ?? `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const listen = this.unixSocket
      ? ['--port', '0', '--unixsocket', this.unixSocket, '--unixsocketperm', '700']
      : ['--port', String(this.port), '--bind', '127.0.0.1'];
    const child = spawn('redis-server', [...listen, '--save', '', '--appendonly', 'no', ...this.extraArgs], {
      stdio: 'ignore',
    });
    this.child = child;
    const target = this.unixSocket ?? this.port;
    for (let i = 0; i < 100; i++) {
      if (await answers(target)) return;
      if (child.exitCode !== null) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`redis-server did not start on ${this.unixSocket ?? `port ${this.port}`}`);
  }

  /** Freezes it (SIGSTOP: connections stay open, nothing answers) or thaws it (SIGCONT). */
  freeze(frozen = true): void {
    this.child?.kill(frozen ? 'SIGSTOP' : 'SIGCONT');
  }

  /** Stops it hard (SIGKILL: like a crash) and waits until it is gone. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    this.child = undefined;
  }
}

/** Calls per command since the last CONFIG RESETSTAT (INFO, CONFIG and CLIENT themselves excluded). */
export async function commandCalls(client: RedisClient): Promise<Record<string, number>> {
  const info = (await client.info('commandstats')) as string;
  const calls: Record<string, number> = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!/^(info|config|client)/.test(m[1]!)) calls[m[1]!] = Number(m[2]);
  }
  return calls;
}
