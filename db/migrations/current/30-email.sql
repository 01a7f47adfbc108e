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
