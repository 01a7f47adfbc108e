/**
 * A TCP forwarder in front of PostgreSQL that can stop forwarding without
 * closing anything (a frozen server, as SIGSTOP would leave it) and resume:
 * tests freeze it, never the machine's PostgreSQL.
 */
import net from 'node:net';

/** A TCP forwarder that can stop forwarding (both directions) without closing anything, and resume. */
export class FreezableProxy {
  private server?: net.Server;
  private frozen = false;
  private readonly held: (() => void)[] = [];
  private readonly sockets = new Set<net.Socket>();
  port = 0;
  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      const forward = (from: net.Socket, to: net.Socket) =>
        from.on('data', (chunk) => {
          if (this.frozen) this.held.push(() => to.write(chunk));
          else to.write(chunk);
        });
      forward(client, upstream);
      forward(upstream, client);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }

  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const send of this.held.splice(0)) send();
  }

  async stop(): Promise<void> {
    this.thaw();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
