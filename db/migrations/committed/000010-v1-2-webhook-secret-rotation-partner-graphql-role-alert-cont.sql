--! Previous: sha1:79da31bc6232f189b41f7e12ce4de6574a9b571f
--! Hash: sha1:6e966b9c7a9ce5da1c6de918a96ba29eb2958947
--! Message: v1.2: webhook secret rotation, partner GraphQL role, alert contacts and e-mail deliveries, stored bar texts

--! split: 10-reliability.sql
-- Issue 22 (reliability round 3).

-- Webhook secret rotation (admin.rotate_webhook_secret, 45-webhooks.sql): the replaced secret keeps
-- signing, beside the new one, until previous_secret_expires_at (24 h), as Standard Webhooks allows.
alter table admin.webhook_endpoints add column if not exists previous_secret_encrypted text
  check (previous_secret_encrypted like 'v1:%');
alter table admin.webhook_endpoints add column if not exists previous_secret_expires_at timestamptz;

--! split: 20-graphql.sql
-- The partner GraphQL endpoint's own role (decisions.md v1.2 "GraphQL endpoint (beta)").
--   bar_partner_graphql  may only EXECUTE the api functions the GraphQL schema serves
--                        (granted in functions/60-graphql.sql, after those functions exist):
--                        no credentials, usage, alerts, webhooks or admin functions.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'bar_partner_graphql') then
    create role bar_partner_graphql nologin;
  end if;
exception when duplicate_object or unique_violation then null; -- a concurrent migration created it
end $$;

-- The migrating user must be able to SET ROLE to it (a superuser needs nothing).
do $$
begin
  execute format('grant bar_partner_graphql to %I', current_user);
exception when others then null;
end $$;

grant usage on schema api to bar_partner_graphql;

--! split: 30-email.sql
-- E-mail notifications of usage alerts (issue 21, decisions.md v1.2 "E-mail
-- notifications of usage alerts", operators.md §5): alert contacts per
-- subscriber and the e-mail delivery log. Deliveries are written by a trigger
-- on admin.usage_alerts (db/migrations/functions/55-email.sql) in the same
-- transaction as the alert and sent by the graphile-worker task email_send
-- (server/email/task.ts). Idempotent: current/ is re-run in development.

create table if not exists admin.alert_contacts (
  subscriber_id  uuid not null references admin.subscribers on delete cascade,
  email          text not null check (email = lower(email) and length(email) between 3 and 254),  -- normalised by admin.set_alert_contacts
  state          text not null default 'active' check (state in ('active', 'unsubscribed', 'bouncing')),
  state_reason   text,                         -- the SMTP reply of a bounce; 'one-click unsubscribe'
  state_changed_at timestamptz,
  created_at     timestamptz not null default now(),
  primary key (subscriber_id, email)
);

create table if not exists admin.email_deliveries (
  id              uuid primary key default gen_random_uuid(),  -- also the Message-ID's left part
  subscriber_id   uuid not null references admin.subscribers on delete cascade,
  api_key_id      uuid not null references admin.api_keys on delete cascade,
  email           text not null,
  bucket          text not null check (bucket in ('minute', 'day', 'month')),
  level           text not null check (level in ('warning', 'high_warning', 'limit_reached')),
  first_alert_id  bigint not null references admin.usage_alerts on delete cascade,
  last_alert_id   bigint not null references admin.usage_alerts on delete cascade,
  alert_count     integer not null default 1 check (alert_count >= 1),  -- alerts this e-mail covers (minute alerts fold)
  first_alert_at  timestamptz not null,
  last_alert_at   timestamptz not null,
  send_after      timestamptz not null,        -- a folded minute e-mail waits an hour after the previous one
  sealed_at       timestamptz,                 -- content fixed when the first attempt starts; later alerts open a new e-mail
  status          text not null default 'pending' check (status in ('pending', 'sent', 'failed')),
  attempts        integer not null default 0,
  last_response_code integer,
  last_result     text,                        -- the SMTP server's last reply, the error, or the outbox file
  created_at      timestamptz not null default now(),
  last_attempt_at timestamptz,
  sent_at         timestamptz
);
-- Exactly once per alert and address (the alert that opened the e-mail; folded alerts are counted in it).
create unique index if not exists email_deliveries_alert_address on admin.email_deliveries (first_alert_id, email);
-- At most one open (unsealed) minute e-mail per key, level and address: the one later alerts fold into.
create unique index if not exists email_deliveries_open_fold on admin.email_deliveries (api_key_id, level, email)
  where bucket = 'minute' and sealed_at is null;
create index if not exists email_deliveries_fold_latest on admin.email_deliveries (api_key_id, level, email, send_after desc)
  where bucket = 'minute';
create index if not exists email_deliveries_created on admin.email_deliveries (created_at desc);
create index if not exists email_deliveries_subscriber on admin.email_deliveries (subscriber_id, created_at desc);
create index if not exists email_deliveries_last_alert on admin.email_deliveries (last_alert_id);

-- Operator GraphQL reads both tables; contacts change only through admin.set_alert_contacts / clear_contact_bounce.
revoke all on admin.alert_contacts, admin.email_deliveries from bar_operator;
grant select on admin.alert_contacts, admin.email_deliveries to bar_operator;
comment on table admin.alert_contacts is 'Alert contacts: up to 5 e-mail addresses per subscriber that receive usage alerts (active, unsubscribed by the recipient, or bouncing until an operator clears it).';
comment on table admin.email_deliveries is 'Usage-alert e-mails: one per alert and address (minute alerts folded: at most one per key, level and address an hour, alert_count says how many it covers); pending, sent, or failed.';

--! split: 50-serving.sql
-- Serving path, round 2 (issue 23): the next-events fragment of each bar's detail
-- JSON, stored as the exact text json_agg produces (functions/10-bar-documents.sql).
-- One row per bar that has events at all; `body` is its next 10 events as of
-- `valid_from`, and stays the answer for every instant in [valid_from, valid_until)
-- (valid_until: the earliest end of the listed events; null when none is listed).
create table if not exists private.bar_next_events (
  bar_id bigint primary key,
  body text not null,
  valid_from timestamptz not null,
  valid_until timestamptz
);
-- the fragments whose first event has ended (private.bar_next_events_refresh_expired)
create index if not exists bar_next_events_valid_until on private.bar_next_events (valid_until) where valid_until is not null;

-- hourly_data of each ISO day of the week (1 = Monday) as the exact text the detail
-- form shows: kept by a BEFORE trigger on occupancy (functions/10-bar-documents.sql).
-- A plain nullable column: adding it does not rewrite the table.
alter table private.occupancy add column if not exists hourly_days text[];
