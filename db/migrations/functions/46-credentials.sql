-- Credentials: API-key secrets and their hashes, the change notification the
-- partner servers' identity caches listen to, the key lookup the partner server
-- calls, and the operator token lookup (repeatable file; see db/CONVENTIONS.md).
-- Tables and the admin.issued_key / admin.new_operator types: committed
-- migration 000003; operator read grants: 000004.

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
revoke all on function api.authenticate(bytea) from public;
grant execute on function api.authenticate(bytea) to bar_partner;

-- Operator authentication. Outside the exposed schema on purpose: the GraphQL
-- server calls it before any GraphQL runs; token_hash stays unreadable.
create or replace function private.operator_by_token_hash(token_hash bytea)
  returns table (id uuid, name text)
  language sql stable strict security definer
  set search_path = pg_catalog, pg_temp
as $$
  select o.id, o.name from admin.operators o where o.token_hash = operator_by_token_hash.token_hash
$$;
revoke all on function private.operator_by_token_hash(bytea) from public;
grant execute on function private.operator_by_token_hash(bytea) to bar_operator;
