/**
 * Issue 32, fault 3: a mail server that accepts the connection and never answers (a tarpit: a
 * net.Server that accepts and never writes), against the real server process.
 *
 * - Each e-mail attempt ends within its bound (SMTP_TIMEOUT_MS: the greeting never comes) and is
 *   recorded as a temporary failure, its job retried later.
 * - Five e-mails due at once (more than the runner's 4 slots) do not delay a webhook delivery
 *   or a maintenance job on the same graphile-worker queue (e-mails run one at a time, queue
 *   'email').
 * - SIGTERM while an e-mail attempt and a webhook request (to a receiver that never answers: the
 *   same tarpit) are running: exit 0 within SHUTDOWN_TIMEOUT_MS; both are abandoned and stay
 *   pending with their jobs.
 * - A second server with a working mail server and receiver: every e-mail arrives exactly once,
 *   the webhook is delivered.
 * Before the change the 5 e-mails took all 4 slots for 10 s (greeting timeout) and SIGTERM waited
 * for the attempts past the deadline (exit 1).
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { emailConfig } from '../../server/email/settings';
import { setWebhookEndpoint } from '../../server/webhooks/endpoints';
import { webhookSettings } from '../../server/webhooks/settings';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startServerProcess, type ServerProcess } from '../support/server-process';
import { TestSmtp, waitFor } from '../email/support';

const SMTP_TIMEOUT_MS = 4000;
const SHUTDOWN_TIMEOUT_MS = 5000;
const open = webhookSettings({ WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true' });

interface TarpitSocket {
  openedAt: number;
  closedAt?: number;
  /** The first bytes the client sent ('' for SMTP: the client waits for the greeting). */
  sent: string;
}

/** Accepts every connection and never writes a byte. */
async function startTarpit() {
  const sockets: TarpitSocket[] = [];
  const live = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    const entry: TarpitSocket = { openedAt: Date.now(), sent: '' };
    sockets.push(entry);
    live.add(socket);
    socket.on('data', (c: Buffer) => (entry.sent += c.toString('latin1').slice(0, 64)));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      entry.closedAt = Date.now();
      live.delete(socket);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    sockets,
    smtp: () => sockets.filter((s) => s.sent === ''),
    http: () => sockets.filter((s) => s.sent.startsWith('POST')),
    close: () => {
      for (const s of live) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('SMTP_TIMEOUT_MS', () => {
  const parse = (raw?: string) => emailConfig(raw === undefined ? {} : { SMTP_TIMEOUT_MS: raw }, false, '/app', 3000);
  test('default 10000; a whole number of milliseconds from 100 to 600000', () => {
    expect(parse().smtpTimeoutMs).toBe(10_000);
    expect(parse('2500').smtpTimeoutMs).toBe(2500);
  });
  test.each(['0', '99', '600001', '1.5', '10s', '-5'])('%j is refused, naming the variable', (raw) => {
    expect(() => parse(raw)).toThrow(
      `SMTP_TIMEOUT_MS must be a whole number of milliseconds from 100 to 600000, got "${raw}"`,
    );
  });
});

describe('a mail server that never answers (tarpit)', () => {
  let db: TestDatabase;
  let tarpit: Awaited<ReturnType<typeof startTarpit>>;
  let smtp: TestSmtp;
  let receiver: http.Server;
  let receiverUrl: string;
  const hooks: { id: string; at: number }[] = [];
  const servers: ServerProcess[] = [];

  const start = (smtpUrl: string) =>
    startServerProcess(
      db.url,
      {
        SMTP_URL: smtpUrl,
        SMTP_TIMEOUT_MS: String(SMTP_TIMEOUT_MS),
        MAIL_FROM: 'Bar Data API <alerts@bars.example>',
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_SECRET_KEY: '',
      },
      { shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS, dropRequestLines: true },
    ).then((s) => (servers.push(s), s));

  beforeAll(async () => {
    db = await createTestDatabase();
    tarpit = await startTarpit();
    smtp = await TestSmtp.start();
    receiver = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        hooks.push({ id: String(req.headers['webhook-id']), at: Date.now() });
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });

  afterAll(async () => {
    for (const s of servers) {
      if (s.child.exitCode !== null || s.child.signalCode !== null) continue;
      s.child.kill('SIGKILL');
      await s.exited;
    }
    await tarpit?.close();
    await smtp?.stop();
    receiver?.closeAllConnections();
    await new Promise((r) => receiver?.close(r));
    await db?.drop();
  }, 30_000);

  const subscriber = async (name: string) => {
    const { rows } = await db.owner.query<{ id: string }>(`select id from admin.create_subscriber($1)`, [name]);
    const sid = rows[0]!.id;
    const key = await db.owner.query<{ id: string }>('select id from admin.issue_key($1)', [sid]);
    return { sid, keyId: key.rows[0]!.id };
  };
  const emailRows = async (sid: string) =>
    (
      await db.owner.query<{ id: string; email: string; status: string; attempts: number; last_result: string | null }>(
        'select id, email, status, attempts, last_result from admin.email_deliveries where subscriber_id = $1 order by email',
        [sid],
      )
    ).rows;
  const webhookRows = async (sid: string) =>
    (
      await db.owner.query<{ id: string; status: string; attempts: number; last_error: string | null }>(
        'select id, status, attempts, last_error from admin.webhook_deliveries where subscriber_id = $1 order by created_at',
        [sid],
      )
    ).rows;
  const jobs = async (task: string) =>
    (
      await db.owner.query<{
        id: string;
        run_at: Date;
        updated_at: Date;
        locked_at: Date | null;
        attempts: number;
        last_error: string | null;
      }>(
        'select id, run_at, updated_at, locked_at, attempts, last_error from graphile_worker.jobs where task_identifier = $1',
        [task],
      )
    ).rows;

  test('attempts bounded and retried; webhooks and maintenance not delayed; SIGTERM exits 0 in time; nothing lost or sent twice', async () => {
    const contacts = ['a', 'b', 'c', 'd', 'e'].map((x) => `${x}@acme.example`);
    const acme = await subscriber('Acme');
    await db.owner.query('select admin.set_alert_contacts($1, $2)', [acme.sid, contacts]);
    await setWebhookEndpoint(db.owner, open, acme.sid, receiverUrl);
    const silent = await subscriber('Silent Receiver');
    await setWebhookEndpoint(db.owner, open, silent.sid, `http://127.0.0.1:${tarpit.port}/hook`);

    const first = await start(`smtp://127.0.0.1:${tarpit.port}`);

    // One alert: five e-mails (more than the runner's 4 slots) and one webhook, all due now; a maintenance job too.
    const alertAt = Date.now();
    // On this new database the runner may be registering its task names at this moment, as the
    // alert's jobs register theirs, in another order: PostgreSQL then ends one of the two with a
    // deadlock (40P01, nothing written). Done again, as a client does.
    for (let attempt = 1; ; attempt++) {
      try {
        await db.owner.query(
          `select api.record_usage_alert($1, 'day', date_trunc('day', now()), 'limit_reached', 100, 100)`,
          [acme.keyId],
        );
        break;
      } catch (e) {
        if ((e as { code?: string }).code !== '40P01' || attempt === 3) throw e;
      }
    }
    await db.owner.query(`select graphile_worker.add_job('bar_next_events_refresh', '{}'::json)`);
    const hook = await waitFor(() => hooks[0], 10_000);
    const webhookDelayMs = hook.at - alertAt;
    const maintenanceDoneMs = await waitFor(
      async () => ((await jobs('bar_next_events_refresh')).length === 0 ? Date.now() - alertAt : undefined),
      10_000,
    );
    // The runner picks new jobs up within about a second; a slot held by an e-mail would free up only after
    // SMTP_TIMEOUT_MS (the greeting timeout).
    expect(webhookDelayMs).toBeLessThan(SMTP_TIMEOUT_MS - 1000);
    expect(maintenanceDoneMs).toBeLessThan(SMTP_TIMEOUT_MS - 1000);
    // (the receiver has the webhook a moment before the server records it delivered)
    await waitFor(async () => ((await webhookRows(acme.sid))[0]?.status === 'delivered' ? true : undefined), 10_000);
    expect((await webhookRows(acme.sid)).map((r) => r.status)).toEqual(['delivered']);

    // Each attempt ends at the bound (no greeting) and is retried later.
    const firstFailure = await waitFor(
      async () => {
        const failed = (await emailRows(acme.sid)).filter((r) => r.attempts > 0);
        return failed.length ? failed : undefined;
      },
      3 * SMTP_TIMEOUT_MS + 2000,
    );
    expect(firstFailure[0]).toMatchObject({ status: 'pending', last_result: expect.stringMatching(/greeting/i) });
    // (the tarpit sees the connection close a moment after the server records the failure: wait for it)
    const closed = await waitFor(() => {
      const seen = tarpit.smtp().filter((s) => s.closedAt);
      return seen.length ? seen : undefined;
    }, 5_000);
    expect(closed.length).toBeGreaterThan(0);
    for (const s of closed) expect(s.closedAt! - s.openedAt).toBeLessThan(SMTP_TIMEOUT_MS + 1000);
    // Failed back into the queue with graphile-worker's backoff (e^attempts s after the failure): retried later.
    // (the job's failure is written just after the delivery row's: wait for it)
    const retried = await waitFor(async () => {
      const failed = (await jobs('email_send')).filter((j) => j.last_error !== null && j.locked_at === null);
      return failed.length ? failed : undefined;
    }, 10_000);
    expect(retried.length).toBeGreaterThan(0);
    for (const j of retried) expect(j.run_at.getTime() - j.updated_at.getTime()).toBeGreaterThan(2000);
    // At most one e-mail attempt at a time (queue 'email'): never more than one SMTP connection open at once.
    // The next attempt starts as the last one gives up, and the tarpit may accept its connection a moment
    // before it sees the old one close: an overlap counts when it is longer than that (two attempts at
    // once would overlap by most of an attempt, SMTP_TIMEOUT_MS).
    const TEARDOWN_MS = 250;
    const smtpSockets = tarpit.smtp();
    const overlapping = smtpSockets.some((a) =>
      smtpSockets.some(
        (b) => a !== b && b.openedAt >= a.openedAt && b.openedAt < (a.closedAt ?? Infinity) - TEARDOWN_MS,
      ),
    );
    expect(overlapping).toBe(false);

    // A webhook to a receiver that never answers, and an e-mail attempt running: SIGTERM.
    await db.owner.query('select admin.suspend_subscriber($1)', [silent.sid]);
    await waitFor(() => (tarpit.http().some((s) => !s.closedAt) ? true : undefined), 10_000);
    await waitFor(() => (tarpit.smtp().some((s) => !s.closedAt) ? true : undefined), 3 * SMTP_TIMEOUT_MS + 3000);
    const inFlight = tarpit.smtp().find((s) => !s.closedAt)!;
    const signalledAt = Date.now();
    first.child.kill('SIGTERM');
    const { code, at } = await first.exited;
    const shutdownMs = at - signalledAt;
    expect(code).toBe(0);
    expect(shutdownMs).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(inFlight.closedAt).toBeDefined(); // the attempt was cut off, not waited for
    expect(first.logs.map((l) => l.msg)).toEqual(
      expect.arrayContaining(['e-mail attempt abandoned by the shutdown; retried later', 'shutdown complete']),
    );
    const afterExit = await emailRows(acme.sid);
    expect(afterExit.map((r) => r.status)).toEqual(Array(5).fill('pending')); // none lost, none marked sent
    expect(afterExit.some((r) => /abandoned/.test(r.last_result ?? ''))).toBe(true);
    expect((await jobs('email_send')).length).toBe(5);
    const silentHooks = await webhookRows(silent.sid);
    expect(silentHooks).toMatchObject([{ status: 'pending', last_error: expect.stringMatching(/abandoned/) }]);
    expect((await jobs('webhook_deliver')).length).toBe(1);

    // Later, with a mail server and a receiver that answer: each e-mail exactly once, the webhook delivered.
    await setWebhookEndpoint(db.owner, open, silent.sid, receiverUrl);
    await db.owner.query(
      `select graphile_worker.reschedule_jobs(array(select id from graphile_worker.jobs), run_at => now())`,
    );
    const second = await start(smtp.url);
    const sent = await waitFor(async () => {
      const rows = await emailRows(acme.sid);
      return rows.every((r) => r.status === 'sent') ? rows : undefined;
    }, 20_000);
    await waitFor(async () => ((await webhookRows(silent.sid))[0]?.status === 'delivered' ? true : undefined), 10_000);
    for (const address of contacts) expect(smtp.to(address)).toHaveLength(1);
    expect(sent.map((r) => r.attempts).every((n) => n >= 1)).toBe(true);
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    process.stdout.write(
      `[email-tarpit] webhook delivered ${webhookDelayMs} ms and maintenance job done ${maintenanceDoneMs} ms after ` +
        `5 e-mails fell due; SMTP attempts against the tarpit lasted ${closed
          .map((s) => s.closedAt! - s.openedAt)
          .join(', ')} ms (SMTP_TIMEOUT_MS ${SMTP_TIMEOUT_MS}); SIGTERM with an e-mail attempt and a webhook ` +
        `in flight: exit ${code} after ${shutdownMs} ms (SHUTDOWN_TIMEOUT_MS ${SHUTDOWN_TIMEOUT_MS}); later: ` +
        `${sent.length} e-mails sent once each (attempts ${sent.map((r) => r.attempts).join(', ')})\n`,
    );
  }, 90_000);
});
