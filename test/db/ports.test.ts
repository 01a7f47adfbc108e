import fs from 'node:fs';
import net from 'node:net';
import { freePort } from '../../db/tools/ports';

describe('freePort', () => {
  test('gives bindable ports below the ephemeral range, which outgoing connections never take', async () => {
    const range = fs.existsSync('/proc/sys/net/ipv4/ip_local_port_range')
      ? Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
      : 32_768;
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(range);
      const server = net.createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      });
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
