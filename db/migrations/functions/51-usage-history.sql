-- v1.3: usage history (hourly usage by key, endpoint and status class) and the request log
-- (repeatable file; see db/CONVENTIONS.md; tables in migrations/current/40-usage-history-request-log.sql).

-- ---------------------------------------------------------------- hourly usage

-- The hourly fields of a key-day's Redis usage hash (server/usage/history.ts), flushed with the
-- day's counts by api.record_shared_usage once their version is newer than the stored one:
-- '@HH|C|endpoint' -> count, HH the UTC hour of p_day, C the status class: '2', '3', '4', '5',
-- or 'R' (a 429: a 4xx that is also rate-limited). The counts are absolute; the difference to the
-- previous flush (admin.hourly_usage_shared) is added to admin.hourly_usage.
create or replace function private.record_shared_hourly_usage(p_key uuid, p_day date, p_counts jsonb) returns void
  language sql volatile
  set search_path = pg_catalog, pg_temp
as $$
  with incoming as (
    select (p_day::timestamp + make_interval(hours => m[1]::int)) at time zone 'UTC' as hour, m[3] as endpoint,
           sum(case when m[2] = '2' then c.value::bigint else 0 end) as s2,
           sum(case when m[2] = '3' then c.value::bigint else 0 end) as s3,
           sum(case when m[2] in ('4', 'R') then c.value::bigint else 0 end) as s4,
           sum(case when m[2] = '5' then c.value::bigint else 0 end) as s5,
           sum(case when m[2] = 'R' then c.value::bigint else 0 end) as rl
      from jsonb_each_text(p_counts) c
           cross join lateral regexp_match(c.key, '^@([01][0-9]|2[0-3])\|([2345R])\|(.+)$') m
     where m is not null
     group by 1, 2
  ), merged as (
    select i.*,
           i.s2 - coalesce(s.status_2xx, 0) as d2, i.s3 - coalesce(s.status_3xx, 0) as d3,
           i.s4 - coalesce(s.status_4xx, 0) as d4, i.s5 - coalesce(s.status_5xx, 0) as d5,
           i.rl - coalesce(s.rate_limited, 0) as drl
      from incoming i
      left join admin.hourly_usage_shared s on s.hour = i.hour and s.api_key_id = p_key and s.endpoint = i.endpoint
  ), stored as (
    insert into admin.hourly_usage_shared as s
           (hour, api_key_id, endpoint, status_2xx, status_3xx, status_4xx, status_5xx, rate_limited)
    select m.hour, p_key, m.endpoint, m.s2, m.s3, m.s4, m.s5, m.rl from merged m
     where m.d2 <> 0 or m.d3 <> 0 or m.d4 <> 0 or m.d5 <> 0 or m.drl <> 0 -- only the hours that changed
    on conflict (hour, api_key_id, endpoint) do update
      set status_2xx = excluded.status_2xx, status_3xx = excluded.status_3xx, status_4xx = excluded.status_4xx,
          status_5xx = excluded.status_5xx, rate_limited = excluded.rate_limited
  )
  insert into admin.hourly_usage as u
         (hour, subscriber_id, api_key_id, endpoint, status_2xx, status_3xx, status_4xx, status_5xx, rate_limited)
  select m.hour, k.subscriber_id, k.id, m.endpoint,
         greatest(m.d2, 0), greatest(m.d3, 0), greatest(m.d4, 0), greatest(m.d5, 0), greatest(m.drl, 0)
    from merged m join admin.api_keys k on k.id = p_key
   where m.d2 > 0 or m.d3 > 0 or m.d4 > 0 or m.d5 > 0 or m.drl > 0
  on conflict (hour, api_key_id, endpoint) do update
    set status_2xx = u.status_2xx + excluded.status_2xx, status_3xx = u.status_3xx + excluded.status_3xx,
        status_4xx = u.status_4xx + excluded.status_4xx, status_5xx = u.status_5xx + excluded.status_5xx,
        rate_limited = u.rate_limited + excluded.rate_limited
$$;

-- Hourly counts made in process (no Redis, or while it is unavailable), added as they are:
-- [{"hour": "2026-11-25T14:00:00Z", "key_id": "...", "endpoint": "bars", "status_2xx": 3, "status_3xx": 0,
--   "status_4xx": 1, "status_5xx": 0, "rate_limited": 1}]
create or replace function api.record_hourly_usage(batch jsonb) returns void
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
  insert into admin.hourly_usage as u
         (hour, subscriber_id, api_key_id, endpoint, status_2xx, status_3xx, status_4xx, status_5xx, rate_limited)
  select date_trunc('hour', r.hour, 'UTC'), k.subscriber_id, k.id, r.endpoint, sum(coalesce(r.status_2xx, 0)),
         sum(coalesce(r.status_3xx, 0)), sum(coalesce(r.status_4xx, 0)), sum(coalesce(r.status_5xx, 0)),
         sum(coalesce(r.rate_limited, 0))
    from jsonb_to_recordset(batch) as r(hour timestamptz, key_id uuid, endpoint text, status_2xx bigint,
                                        status_3xx bigint, status_4xx bigint, status_5xx bigint, rate_limited bigint)
    join admin.api_keys k on k.id = r.key_id
   group by 1, 2, 3, 4
  on conflict (hour, api_key_id, endpoint) do update
    set status_2xx = u.status_2xx + excluded.status_2xx, status_3xx = u.status_3xx + excluded.status_3xx,
        status_4xx = u.status_4xx + excluded.status_4xx, status_5xx = u.status_5xx + excluded.status_5xx,
        rate_limited = u.rate_limited + excluded.rate_limited
$$;

-- GET usage/history (decisions.md v1.3 "Usage history for partners"). p_granularity 'hour' or
-- 'day'; p_start/p_end default to the last 24 hours (hour) or 30 days (day) before p_end
-- (default p_now); the range starts at p_start's hour (day) and ends before p_end.
create or replace function api.usage_history(p_subscriber_id uuid, p_granularity text, p_start timestamptz,
                                             p_end timestamptz, p_endpoint text, p_now timestamptz default now())
  returns json
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
  set jit = off
as $$
declare
  v_unit text := coalesce(p_granularity, 'hour');
  v_end timestamptz := coalesce(p_end, p_now);
  v_start timestamptz;
begin
  if v_unit not in ('hour', 'day') then
    raise exception 'granularity must be hour or day' using errcode = 'PT400';
  end if;
  v_start := date_trunc(v_unit, coalesce(p_start, v_end - case v_unit when 'hour' then interval '24 hours'
                                                                       else interval '30 days' end), 'UTC');
  if v_end < coalesce(p_start, v_start) then
    raise exception 'end must not be before start' using errcode = 'PT400';
  end if;
  if v_unit = 'hour' and v_end - v_start > interval '7 days' then
    raise exception 'start: a range of hours is at most 7 days long (use granularity=day for more)' using errcode = 'PT400';
  end if;
  if v_unit = 'day' and v_end - v_start > interval '400 days' then
    raise exception 'start: a range of days is at most 400 days long' using errcode = 'PT400';
  end if;
  return json_build_object(
    'subscriber_id', p_subscriber_id, 'granularity', v_unit,
    'start', private.iso_utc(v_start), 'end', private.iso_utc(v_end),
    'series', coalesce((
      select json_agg(json_build_object(
               'start', private.iso_utc(b.bucket), 'key_prefix', b.key_prefix, 'endpoint', b.endpoint,
               'requests', b.requests,
               'status', json_build_object('2xx', b.s2, '3xx', b.s3, '4xx', b.s4, '5xx', b.s5),
               'rate_limited', b.rl)
             order by b.bucket, b.key_prefix, b.endpoint, b.api_key_id)
        from (select date_trunc(v_unit, u.hour, 'UTC') as bucket, k.key_prefix, u.api_key_id, u.endpoint,
                     sum(u.requests) as requests, sum(u.status_2xx) as s2, sum(u.status_3xx) as s3,
                     sum(u.status_4xx) as s4, sum(u.status_5xx) as s5, sum(u.rate_limited) as rl
                from admin.hourly_usage u
                join admin.api_keys k on k.id = u.api_key_id
               where u.subscriber_id = p_subscriber_id and u.hour >= v_start and u.hour < v_end
                 and (p_endpoint is null or u.endpoint = p_endpoint)
               group by 1, 2, 3, 4
              having sum(u.requests) > 0) b), '[]'::json));
end $$;

revoke all on function api.record_hourly_usage(jsonb),
  api.usage_history(uuid, text, timestamptz, timestamptz, text, timestamptz) from public;
grant execute on function api.record_hourly_usage(jsonb),
  api.usage_history(uuid, text, timestamptz, timestamptz, text, timestamptz) to bar_partner;
revoke all on function private.record_shared_hourly_usage(uuid, date, jsonb) from public;

-- ---------------------------------------------------------------- request log

-- A batch of answered requests (server/usage/request-log.ts), about once a second:
-- [{"request_id", "created_at", "api_key_id" (null: no valid key), "method", "path", "endpoint",
--   "status", "error", "duration_ms", "client_ip"}]. Stores at most 1,000 entries per key (for a
-- request without a key: per client address) and UTC minute, and of the 429s only the first,
-- across every instance (private.request_log_minutes). Subscriber and key prefix come from the
-- key. Returns how many entries were stored.
create or replace function api.record_requests(batch jsonb) returns integer
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_rl_before jsonb;
  v_stored integer;
begin
  -- 429s counted first: the first of each key and minute is kept.
  with b as (
    select coalesce(r.api_key_id::text, 'ip:' || coalesce(r.client_ip, '')) as who,
           date_trunc('minute', r.created_at, 'UTC') as minute, r.status
      from jsonb_to_recordset(batch) as r(created_at timestamptz, api_key_id uuid, client_ip text, status integer)
  ), inc as (
    select b.who, b.minute, count(*) filter (where b.status = 429)::int as n429 from b group by 1, 2
  ), up as (
    insert into private.request_log_minutes as m (who, minute, rate_limited)
    select inc.who, inc.minute, inc.n429 from inc
    on conflict (who, minute) do update set rate_limited = m.rate_limited + excluded.rate_limited
    returning m.who, m.minute, m.rate_limited
  )
  select coalesce(jsonb_object_agg(up.who || '|' || up.minute::text, up.rate_limited - inc.n429), '{}')
    into v_rl_before
    from up join inc on inc.who = up.who and inc.minute = up.minute;

  with b as (
    select r.*, o.ord, coalesce(r.api_key_id::text, 'ip:' || coalesce(r.client_ip, '')) as who,
           date_trunc('minute', r.created_at, 'UTC') as minute
      from jsonb_array_elements(batch) with ordinality as o(value, ord)
           cross join lateral jsonb_to_record(o.value) as r(request_id text, created_at timestamptz, api_key_id uuid,
             method text, path text, endpoint text, status integer, error text, duration_ms double precision,
             client_ip text)
  ), numbered as (
    select b.*, row_number() over (partition by b.who, b.minute, b.status = 429 order by b.created_at, b.ord) as rn429
      from b
  ), cand as (
    select n.* from numbered n
     where n.status <> 429 or (v_rl_before ->> (n.who || '|' || n.minute::text))::int + n.rn429 = 1
  ), inc as (
    select cand.who, cand.minute, count(*)::int as n from cand group by 1, 2
  ), up as (
    insert into private.request_log_minutes as m (who, minute, entries)
    select inc.who, inc.minute, inc.n from inc
    on conflict (who, minute) do update set entries = m.entries + excluded.entries
    returning m.who, m.minute, m.entries
  ), kept as (
    select c.* from (select cand.*, row_number() over (partition by cand.who, cand.minute
                                                        order by cand.created_at, cand.ord) as rn from cand) c
      join up on up.who = c.who and up.minute = c.minute
      join inc on inc.who = c.who and inc.minute = c.minute
     where up.entries - inc.n + c.rn <= 1000
  ), ins as (
    insert into admin.request_log (created_at, request_id, subscriber_id, api_key_id, key_prefix, method, path,
                                   endpoint, status, error, duration_ms, client_ip)
    select kept.created_at, left(kept.request_id, 128), k.subscriber_id, k.id, k.key_prefix, left(kept.method, 16),
           left(kept.path, 2048), left(kept.endpoint, 200), kept.status, left(kept.error, 1000),
           kept.duration_ms, left(kept.client_ip, 64)
      from kept left join admin.api_keys k on k.id = kept.api_key_id
    returning 1
  )
  select count(*)::int into v_stored from ins;
  return v_stored;
end $$;

-- GET usage/requests (decisions.md v1.3 "Request log"): the subscriber's entries, newest first.
-- p_status_min/max: a status ('400' = 400..400) or class ('4xx' = 400..499); p_cursor_at/id: the
-- last entry of the previous page (next_cursor is its opaque form: base64url of "<at>|<id>").
create or replace function api.usage_requests(p_subscriber_id uuid, p_status_min integer, p_status_max integer,
                                              p_endpoint text, p_request_id text, p_since timestamptz,
                                              p_until timestamptz, p_limit integer, p_cursor_at timestamptz,
                                              p_cursor_id bigint)
  returns json
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
  set jit = off
as $$
declare
  v_rows json;
  v_count integer;
  v_last_at timestamptz;
  v_last_id bigint;
begin
  if p_limit is null or p_limit < 1 or p_limit > 200 then
    raise exception 'limit must be an integer from 1 to 200' using errcode = 'PT400';
  end if;
  with page as (
    select l.* from admin.request_log l
     where l.subscriber_id = p_subscriber_id
       and (p_request_id is null or l.request_id = p_request_id)
       and (p_status_min is null or l.status between p_status_min and p_status_max)
       and (p_endpoint is null or l.endpoint = p_endpoint)
       and (p_since is null or l.created_at >= p_since)
       and (p_until is null or l.created_at <= p_until)
       and (p_cursor_at is null or (l.created_at, l.id) < (p_cursor_at, p_cursor_id))
     order by l.created_at desc, l.id desc
     limit p_limit + 1
  ), numbered as (
    select page.*, row_number() over (order by page.created_at desc, page.id desc) as rn from page
  )
  select json_agg(json_build_object(
           'request_id', n.request_id,
           'created_at', to_char(n.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'key_prefix', n.key_prefix, 'method', n.method, 'path', n.path, 'endpoint', n.endpoint,
           'status', n.status, 'error', n.error, 'duration_ms', round(n.duration_ms::numeric, 3),
           'client_ip', n.client_ip) order by n.rn) filter (where n.rn <= p_limit),
         count(*), max(n.created_at) filter (where n.rn = p_limit), max(n.id) filter (where n.rn = p_limit)
    into v_rows, v_count, v_last_at, v_last_id
    from numbered n;
  return json_build_object(
    'requests', coalesce(v_rows, '[]'::json),
    'next_cursor', case when v_count > p_limit then rtrim(translate(encode(convert_to(
        to_char(v_last_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') || '|' || v_last_id,
        'UTF8'), 'base64'), '+/', '-_'), '=') end);
end $$;

revoke all on function api.record_requests(jsonb),
  api.usage_requests(uuid, integer, integer, text, text, timestamptz, timestamptz, integer, timestamptz, bigint)
  from public;
grant execute on function api.record_requests(jsonb),
  api.usage_requests(uuid, integer, integer, text, text, timestamptz, timestamptz, integer, timestamptz, bigint)
  to bar_partner;

-- The request log's partitions (schema request_log, one per UTC day, request_log.pYYYYMMDD):
-- creates those of the days from yesterday to p_ahead days after p_now, drops those of the days
-- before p_now's day minus p_keep_days (retention by whole partitions, never a per-row delete), and
-- forgets the per-minute counts of past minutes. Run every hour by the maintenance cron, at the end
-- of this file, and by the writer when a row finds no partition (api.request_log_partitions).
create or replace function private.request_log_maintain(p_now timestamptz default now(), p_ahead integer default 7,
                                                        p_keep_days integer default 30)
  returns json
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_today date := (p_now at time zone 'UTC')::date;
  v_day date;
  v_name text;
  v_created text[] := '{}'::text[];
  v_dropped text[] := '{}'::text[];
begin
  for v_day in select d::date from generate_series(v_today - 1, v_today + p_ahead, interval '1 day') d loop
    v_name := 'p' || to_char(v_day, 'YYYYMMDD');
    if to_regclass(format('request_log.%I', v_name)) is null then
      execute format('create table request_log.%I partition of admin.request_log for values from (%L) to (%L)',
                     v_name, v_day::timestamp at time zone 'UTC', (v_day + 1)::timestamp at time zone 'UTC');
      v_created := array_append(v_created, v_name);
    end if;
  end loop;
  for v_name in
    select c.relname from pg_inherits i join pg_class c on c.oid = i.inhrelid
     where i.inhparent = 'admin.request_log'::regclass and c.relname ~ '^p[0-9]{8}$'
       and to_date(substr(c.relname, 2), 'YYYYMMDD') < v_today - p_keep_days
     order by c.relname
  loop
    execute format('drop table request_log.%I', v_name);
    v_dropped := array_append(v_dropped, v_name);
  end loop;
  delete from private.request_log_minutes m where m.minute < p_now - interval '10 minutes';
  return json_build_object('created', v_created, 'dropped', v_dropped);
end $$;

-- The partner server's call when a row found no partition (e.g. after days without maintenance).
create or replace function api.request_log_partitions() returns json
  language sql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$ select private.request_log_maintain() $$;

revoke all on function private.request_log_maintain(timestamptz, integer, integer), api.request_log_partitions()
  from public;
grant execute on function api.request_log_partitions() to bar_partner;

-- ---------------------------------------------------------------- operator GraphQL reads

create or replace function admin.hourly_usage_since(since timestamptz) returns setof admin.hourly_usage
  language sql stable strict
  set search_path = pg_catalog, pg_temp
as $$ select u.* from admin.hourly_usage u where u.hour >= date_trunc('hour', since, 'UTC') $$;

create or replace function admin.request_log_since(since timestamptz) returns setof admin.request_log
  language sql stable strict
  set search_path = pg_catalog, pg_temp
as $$ select l.* from admin.request_log l where l.created_at >= since $$;

create or replace function admin.request_log_entries(request_id text) returns setof admin.request_log
  language sql stable strict
  set search_path = pg_catalog, pg_temp
as $$ select l.* from admin.request_log l where l.request_id = request_log_entries.request_id $$;

revoke all on function admin.hourly_usage_since(timestamptz), admin.request_log_since(timestamptz),
  admin.request_log_entries(text) from public;
grant execute on function admin.hourly_usage_since(timestamptz), admin.request_log_since(timestamptz),
  admin.request_log_entries(text) to bar_operator;
comment on function admin.hourly_usage_since(timestamptz) is
  E'@behavior +order +filter\nHourly usage rows from the UTC hour of `since` on (by key, endpoint and status class).';
comment on function admin.request_log_since(timestamptz) is
  E'@behavior +order +filter\nRequest log entries created at or after `since`, across subscribers.';
comment on function admin.request_log_entries(text) is
  E'@behavior +order +filter\nThe request log entries of one X-Request-Id (also the 401s of requests without a valid key).';

-- Partitions exist from the first migration on (idempotent; the cron keeps them ahead).
select private.request_log_maintain();
