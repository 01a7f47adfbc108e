-- Credentials, plans, usage and alerts (admin schema). Owned by the
-- credentials work (issue 4); the operator GraphQL endpoint (issue 5) reads
-- these tables and calls the admin.* action functions defined here.

create table admin.plans (
  id          uuid primary key default gen_random_uuid(),
  name        text not null unique check (name ~ '^[a-z0-9][a-z0-9_-]{0,39}$'),
  per_minute  integer check (per_minute > 0),   -- null = unlimited
  per_day     integer check (per_day > 0),
  per_month   integer check (per_month > 0),
  created_at  timestamptz not null default now()
);
insert into admin.plans (name, per_minute, per_day, per_month) values ('standard', 600, null, null);

create table admin.subscribers (
  id                    uuid primary key default gen_random_uuid(),
  name                  text not null check (name <> ''),
  plan_id               uuid not null references admin.plans,
  status                text not null default 'active' check (status in ('active', 'suspended')),
  subscription_ends_at  timestamptz,            -- null = no end
  created_at            timestamptz not null default now(),
  updated_at            timestamptz not null default now()
);

create table admin.api_keys (
  id             uuid primary key default gen_random_uuid(),
  subscriber_id  uuid not null references admin.subscribers,
  key_prefix     text not null,                 -- the visible start of the key, for recognising it
  key_hash       bytea not null unique,         -- sha256 of the whole key; the key itself is never stored
  status         text not null default 'active' check (status in ('active', 'revoked')),
  created_at     timestamptz not null default now(),
  revoked_at     timestamptz,
  last_used_at   timestamptz,
  check ((status = 'revoked') = (revoked_at is not null))
);
create index api_keys_subscriber on admin.api_keys (subscriber_id);

create table admin.operators (
  id          uuid primary key default gen_random_uuid(),
  name        text not null unique check (name <> ''),
  token_hash  bytea not null unique,
  created_at  timestamptz not null default now()
);

create table admin.usage_alerts (
  id             bigint generated always as identity primary key,
  api_key_id     uuid not null references admin.api_keys,
  subscriber_id  uuid not null references admin.subscribers,
  bucket         text not null check (bucket in ('minute', 'day', 'month')),
  window_start   timestamptz not null,
  level          text not null check (level in ('warning', 'high_warning', 'limit_reached')),
  used           integer not null,
  "limit"        integer not null,
  created_at     timestamptz not null default now(),
  unique (api_key_id, bucket, window_start, level)  -- once per key, bucket, window and threshold
);
create index usage_alerts_created on admin.usage_alerts (created_at desc);
create index usage_alerts_subscriber on admin.usage_alerts (subscriber_id, created_at desc);

create table admin.daily_usage (
  day            date not null,                 -- UTC day
  subscriber_id  uuid not null references admin.subscribers,
  api_key_id     uuid not null references admin.api_keys,
  endpoint       text not null,
  requests       bigint not null check (requests >= 0),
  primary key (day, api_key_id, endpoint)
);
create index daily_usage_subscriber on admin.daily_usage (subscriber_id, day);
