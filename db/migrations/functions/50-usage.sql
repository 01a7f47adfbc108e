-- Usage counted in Redis by the rate-limit script and flushed here by any instance
-- (repeatable file; see db/CONVENTIONS.md; tables in the usage-shared migration).
--
-- Usage flushed from Redis. batch: [{"day": "2026-11-23", "key_id": "...", "version": 42,
--   "last_used_at": "2026-11-23T07:00:00Z", "counts": {"bars/:id": 12, "(none)": 1, "#429": 3}}]
-- '#429' is the day's rate-limited count (stored under endpoint '(none)', column rate_limited).
-- '@HH|C|endpoint': the hourly counts by status class (private.record_shared_hourly_usage).
-- Returns how many key-days were applied (newer than what was stored).
create or replace function api.record_shared_usage(batch jsonb) returns integer
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  r jsonb;
  v_day date;
  v_key uuid;
  v_version bigint;
  v_stored bigint;
  v_applied integer := 0;
begin
  for r in select value from jsonb_array_elements(batch) loop
    v_day := (r->>'day')::date;
    v_key := (r->>'key_id')::uuid;
    v_version := (r->>'version')::bigint;
    if not exists (select 1 from admin.api_keys k where k.id = v_key) then continue; end if;
    insert into admin.daily_usage_shared_versions (day, api_key_id, version) values (v_day, v_key, 0)
      on conflict do nothing;
    select s.version into v_stored from admin.daily_usage_shared_versions s
      where s.day = v_day and s.api_key_id = v_key for update;
    if v_version <= v_stored then continue; end if;
    update admin.daily_usage_shared_versions s set version = v_version where s.day = v_day and s.api_key_id = v_key;

    with incoming as (
      select case when c.key = '#429' then '(none)' else c.key end as endpoint,
             sum(case when c.key = '#429' then 0 else c.value::bigint end) as requests,
             sum(case when c.key = '#429' then c.value::bigint else 0 end) as rate_limited
        from jsonb_each_text(r->'counts') c
       where c.key not like '@%' -- hourly fields (51-usage-history.sql)
       group by 1
    ), merged as (
      select i.endpoint, i.requests, i.rate_limited,
             i.requests - coalesce(s.requests, 0) as d_requests,
             i.rate_limited - coalesce(s.rate_limited, 0) as d_rate_limited
        from incoming i
        left join admin.daily_usage_shared s on s.day = v_day and s.api_key_id = v_key and s.endpoint = i.endpoint
    ), stored as (
      insert into admin.daily_usage_shared as s (day, api_key_id, endpoint, requests, rate_limited)
      select v_day, v_key, m.endpoint, m.requests, m.rate_limited from merged m
      on conflict (day, api_key_id, endpoint)
        do update set requests = excluded.requests, rate_limited = excluded.rate_limited
    )
    insert into admin.daily_usage as u (day, subscriber_id, api_key_id, endpoint, requests, rate_limited)
    select v_day, k.subscriber_id, k.id, m.endpoint, greatest(m.d_requests, 0), greatest(m.d_rate_limited, 0)
      from merged m join admin.api_keys k on k.id = v_key
     where m.d_requests <> 0 or m.d_rate_limited <> 0
    on conflict (day, api_key_id, endpoint) do update
      set requests = greatest(u.requests + (select m.d_requests from merged m where m.endpoint = u.endpoint), 0),
          rate_limited = greatest(u.rate_limited + (select m.d_rate_limited from merged m where m.endpoint = u.endpoint), 0);

    update admin.api_keys k set last_used_at = greatest(k.last_used_at, (r->>'last_used_at')::timestamptz)
      where k.id = v_key and r->>'last_used_at' is not null;
    perform private.record_shared_hourly_usage(v_key, v_day, r->'counts');
    v_applied := v_applied + 1;
  end loop;
  return v_applied;
end;
$$;

-- The keys whose usage may still sit in Redis (swept by any instance after a crash):
-- active keys, and keys revoked in the last two days.
create or replace function api.usage_key_ids() returns setof uuid
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select k.id from admin.api_keys k
   where k.status = 'active' or k.revoked_at > now() - interval '2 days'
$$;

revoke all on function api.record_shared_usage(jsonb), api.usage_key_ids() from public;
grant execute on function api.record_shared_usage(jsonb), api.usage_key_ids() to bar_partner;

-- GET usage (decisions.md v1.2 "Usage for partners"): the buckets, computed by the
-- server from the plan and the live counters (p_buckets, passed through as is), and
-- the subscriber's last 20 usage alerts, newest first.
create or replace function api.usage(p_subscriber_id uuid, p_plan text, p_buckets json) returns json
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
  set jit = off
as $$
begin
  return json_build_object(
    'subscriber_id', p_subscriber_id,
    'plan', p_plan,
    'buckets', p_buckets,
    'alerts', coalesce((
      select json_agg(json_build_object('level', a.level, 'bucket', a.bucket,
                                        'window_start', private.iso_utc(a.window_start),
                                        'created_at', private.iso_utc(a.created_at))
                      order by a.created_at desc, a.id desc)
        from (select a.* from admin.usage_alerts a
               where a.subscriber_id = p_subscriber_id
               order by a.created_at desc, a.id desc
               limit 20) a), '[]'::json));
end $$;
revoke all on function api.usage(uuid, text, json) from public;
grant execute on function api.usage(uuid, text, json) to bar_partner;
