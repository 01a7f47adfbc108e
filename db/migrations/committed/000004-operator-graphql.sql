--! Previous: sha1:f0021331295e896b184712230a54f1362141c3c9
--! Hash: sha1:2db9208ed96a9efda93d0c8f389d7ff8424bb0ff
--! Message: operator graphql

--! split: 4-operator-graphql.sql
-- The operator GraphQL endpoint (issue 5): what the bar_operator role may see
-- and do. PostGraphile introspects the admin schema as bar_operator and turns
-- these privileges into its schema (PgRBACPlugin): SELECT grants become
-- queries, column grants decide which fields exist, EXECUTE on a volatile
-- function becomes a mutation. Nothing here may grant INSERT/UPDATE/DELETE.
--
-- Runs after 3-credentials.sql (admin tables and the shared admin.* action
-- functions) and is re-runnable (graphile-migrate watch).

-------------------------------------------------------------------------------
-- Read access to the admin tables. Revoke first so this file is the single
-- source of truth for what bar_operator reads, whatever was granted before.
-------------------------------------------------------------------------------

revoke all on admin.plans, admin.subscribers, admin.api_keys, admin.operators,
  admin.usage_alerts, admin.daily_usage from bar_operator;

grant select on admin.plans, admin.subscribers, admin.usage_alerts, admin.daily_usage to bar_operator;

-- Keys without their hash: column-level SELECT, so key_hash is not even a field.
grant select (id, subscriber_id, key_prefix, status, created_at, revoked_at, last_used_at)
  on admin.api_keys to bar_operator;

-- admin.operators (token hashes) is deliberately not granted: operators
-- authenticate through private.operator_by_token_hash below.

comment on table admin.plans is 'Rate-limit plans. A null limit is unlimited.';
comment on table admin.subscribers is 'Partners with a subscription: plan, status and end time.';
comment on table admin.api_keys is 'Partner API keys. The key itself is shown once at issue and never stored; only key_prefix is readable.';
comment on table admin.usage_alerts is 'Usage alerts recorded by the partner API''s rate limiter (80%, 90%, 100% of a bucket).';
comment on table admin.daily_usage is 'Requests per UTC day, key and endpoint. Use aggregates/groupedAggregates for totals.';

-- Time-window reads (PostGraphile's conditions are equality only): stable
-- functions become query fields with the same connection, filters and order.
create or replace function admin.usage_alerts_since(since timestamptz) returns setof admin.usage_alerts
  language sql stable strict
  set search_path = pg_catalog, pg_temp
as $$ select a.* from admin.usage_alerts a where a.created_at >= since $$;

create or replace function admin.daily_usage_since(since date) returns setof admin.daily_usage
  language sql stable strict
  set search_path = pg_catalog, pg_temp
as $$ select u.* from admin.daily_usage u where u.day >= since $$;

revoke all on function admin.usage_alerts_since(timestamptz), admin.daily_usage_since(date) from public;
grant execute on function admin.usage_alerts_since(timestamptz), admin.daily_usage_since(date) to bar_operator;
comment on function admin.usage_alerts_since(timestamptz) is E'@behavior +order +filter\nUsage alerts created at or after `since`.';
comment on function admin.daily_usage_since(date) is E'@behavior +order +filter\nDaily usage rows from UTC day `since` on.';

-------------------------------------------------------------------------------
-- Read-only bar data: views over the private tables, SELECT only.
-------------------------------------------------------------------------------

create or replace view admin.cities as
  select id, name, state, time_zone, latitude, longitude, population
  from private.cities;

create or replace view admin.bars as
  select b.id, b.city_id, b.name, b.address, c.name as city, c.state, b.zip_code,
         b.latitude, b.longitude, b.phone, b.website, b.google_rating,
         b.google_ratings_total, b.price_level, b.description, b.created_at, b.updated_at
  from private.bars b
  join private.cities c on c.id = b.city_id;

revoke all on admin.cities, admin.bars from bar_operator;
grant select on admin.cities, admin.bars to bar_operator;

comment on view admin.cities is E'@primaryKey id\nCities (read-only bar data).';
comment on view admin.bars is E'@primaryKey id\n@foreignKey (city_id) references admin.cities (id)\nBars (read-only bar data).';

-------------------------------------------------------------------------------
-- Operator authentication. Outside the exposed schema on purpose: the GraphQL
-- server calls it before any GraphQL runs; token_hash stays unreadable.
-------------------------------------------------------------------------------

create or replace function private.operator_by_token_hash(token_hash bytea)
  returns table (id uuid, name text)
  language sql stable strict security definer
  set search_path = pg_catalog, pg_temp
as $$
  select o.id, o.name from admin.operators o where o.token_hash = operator_by_token_hash.token_hash
$$;
revoke all on function private.operator_by_token_hash(bytea) from public;
grant execute on function private.operator_by_token_hash(bytea) to bar_operator;

-------------------------------------------------------------------------------
-- Operator actions: the admin.* functions shared with the admin CLI
-- (3-credentials.sql) become mutations through EXECUTE. Operator tokens stay
-- out of band: create_operator is CLI-only (an operator token cannot mint
-- more operator tokens).
-------------------------------------------------------------------------------

grant execute on function admin.issue_key(uuid), admin.revoke_key(uuid),
  admin.suspend_subscriber(uuid), admin.activate_subscriber(uuid),
  admin.set_subscriber_plan(uuid, text), admin.set_subscription_ends_at(uuid, timestamptz),
  admin.create_plan(text, integer, integer, integer), admin.create_subscriber(text, text, timestamptz)
  to bar_operator;
revoke execute on function admin.create_operator(text) from bar_operator;

comment on function admin.issue_key(uuid) is 'Issues a new API key for the subscriber. `apiKey` is the key itself: shown once, never stored, never readable again.';
comment on function admin.revoke_key(uuid) is 'Revokes a key (final). Takes effect on the partner API within a second.';
comment on function admin.suspend_subscriber(uuid) is 'Suspends a subscriber: all its keys are refused until it is activated.';
comment on function admin.activate_subscriber(uuid) is 'Re-activates a suspended subscriber.';
comment on function admin.set_subscriber_plan(uuid, text) is 'Moves a subscriber to another plan (by plan name).';
comment on function admin.set_subscription_ends_at(uuid, timestamptz) is 'Sets when the subscription ends (null: no end); moving it renews an expired subscription.';
