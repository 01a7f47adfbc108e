-- Operator actions: plans, subscribers, keys and operators (repeatable file;
-- see db/CONVENTIONS.md). The admin CLI calls them as the owner; the operator
-- GraphQL endpoint as bar_operator, for which EXECUTE on a volatile function
-- becomes a mutation. create_operator is CLI-only (an operator token cannot
-- mint more operator tokens). Tables and types: committed migration 000003.

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
  admin.create_operator(text) from public, bar_operator;
grant execute on function admin.create_plan(text, integer, integer, integer), admin.create_subscriber(text, text, timestamptz),
  admin.suspend_subscriber(uuid), admin.activate_subscriber(uuid), admin.set_subscriber_plan(uuid, text),
  admin.set_subscription_ends_at(uuid, timestamptz), admin.issue_key(uuid), admin.revoke_key(uuid)
  to bar_operator;

comment on function admin.issue_key(uuid) is 'Issues a new API key for the subscriber. `apiKey` is the key itself: shown once, never stored, never readable again.';
comment on function admin.revoke_key(uuid) is 'Revokes a key (final). Takes effect on the partner API within a second.';
comment on function admin.suspend_subscriber(uuid) is 'Suspends a subscriber: all its keys are refused until it is activated.';
comment on function admin.activate_subscriber(uuid) is 'Re-activates a suspended subscriber.';
comment on function admin.set_subscriber_plan(uuid, text) is 'Moves a subscriber to another plan (by plan name).';
comment on function admin.set_subscription_ends_at(uuid, timestamptz) is 'Sets when the subscription ends (null: no end); moving it renews an expired subscription.';
