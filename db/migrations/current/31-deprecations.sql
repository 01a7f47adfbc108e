-- Deprecated calls per UTC day, key and deprecation (decisions.md v1.3 "Deprecations and the
-- changelog"): written in batches by the partner servers (server/usage/deprecated-calls.ts through
-- api.record_deprecated_calls), read by GET usage (api.deprecated_calls) and by operators (GraphQL).
-- Idempotent: re-run on every migrate of current/.
create table if not exists admin.deprecated_calls (
  day           date not null,                          -- UTC day
  subscriber_id uuid not null references admin.subscribers,
  api_key_id    uuid not null references admin.api_keys,
  what          text not null,                          -- e.g. 'GET /bars parameter radius'
  calls         bigint not null check (calls >= 0),
  last_call_at  timestamptz not null,
  primary key (day, api_key_id, what)
);
create index if not exists deprecated_calls_subscriber on admin.deprecated_calls (subscriber_id, day);
create index if not exists deprecated_calls_key on admin.deprecated_calls (api_key_id);

revoke all on admin.deprecated_calls from public, bar_operator;
grant select on admin.deprecated_calls to bar_operator;
comment on table admin.deprecated_calls is
  'Calls of deprecated endpoints, parameters and fields per UTC day, key and deprecation (docs/COMPATIBILITY.md).';

-- The e-mail that tells a subscriber's alert contacts that a deprecation affects them: one per
-- subscriber, deprecation and address, queued (graphile-worker job deprecation_email) when the
-- subscriber's calls of it are first recorded (api.record_deprecated_calls); sent by
-- server/email/deprecation-task.ts.
create table if not exists admin.deprecation_notices (
  id            uuid primary key default gen_random_uuid(),  -- also the Message-ID's left part
  subscriber_id uuid not null references admin.subscribers on delete cascade,
  what          text not null,
  email         text not null,
  sunset        date not null,
  replacement   text not null,
  changelog     text not null,
  first_call_at timestamptz not null,
  status        text not null default 'pending' check (status in ('pending', 'sent', 'failed')),
  attempts      integer not null default 0,
  last_result   text,
  created_at    timestamptz not null default now(),
  sent_at       timestamptz,
  unique (subscriber_id, what, email)
);
revoke all on admin.deprecation_notices from public, bar_operator;
grant select on admin.deprecation_notices to bar_operator;
comment on table admin.deprecation_notices is
  'Deprecation e-mails: one per subscriber, deprecation and alert contact, when the subscriber first calls it.';
