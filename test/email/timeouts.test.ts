/**
 * Every SMTP attempt is bounded (SMTP_TIMEOUT_MS = t): a server that greets and then trickles its
 * answer to EHLO one byte at a time (so no socket timeout ever fires) is cut off after 3t, the
 * attempt recorded as a temporary failure and retried later.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { deliveries, startEmailRunner, subscriberWithContacts, testEmailConfig, waitFor } from './support';

const T = 300;

describe('an SMTP server that trickles its replies', () => {
  let db: TestDatabase;
  let server: net.Server;
  const sockets = new Set<net.Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const lifetimes: number[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    server = net.createServer((socket) => {
      const opened = Date.now();
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        lifetimes.push(Date.now() - opened);
        sockets.delete(socket);
      });
      socket.write('220 trickle.example ESMTP\r\n');
      socket.once('data', () => {
        // The EHLO reply, one byte every 50 ms, never finished.
        const timer = setInterval(() => socket.writable && socket.write('2'), 50);
        timers.add(timer);
        socket.on('close', () => clearInterval(timer));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    for (const t of timers) clearInterval(t);
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
    await db?.drop();
  });

  test(`the attempt is abandoned after 3 x SMTP_TIMEOUT_MS, recorded and retried later`, async () => {
    const port = (server.address() as AddressInfo).port;
    const runner = await startEmailRunner(
      db,
      testEmailConfig({ smtpUrl: `smtp://127.0.0.1:${port}`, smtpTimeoutMs: T }),
    );
    try {
      const s = await subscriberWithContacts(db, ['slow@acme.example']);
      await db.owner.query(
        `select api.record_usage_alert($1, 'day', '2026-11-24T00:00:00Z', 'limit_reached', 100, 100)`,
        [s.keyId],
      );
      const [row] = await waitFor(async () => {
        const rows = await deliveries(db, s.subscriberId);
        return rows[0]?.attempts ? rows : undefined;
      }, 10_000);
      expect(row).toMatchObject({
        status: 'pending',
        attempts: 1,
        last_result: `no answer from the SMTP server within ${3 * T} ms`,
      });
      // The job is failed back into the queue right after the attempt was recorded.
      const job = await waitFor(async () => {
        const { rows } = await db.owner.query<{ run_at: Date; updated_at: Date; last_error: string | null }>(
          `select run_at, updated_at, last_error from graphile_worker.jobs where task_identifier = 'email_send'`,
        );
        return rows[0]?.last_error ? { rows } : undefined;
      }, 5000);
      expect(job.rows[0]!.last_error).toMatch(/no answer from the SMTP server/);
      expect(job.rows[0]!.run_at.getTime() - job.rows[0]!.updated_at.getTime()).toBeGreaterThan(2000); // e^1 s later
      await waitFor(() => (lifetimes.length ? true : undefined), 5000);
      // Timed by the SMTP server from its connection callback, which runs after the attempt's own
      // clock started (same process; on a loaded machine up to ~100 ms later: 844 ms was seen): above
      // 2t shows the attempt was not cut at the greeting's or the first reply's timeout.
      expect(lifetimes[0]!).toBeGreaterThanOrEqual(3 * T - 150);
      expect(lifetimes[0]!).toBeLessThan(3 * T + 1000);
    } finally {
      await runner.stop();
    }
  });
});
