--! Previous: sha1:6c4c7b91fa8a6d208158fd60fbf0fece0034d256
--! Hash: sha1:bfcbc6fccc6b0f3b70ebda97bb3b5b1f5c0ea341
--! Message: v1.1: webhooks

--! split: 45-webhooks.sql
-- Webhooks (issue 13, decisions.md "Webhooks"): one endpoint per subscriber
-- and the delivery log. The events are written by triggers
-- (db/migrations/functions/45-webhooks.sql) in the same transaction as their
-- cause and queued with graphile_worker.add_job; graphile-worker deletes
-- finished jobs, so this table is the record operators read.
-- Idempotent: current/ is re-run in development.

create table if not exists admin.webhook_endpoints (
  subscriber_id     uuid primary key references admin.subscribers on delete cascade,
  url               text not null check (url ~ '^https?://'),
  -- 'v1:' + base64(iv | GCM tag | ciphertext) of the whsec_ secret, encrypted in
  -- Node with WEBHOOK_SECRET_KEY (server/webhooks/signing.ts). Never granted to bar_operator.
  secret_encrypted  text not null check (secret_encrypted like 'v1:%'),
  created_at        timestamptz not null default now(),
  updated_at        timestamptz not null default now()
);

create table if not exists admin.webhook_deliveries (
  id                uuid primary key default gen_random_uuid(),  -- the event id (webhook-id), same on every retry
  subscriber_id     uuid not null references admin.subscribers on delete cascade,
  type              text not null check (type in ('usage.warning', 'usage.high_warning', 'usage.limit_reached',
                                                  'key.revoked', 'subscriber.suspended', 'subscriber.activated')),
  payload           jsonb not null,             -- the event's "data"
  url               text not null,              -- the endpoint when the event happened
  status            text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts          integer not null default 0,
  last_status_code  integer,
  last_error        text,
  created_at        timestamptz not null default now(),
  last_attempt_at   timestamptz,
  delivered_at      timestamptz
);
create index if not exists webhook_deliveries_created on admin.webhook_deliveries (created_at desc);
create index if not exists webhook_deliveries_subscriber on admin.webhook_deliveries (subscriber_id, created_at desc);
create index if not exists webhook_deliveries_pending on admin.webhook_deliveries (created_at) where status = 'pending';
