--! Previous: sha1:6e966b9c7a9ce5da1c6de918a96ba29eb2958947
--! Hash: sha1:e8a437336cfccdaf8915a8179a0495b2054d45df
--! Message: v1.3: usage history and the request log (daily partitions), deprecated calls and their notices

--! split: 31-deprecations.sql
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

--! split: 40-usage-history-request-log.sql
-- v1.3 (decisions.md "Usage history for partners", "Request log"): hourly usage by key,
-- endpoint and status class, and the request log (4xx/5xx answers, one partition per UTC day).
-- Functions: db/migrations/functions/51-usage-history.sql.

-- Answered authenticated requests per UTC hour, key and endpoint, by status class (a 429 is
-- a 4xx and is also counted in rate_limited). requests is the sum of the four classes.
create table if not exists admin.hourly_usage (
  hour          timestamptz not null,
  subscriber_id uuid   not null references admin.subscribers,
  api_key_id    uuid   not null references admin.api_keys,
  endpoint      text   not null,
  status_2xx    bigint not null default 0 check (status_2xx >= 0),
  status_3xx    bigint not null default 0 check (status_3xx >= 0),
  status_4xx    bigint not null default 0 check (status_4xx >= 0),
  status_5xx    bigint not null default 0 check (status_5xx >= 0),
  rate_limited  bigint not null default 0 check (rate_limited >= 0),
  requests      bigint generated always as (status_2xx + status_3xx + status_4xx + status_5xx) stored,
  primary key (hour, api_key_id, endpoint)
);
create index if not exists hourly_usage_subscriber on admin.hourly_usage (subscriber_id, hour);
create index if not exists hourly_usage_key on admin.hourly_usage (api_key_id, hour);
grant select on admin.hourly_usage to bar_operator;
comment on table admin.hourly_usage is
  'Answered authenticated requests per UTC hour, key and endpoint, by status class (rate_limited: the 429s, part of status4xx). Use aggregates/groupedAggregates for totals.';

-- The absolute hourly counts last flushed from Redis (like admin.daily_usage_shared): the
-- difference to the previous flush is added to admin.hourly_usage.
create table if not exists admin.hourly_usage_shared (
  hour         timestamptz not null,
  api_key_id   uuid   not null references admin.api_keys on delete cascade,
  endpoint     text   not null,
  status_2xx   bigint not null default 0,
  status_3xx   bigint not null default 0,
  status_4xx   bigint not null default 0,
  status_5xx   bigint not null default 0,
  rate_limited bigint not null default 0,
  primary key (hour, api_key_id, endpoint)
);
comment on table admin.hourly_usage_shared is
  'Absolute per-hour usage counts last flushed from Redis (see private.record_shared_hourly_usage); admin.hourly_usage holds the totals.';

-- The request log: one partition per UTC day (request_log.pYYYYMMDD, in a schema of their own: no
-- grants, and not in the schema description, whose text must not change with the date; created ahead and
-- dropped after 30 days by private.request_log_maintain), written in batches by api.record_requests.
create schema if not exists request_log;
revoke all on schema request_log from public;
create sequence if not exists admin.request_log_id_seq;
create table if not exists admin.request_log (
  id            bigint      not null default nextval('admin.request_log_id_seq'),
  created_at    timestamptz not null,
  request_id    text        not null,
  subscriber_id uuid,
  api_key_id    uuid,
  key_prefix    text,
  method        text        not null,
  path          text        not null,
  endpoint      text        not null,
  status        smallint    not null,
  error         text,
  duration_ms   double precision not null,
  client_ip     text,
  primary key (created_at, id)
) partition by range (created_at);
create index if not exists request_log_subscriber on admin.request_log (subscriber_id, created_at desc, id desc);
create index if not exists request_log_key on admin.request_log (api_key_id, created_at desc, id desc);
create index if not exists request_log_request_id on admin.request_log (request_id);
grant select on admin.request_log to bar_operator;
comment on table admin.request_log is E'@foreignKey (subscriber_id) references admin.subscribers (id)\n@foreignKey (api_key_id) references admin.api_keys (id)\nThe request log: answered partner requests that ended in 4xx/5xx (all with REQUEST_LOG=all), 30 days; subscriberId null: a request without a valid key (401). Look an entry up by requestId (condition) or with requestLogEntries.';

-- Entries stored per key (or client address, for 401s) and UTC minute, across instances:
-- at most 1,000, and one 429.
create table if not exists private.request_log_minutes (
  who          text        not null,
  minute       timestamptz not null,
  entries      integer     not null default 0,
  rate_limited integer     not null default 0,
  primary key (who, minute)
);
