/**
 * A partner app (the real createPartnerApp with the real credentials guard)
 * on a test database, plus fixtures for plans, subscribers and keys.
 */
import { randomBytes } from 'node:crypto';
import type express from 'express';
import pino from 'pino';
import { createPartnerGuard, type PartnerGuard } from '../../server/credentials/guard';
import type { Pool } from '../../server/db/pools';
import { createPartnerApp, type PartnerAppDeps } from '../../server/http/app';
import type { RedisClient } from '../../server/redis';
import type { TestDatabase } from './db';
import { testClock } from './clock';

export const silentLogger = pino({ level: 'silent' });

export interface PartnerInstance {
  app: express.Express;
  guard: PartnerGuard;
  pool: Pool;
  close(): Promise<void>;
}

export async function startPartner(
  db: TestDatabase,
  options: {
    redis?: RedisClient;
    redisPrefix?: string;
    logger?: pino.Logger;
    /** Deprecations and their clock (createPartnerApp's `deprecations`). */
    deprecations?: PartnerAppDeps['deprecations'];
    /** The refused-key shortcut (http/refused-shortcut.ts), as in production; false: every request walks the app. */
    refusedShortcut?: boolean;
    /** Refused keys' 429s held (http/refusal-hold.ts); default none: written at once. */
    refusalHold?: { ms: number; max: number };
    /** The identity cache's settings (createPartnerGuard's `identityCache`). */
    identityCache?: { maxAgeMs?: number };
  } = {},
): Promise<PartnerInstance> {
  const pool = db.partnerPool();
  const logger = options.logger ?? silentLogger;
  const guard = await createPartnerGuard({
    pool,
    databaseUrl: db.url,
    logger,
    redis: options.redis,
    redisPrefix: options.redisPrefix ?? `test:${randomBytes(6).toString('hex')}:`,
    usageFlushMs: 60_000, // tests flush explicitly
    // Not the production 50 ms: on a loaded CI machine a slow reply would open the circuit and the
    // shared-count tests would see in-process counts (the breaker has its own tests).
    redisBudgetMs: 2_000,
    identityCache: options.identityCache,
  });
  const app = createPartnerApp({
    config: { env: 'test', refusalHold: options.refusalHold },
    logger,
    pool,
    guard: guard.handlers,
    knownRefusal: options.refusedShortcut === false ? undefined : guard.knownRefusal,
    clock: testClock,
    deprecations: options.deprecations,
  });
  return { app, guard, pool, close: async () => void (await guard.close()) };
}

export interface IssuedKey {
  subscriberId: string;
  keyId: string;
  apiKey: string;
}

export async function createPlan(
  owner: Pool,
  perMinute: number | null,
  perDay: number | null = null,
  perMonth: number | null = null,
): Promise<string> {
  const name = `plan-${randomBytes(4).toString('hex')}`;
  await owner.query('select admin.create_plan($1, $2, $3, $4)', [name, perMinute, perDay, perMonth]);
  return name;
}

export async function issueKey(
  owner: Pool,
  options: { plan?: string; endsAt?: Date | null; subscriberId?: string } = {},
): Promise<IssuedKey> {
  let subscriberId = options.subscriberId;
  if (!subscriberId) {
    const { rows } = await owner.query<{ id: string }>('select id from admin.create_subscriber($1, $2, $3)', [
      `Partner ${randomBytes(3).toString('hex')}`,
      options.plan ?? 'standard',
      options.endsAt ?? null,
    ]);
    subscriberId = rows[0]!.id;
  }
  const { rows } = await owner.query<{ id: string; api_key: string }>('select id, api_key from admin.issue_key($1)', [
    subscriberId,
  ]);
  return { subscriberId, keyId: rows[0]!.id, apiKey: rows[0]!.api_key };
}

export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

/**
 * Waits until the instance's credentials listener has seen every change committed so far, so that
 * no late notification (of a plan or key just created) empties its identity cache in the middle of
 * a test that counts Redis commands or queries. NOTIFY reaches a listener in commit order: once it
 * has seen this fence, it has seen everything before it.
 */
export async function credentialsSettled(
  db: TestDatabase,
  partner: { guard: Pick<PartnerGuard, 'listener'> },
): Promise<void> {
  const fence = `fence-${randomBytes(6).toString('hex')}`;
  await db.owner.query(`select pg_notify('bar_credentials', $1)`, [fence]);
  const deadline = Date.now() + 10_000;
  while (partner.guard.listener.lastNotification !== fence) {
    if (Date.now() > deadline) throw new Error('the credentials listener did not see the fence within 10 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Waits until the next minute has at least `needMs` left (tests that must stay in one minute window). */
export async function awaitRoomInMinute(needMs: number): Promise<void> {
  // real time: usage days and rate-limit windows follow the server's real clock, not TEST_CLOCK
  const left = 60_000 - (Date.now() % 60_000);
  if (left < needMs) await new Promise((r) => setTimeout(r, left + 50));
}
