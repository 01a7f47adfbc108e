/**
 * A real SMTP server in the test process (smtp-server) that parses what it
 * receives (mailparser), answers RCPT TO for chosen addresses with chosen
 * codes (421 once, 550 always, ...), and the e-mail runner on a test database.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';
import { startWebhookRunner, type WebhookRunner } from '../../server/webhooks/runner';
import { createEmailSender, type EmailSender } from '../../server/email/sender';
import type { EmailConfig } from '../../server/email/settings';
import type { TestDatabase } from '../support/db';

export interface Received {
  to: string;
  raw: string;
  mail: ParsedMail;
}

export class TestSmtp {
  readonly received: Received[] = [];
  /** Per address (lower case): reply codes for its next RCPT TO commands, used up in order. */
  readonly replies = new Map<string, number[]>();
  /** Addresses whose RCPT TO is always refused with 550. */
  readonly refused = new Set<string>();

  private constructor(
    private readonly server: SMTPServer,
    readonly port: number,
  ) {}

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<TestSmtp> {
    const ref: { self?: TestSmtp } = {};
    const server = new SMTPServer({
      disabledCommands: ['AUTH', 'STARTTLS'],
      authOptional: true,
      logger: false,
      onRcptTo(address, _session, callback) {
        const to = address.address.toLowerCase();
        const code = ref.self!.refused.has(to) ? 550 : ref.self!.replies.get(to)?.shift();
        if (code) {
          const err = new Error(code >= 500 ? 'No such user here' : 'Try again later') as Error & {
            responseCode: number;
          };
          err.responseCode = code;
          return callback(err);
        }
        callback();
      },
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          simpleParser(raw).then(
            (mail) => {
              for (const rcpt of session.envelope.rcptTo)
                ref.self!.received.push({ to: rcpt.address.toLowerCase(), raw, mail });
              callback();
            },
            (err: Error) => callback(err),
          );
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    ref.self = new TestSmtp(server, (server.server.address() as AddressInfo).port);
    return ref.self;
  }

  to(address: string): Received[] {
    return this.received.filter((r) => r.to === address.toLowerCase());
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

export const LINK_KEY = Buffer.alloc(32, 7);

export function testEmailConfig(overrides: Partial<EmailConfig> = {}): EmailConfig {
  return {
    smtpUrl: undefined,
    mailFrom: 'Bar Data API <alerts@bars.example>',
    publicBaseUrl: 'https://api.bars.example',
    outboxDir: '/nonexistent',
    linkKey: LINK_KEY,
    missing: [],
    ...overrides,
  };
}

/** The shared graphile-worker runner with the email_send task, polling fast. */
export async function startEmailRunner(
  db: TestDatabase,
  config: EmailConfig,
  retryForMs?: number,
): Promise<{ runner: WebhookRunner; sender: EmailSender; stop(): Promise<void> }> {
  const sender = createEmailSender(config, undefined, retryForMs);
  const runner = await startWebhookRunner({ databaseUrl: db.url, pollInterval: 100, tasks: sender.tasks });
  return {
    runner,
    sender,
    async stop() {
      await runner.stop();
      sender.close();
    },
  };
}

export async function waitFor<T>(check: () => Promise<T | undefined> | T | undefined, ms = 20_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A subscriber with one key and the given alert contacts. */
export async function subscriberWithContacts(db: TestDatabase, emails: string[]) {
  const { rows } = await db.owner.query<{ id: string }>(
    `select id from admin.create_subscriber('Acme ' || gen_random_uuid())`,
  );
  const subscriberId = rows[0]!.id;
  const key = await db.owner.query<{ id: string; api_key: string; key_prefix: string }>(
    'select id, api_key, key_prefix from admin.issue_key($1)',
    [subscriberId],
  );
  if (emails.length) await db.owner.query('select admin.set_alert_contacts($1, $2)', [subscriberId, emails]);
  return { subscriberId, keyId: key.rows[0]!.id, apiKey: key.rows[0]!.api_key, keyPrefix: key.rows[0]!.key_prefix };
}

export interface DeliveryRow {
  id: string;
  email: string;
  bucket: string;
  level: string;
  alert_count: number;
  status: string;
  attempts: number;
  last_response_code: number | null;
  last_result: string | null;
  send_after: Date;
}

export async function deliveries(db: TestDatabase, subscriberId: string): Promise<DeliveryRow[]> {
  const { rows } = await db.owner.query<DeliveryRow>(
    `select id, email, bucket, level, alert_count, status, attempts, last_response_code, last_result, send_after
       from admin.email_deliveries where subscriber_id = $1 order by email, level, send_after`,
    [subscriberId],
  );
  return rows;
}
