-- Usage bookkeeping: the alerts the partner servers' rate limiter records, the
-- per-request usage counts (the path without shared Redis counters), and the
-- operator's time-window reads of both (repeatable file; see db/CONVENTIONS.md).
-- Tables: committed migration 000003; the shared-counter flush: 50-usage.sql.

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
revoke all on function api.record_usage_alert(uuid, text, timestamptz, text, integer, integer), api.record_usage(jsonb)
  from public;
grant execute on function api.record_usage_alert(uuid, text, timestamptz, text, integer, integer), api.record_usage(jsonb)
  to bar_partner;

-- Time-window reads for the operator GraphQL endpoint (PostGraphile's conditions
-- are equality only): stable functions become query fields with the same
-- connection, filters and order.
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
