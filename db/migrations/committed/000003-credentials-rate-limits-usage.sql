--! Previous: sha1:184aac1b6aea08cd0bb0170c56931deaa6b53fe8
--! Hash: sha1:f0021331295e896b184712230a54f1362141c3c9
--! Message: credentials rate limits usage

--! split: 3-credentials.sql
-- Credentials, plans, usage and alerts (admin schema). Owned by the
-- credentials work (issue 4); the operator GraphQL endpoint (issue 5) reads
-- these tables and calls the admin.* action functions defined here, the admin
-- CLI calls the same functions as the owner, and the partner server reaches
-- them only through the api.* functions at the end (role bar_partner).
--
-- Secrets: an API key is 'pbk_' + 43 base64url characters (32 bytes, 244 of
-- them random: two gen_random_uuid()), an operator token 'pbo_' + the same.
-- Both are generated here (so the CLI and GraphQL do exactly the same thing),
-- returned once, and stored only as sha256 of their UTF-8 text.
--
-- Every change that affects a partner's identity (key status, subscriber
-- status/plan/end time, plan limits) sends NOTIFY bar_credentials; each
-- partner server listens and drops its in-memory identity cache.

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
create index subscribers_plan on admin.subscribers (plan_id);

create table admin.api_keys (
  id             uuid primary key default gen_random_uuid(),
  subscriber_id  uuid not null references admin.subscribers,
  key_prefix     text not null,                 -- the visible start of the key, for recognising it
  key_hash       bytea not null unique,         -- sha256 of the whole key; the key itself is never stored
  status         text not null default 'active' check (status in ('active', 'revoked')),
  created_at     timestamptz not null default now(),
  revoked_at     timestamptz,
  last_used_at   timestamptz,                   -- maintained by the usage flush (seconds late), not per request
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
  endpoint       text not null,                 -- route pattern, e.g. 'bars/:id'; '(none)' when no endpoint matched
  requests       bigint not null check (requests >= 0),             -- served (any status but 429)
  rate_limited   bigint not null default 0 check (rate_limited >= 0), -- rejected with 429
  primary key (day, api_key_id, endpoint)
);
create index daily_usage_subscriber on admin.daily_usage (subscriber_id, day);
create index daily_usage_key on admin.daily_usage (api_key_id);

-------------------------------------------------------------------------------
-- Secrets (private: not part of any exposed schema)
-------------------------------------------------------------------------------

create or replace function private.new_secret(prefix text) returns text
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  select prefix || rtrim(translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/', '-_'), '=')
$$;

create or replace function private.secret_hash(secret text) returns bytea
  language sql immutable strict parallel safe
  set search_path = pg_catalog, pg_temp
as $$ select sha256(convert_to(secret, 'UTF8')) $$;

-------------------------------------------------------------------------------
-- Change notification for the partner servers' identity caches
-------------------------------------------------------------------------------

create or replace function private.notify_credentials_changed() returns trigger
  language plpgsql
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform pg_notify('bar_credentials', tg_table_name);
  return null;
end $$;

create or replace trigger plans_changed
  after update of name, per_minute, per_day, per_month or delete on admin.plans
  for each statement execute function private.notify_credentials_changed();
create or replace trigger subscribers_changed
  after update of status, plan_id, subscription_ends_at or delete on admin.subscribers
  for each statement execute function private.notify_credentials_changed();
-- Not on last_used_at: the usage flush updates it every few seconds.
create or replace trigger api_keys_changed
  after insert or update of status, subscriber_id, key_hash or delete on admin.api_keys
  for each statement execute function private.notify_credentials_changed();

-------------------------------------------------------------------------------
-- Operator actions (admin CLI as owner; GraphQL as bar_operator)
-------------------------------------------------------------------------------

create or replace function admin.create_plan(name text, per_minute integer, per_day integer, per_month integer)
  returns admin.plans
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  plan admin.plans;
begin
  if name is null or name !~ '^[a-z0-9][a-z0-9_-]{0,39}$' then
    raise exception 'plan name must be 1-40 characters of a-z, 0-9, _ and -, starting with a letter or digit' using errcode = '22023';
  end if;
  if per_minute <= 0 or per_day <= 0 or per_month <= 0 then
    raise exception 'plan limits must be positive integers (or null for unlimited)' using errcode = '22023';
  end if;
  insert into admin.plans as p (name, per_minute, per_day, per_month)
    values (create_plan.name, create_plan.per_minute, create_plan.per_day, create_plan.per_month)
    returning p.* into plan;
  return plan;
exception when unique_violation then
  raise exception 'plan "%" already exists', create_plan.name using errcode = '23505';
end $$;

create or replace function private.plan_id(plan_name text) returns uuid
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
declare
  found uuid;
begin
  select p.id into found from admin.plans p where p.name = plan_name;
  if found is null then
    raise exception 'unknown plan "%"', plan_name using errcode = 'P0002';
  end if;
  return found;
end $$;

create or replace function admin.create_subscriber(name text, plan_name text default 'standard', ends_at timestamptz default null)
  returns admin.subscribers
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  subscriber admin.subscribers;
begin
  if name is null or btrim(name) = '' then
    raise exception 'subscriber name must not be empty' using errcode = '22023';
  end if;
  insert into admin.subscribers as s (name, plan_id, subscription_ends_at)
    values (btrim(create_subscriber.name), private.plan_id(coalesce(plan_name, 'standard')), ends_at)
    returning s.* into subscriber;
  return subscriber;
end $$;

-- The one place subscriber updates happen: checks the id, bumps updated_at.
create or replace function private.update_subscriber(subscriber_id uuid, new_status text, new_plan_id uuid,
                                                     set_ends_at boolean, new_ends_at timestamptz)
  returns admin.subscribers
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  subscriber admin.subscribers;
begin
  update admin.subscribers s
     set status = coalesce(new_status, s.status),
         plan_id = coalesce(new_plan_id, s.plan_id),
         subscription_ends_at = case when set_ends_at then new_ends_at else s.subscription_ends_at end,
         updated_at = now()
   where s.id = subscriber_id
   returning s.* into subscriber;
  if subscriber.id is null then
    raise exception 'unknown subscriber %', subscriber_id using errcode = 'P0002';
  end if;
  return subscriber;
end $$;

create or replace function admin.suspend_subscriber(id uuid) returns admin.subscribers
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$ select private.update_subscriber(id, 'suspended', null, false, null) $$;

create or replace function admin.activate_subscriber(id uuid) returns admin.subscribers
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$ select private.update_subscriber(id, 'active', null, false, null) $$;

create or replace function admin.set_subscriber_plan(id uuid, plan_name text) returns admin.subscribers
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$ select private.update_subscriber(id, null, private.plan_id(plan_name), false, null) $$;

-- ends_at null: the subscription has no end.
create or replace function admin.set_subscription_ends_at(id uuid, ends_at timestamptz) returns admin.subscribers
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$ select private.update_subscriber(id, null, null, true, ends_at) $$;

-- What issue_key returns: the only time the key itself is ever seen.
do $$
begin
  create type admin.issued_key as (
    id uuid, api_key text, subscriber_id uuid, key_prefix text, status text, created_at timestamptz);
exception when duplicate_object then null;
end $$;

create or replace function admin.issue_key(subscriber_id uuid) returns admin.issued_key
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  secret text := private.new_secret('pbk_');
  issued admin.issued_key;
begin
  if not exists (select 1 from admin.subscribers s where s.id = issue_key.subscriber_id) then
    raise exception 'unknown subscriber %', issue_key.subscriber_id using errcode = 'P0002';
  end if;
  insert into admin.api_keys as k (subscriber_id, key_prefix, key_hash)
    values (issue_key.subscriber_id, left(secret, 12), private.secret_hash(secret))
    returning k.id, secret, k.subscriber_id, k.key_prefix, k.status, k.created_at into issued;
  return issued;
end $$;

-- Final: a revoked key stays revoked (revoking again returns it unchanged).
create or replace function admin.revoke_key(key_id uuid) returns admin.api_keys
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  key admin.api_keys;
begin
  update admin.api_keys k set status = 'revoked', revoked_at = now()
   where k.id = key_id and k.status = 'active'
   returning k.* into key;
  if key.id is null then
    select k.* into key from admin.api_keys k where k.id = key_id;
    if key.id is null then
      raise exception 'unknown key %', key_id using errcode = 'P0002';
    end if;
  end if;
  return key;
end $$;

do $$
begin
  create type admin.new_operator as (id uuid, name text, token text, created_at timestamptz);
exception when duplicate_object then null;
end $$;

create or replace function admin.create_operator(name text) returns admin.new_operator
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  secret text := private.new_secret('pbo_');
  created admin.new_operator;
begin
  if name is null or btrim(name) = '' then
    raise exception 'operator name must not be empty' using errcode = '22023';
  end if;
  insert into admin.operators as o (name, token_hash) values (btrim(create_operator.name), private.secret_hash(secret))
    returning o.id, o.name, secret, o.created_at into created;
  return created;
exception when unique_violation then
  raise exception 'operator "%" already exists', btrim(create_operator.name) using errcode = '23505';
end $$;

revoke all on function admin.create_plan(text, integer, integer, integer), admin.create_subscriber(text, text, timestamptz),
  admin.suspend_subscriber(uuid), admin.activate_subscriber(uuid), admin.set_subscriber_plan(uuid, text),
  admin.set_subscription_ends_at(uuid, timestamptz), admin.issue_key(uuid), admin.revoke_key(uuid),
  admin.create_operator(text) from public;
grant execute on function admin.create_plan(text, integer, integer, integer), admin.create_subscriber(text, text, timestamptz),
  admin.suspend_subscriber(uuid), admin.activate_subscriber(uuid), admin.set_subscriber_plan(uuid, text),
  admin.set_subscription_ends_at(uuid, timestamptz), admin.issue_key(uuid), admin.revoke_key(uuid),
  admin.create_operator(text) to bar_operator;

-------------------------------------------------------------------------------
-- What the partner server calls (role bar_partner)
-------------------------------------------------------------------------------

-- The identity behind a key hash (no row: unknown key). The server caches it
-- and decides revoked → suspended → expired itself (expiry moves with time).
create or replace function api.authenticate(key_hash bytea)
  returns table (key_id uuid, subscriber_id uuid, key_status text, subscriber_status text,
                 subscription_ends_at timestamptz, plan text, per_minute integer, per_day integer, per_month integer)
  language sql stable strict security definer
  set search_path = pg_catalog, pg_temp
as $$
  select k.id, s.id, k.status, s.status, s.subscription_ends_at, p.name, p.per_minute, p.per_day, p.per_month
    from admin.api_keys k
    join admin.subscribers s on s.id = k.subscriber_id
    join admin.plans p on p.id = s.plan_id
   where k.key_hash = authenticate.key_hash
$$;

-- One alert per key, bucket, window and level, however many servers try:
-- true when this call recorded it, false when it already existed.
create or replace function api.record_usage_alert(api_key_id uuid, bucket text, window_start timestamptz,
                                                  level text, used integer, "limit" integer)
  returns boolean
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  with inserted as (
    insert into admin.usage_alerts (api_key_id, subscriber_id, bucket, window_start, level, used, "limit")
    select k.id, k.subscriber_id, record_usage_alert.bucket, record_usage_alert.window_start,
           record_usage_alert.level, record_usage_alert.used, record_usage_alert."limit"
      from admin.api_keys k where k.id = record_usage_alert.api_key_id
    on conflict (api_key_id, bucket, window_start, level) do nothing
    returning 1
  )
  select exists (select 1 from inserted)
$$;

-- A batch of usage counts aggregated by a server:
-- [{"day": "2026-11-22", "key_id": "...", "endpoint": "bars/:id", "requests": 12, "rate_limited": 0,
--   "last_used_at": "2026-11-22T10:00:00.000Z"}, ...]. Adds to the day's counters and moves last_used_at.
create or replace function api.record_usage(batch jsonb) returns void
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  with batch_rows as (
    select (r->>'day')::date as day, (r->>'key_id')::uuid as key_id, r->>'endpoint' as endpoint,
           coalesce((r->>'requests')::bigint, 0) as requests, coalesce((r->>'rate_limited')::bigint, 0) as rate_limited,
           (r->>'last_used_at')::timestamptz as last_used_at
      from jsonb_array_elements(batch) r
  ), counted as (
    insert into admin.daily_usage as u (day, subscriber_id, api_key_id, endpoint, requests, rate_limited)
    select r.day, k.subscriber_id, k.id, r.endpoint, sum(r.requests), sum(r.rate_limited)
      from batch_rows r join admin.api_keys k on k.id = r.key_id
     group by r.day, k.subscriber_id, k.id, r.endpoint
    on conflict (day, api_key_id, endpoint)
      do update set requests = u.requests + excluded.requests, rate_limited = u.rate_limited + excluded.rate_limited
    returning 1
  ), used as (
    select r.key_id, max(r.last_used_at) as at from batch_rows r group by r.key_id
  )
  update admin.api_keys k set last_used_at = greatest(k.last_used_at, used.at)
    from used where k.id = used.key_id and used.at is not null
$$;

revoke all on function api.authenticate(bytea), api.record_usage_alert(uuid, text, timestamptz, text, integer, integer),
  api.record_usage(jsonb) from public;
grant execute on function api.authenticate(bytea), api.record_usage_alert(uuid, text, timestamptz, text, integer, integer),
  api.record_usage(jsonb) to bar_partner;
