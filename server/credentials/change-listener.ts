/**
 * LISTEN bar_credentials on a dedicated connection (triggers on the admin
 * tables NOTIFY it on every change that affects an identity). Any
 * notification flushes the identity cache. While the connection is down the
 * cache is not trusted (every request reads the database); it reconnects with
 * backoff and flushes again once listening, so a change made during the gap
 * is never missed. A heartbeat notices a connection that died silently.
 */
import pg from 'pg';
import type { Logger } from '../log';
import type { IdentityCache } from './identity-cache';

export const CREDENTIALS_CHANNEL = 'bar_credentials';

export interface ChangeListenerOptions {
  connectionString: string;
  /** Role for the connection (LISTEN needs no privilege). */
  role?: string;
  cache: IdentityCache;
  logger: Logger;
  heartbeatMs?: number;
  applicationName?: string;
}

export class CredentialsChangeListener {
  private client?: pg.Client;
  private closed = false;
  private attempt = 0;
  private retryTimer?: NodeJS.Timeout;
  private heartbeat?: NodeJS.Timeout;
  private listening = false;
  private lastPayload?: string;

  constructor(private readonly options: ChangeListenerOptions) {}

  get isListening(): boolean {
    return this.listening;
  }

  /** The last notification's payload: a listener has seen every change committed before a NOTIFY it has seen (commit order). */
  get lastNotification(): string | undefined {
    return this.lastPayload;
  }

  /** Resolves once listening, or after the first failed attempt (retries continue in the background). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const { connectionString, role, applicationName } = this.options;
    const client = new pg.Client({
      connectionString,
      application_name: applicationName ?? 'partner-api-credentials-listener',
      connectionTimeoutMillis: 5000,
      keepAlive: true,
      ...(role ? { options: `-c role=${role}` } : {}),
    });
    this.client = client;
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    client.on('notification', (msg) => {
      if (msg.channel !== CREDENTIALS_CHANNEL) return;
      this.lastPayload = msg.payload;
      this.options.cache.flush();
    });
    try {
      await client.connect();
      await client.query(`listen ${CREDENTIALS_CHANNEL}`);
    } catch (err) {
      this.lost(client, err as Error);
      return;
    }
    if (this.closed || this.client !== client) return;
    if (this.attempt > 0) this.options.logger.warn('credentials change listener reconnected; identity cache flushed');
    this.attempt = 0;
    this.listening = true;
    this.options.cache.setTrusted(true);
    // One heartbeat at a time: a heartbeat still unanswered when the next is due means the
    // connection is dead or the server frozen (and a second query on a busy client is what pg
    // deprecates: "Calling client.query() when the client is already executing a query").
    let beating = false;
    this.heartbeat = setInterval(() => {
      if (beating) return this.lost(client, new Error('heartbeat unanswered'));
      beating = true;
      client.query('select 1').then(
        () => (beating = false),
        (err: Error) => this.lost(client, err),
      );
    }, this.options.heartbeatMs ?? 5000);
    this.heartbeat.unref();
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client) return; // an old connection's late event
    this.client = undefined;
    this.listening = false;
    this.options.cache.setTrusted(false);
    clearInterval(this.heartbeat);
    client.end().catch(() => undefined);
    if (this.closed) return;
    this.options.logger.error(
      { err: err ? { message: err.message } : undefined },
      'credentials change listener lost its connection; reading identities from the database until it reconnects',
    );
    const delay = Math.min(250 * 2 ** this.attempt++, 5000);
    this.retryTimer = setTimeout(() => void this.connect(), delay);
    this.retryTimer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.heartbeat);
    const client = this.client;
    this.client = undefined;
    this.listening = false;
    this.options.cache.setTrusted(false);
    await client?.end().catch(() => undefined);
  }
}
