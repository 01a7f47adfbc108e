/** Loopback ports for servers started by the tests, the bench and the embedded PostgreSQL. */
import fs from 'node:fs';
import net from 'node:net';

/** Where the kernel's ephemeral range starts (Linux's ip_local_port_range; 32768 elsewhere or unreadable). */
export function ephemeralLow(): number {
  try {
    const low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Whether a loopback port can be bound now. */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** The lowest port handed out (below: well-known and registered services more often listen). */
export const LOWEST_PORT = 10_000;

/**
 * A loopback port that is free now, for a server that must be told its port before it starts.
 *
 * Chosen at random below the ephemeral range: a port from listen(0) lies inside it, and while
 * the server starts (seconds, on a loaded machine) any outgoing connection on the machine may
 * get that port as its local port, so the server then fails with EADDRINUSE. Below the range
 * only another listener can take it.
 */
export async function freePort(): Promise<number> {
  const span = ephemeralLow() - LOWEST_PORT;
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * span);
    if (await portIsFree(port)) return port;
  }
  throw new Error(`no free port found between ${LOWEST_PORT} and ${LOWEST_PORT + span}`);
}
