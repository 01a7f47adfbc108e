--! Previous: sha1:25e97212455a4f9c2c685357cd430c4da624e341
--! Hash: sha1:184aac1b6aea08cd0bb0170c56931deaa6b53fe8
--! Message: partner api endpoints

--! split: 2-partner-api.sql
-- Partner API: one function per endpoint in the `api` schema. Each returns the
-- whole response body as json (NULL = unknown bar or city, the route answers
-- 404), so a request is one round trip and a DBA changes ranking, feeds or
-- pagination with a migration that the running server uses on its next call.
--
-- Conventions:
--   * api.* are SECURITY DEFINER with a pinned search_path, EXECUTE for bar_partner only.
--   * private.* helpers use qualified names and are not SECURITY DEFINER (so they
--     can be inlined); they run inside the api functions as the owner.
--   * Every function that depends on the clock takes `p_now timestamptz default now()`
--     so tests can pin time; the HTTP server never passes it.
--   * Invalid input the TS side cannot judge alone (end before start once the city's
--     time zone is known) raises SQLSTATE 'PT400' with a client-facing message: 400.
--   * Performance (docs/PERFORMANCE.md, bench/): api.* run with jit off; bar objects
--     come from inlined row sources (private.bar_list_row / bar_detail_row); busiest
--     bars, bar totals and post totals/deep pages read trigger-maintained derived
--     tables (private.bar_live, city_bar_counts, city_post_hours). Indexes: 5-performance.sql.

-- Signatures may change while this file is `current`: drop, then create.
drop function if exists api.test_endpoint;
drop function if exists api.bars;
drop function if exists api.bar;
drop function if exists api.bars_by_city;
drop function if exists api.events;
drop function if exists api.posts;
drop function if exists api.feed;
drop function if exists api.search;

-------------------------------------------------------------------------------
-- Value helpers
-------------------------------------------------------------------------------

-- The contract's one timestamp format: 2026-11-22T21:30:00Z.
-- The json and formatting helpers are STABLE, not IMMUTABLE, like the to_char
-- and json_build_object they call: only then does the planner inline them
-- (an IMMUTABLE function over STABLE calls is run as a separate call per row,
-- ~3x slower on a list of a thousand events).
create or replace function private.iso_utc(ts timestamptz) returns text
  language sql stable parallel safe
as $$ select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') $$;

-- The instant a local calendar day starts in a time zone (DST-safe: a day may be 23 or 25 hours).
create or replace function private.local_day_start(p_day date, p_time_zone text) returns timestamptz
  language sql stable parallel safe
as $$ select p_day::timestamp at time zone p_time_zone $$;

-- A date filter value (validated by the server: YYYY-MM-DD or an ISO 8601 date-time)
-- as a half-open bound [lo, hi). A date is a local day of the city; an end date
-- includes its whole day; an end date-time is inclusive. A date-time without an
-- offset is the city's local time.
create or replace function private.date_bound(p_value text, p_time_zone text, p_is_end boolean) returns timestamptz
  language sql stable parallel safe
as $$
  select case
    when p_value is null then null
    when p_value ~ '^\d{4}-\d{2}-\d{2}$' then
      private.local_day_start(p_value::date + case when p_is_end then 1 else 0 end, p_time_zone)
    when p_value ~* '(z|[+-]\d{2}(:?\d{2})?)$' then
      p_value::timestamptz + case when p_is_end then interval '1 microsecond' else interval '0' end
    else
      (p_value::timestamp at time zone p_time_zone) + case when p_is_end then interval '1 microsecond' else interval '0' end
  end
$$;

create or replace function private.pagination_json(p_page integer, p_per_page integer, p_total bigint) returns json
  language sql stable parallel safe
as $$
  select json_build_object(
    'current_page', p_page,
    'total_pages', ceil(p_total::numeric / p_per_page)::bigint,
    'total_count', p_total,
    'per_page', p_per_page)
$$;

-- Bar ids arrive as text; only canonical positive integers can name a bar.
create or replace function private.bar_id_or_null(p_id text) returns bigint
  language sql immutable parallel safe
as $$ select case when p_id ~ '^[1-9][0-9]{0,17}$' then p_id::bigint end $$;

create or replace function private.like_prefix(p_text text) returns text
  language sql immutable parallel safe
as $$ select replace(replace(replace(p_text, '\', '\\'), '%', '\%'), '_', '\_') || '%' $$;

create or replace function private.geojson_point(p_latitude double precision, p_longitude double precision) returns json
  language sql stable parallel safe
as $$ select json_build_object('type', 'Point', 'coordinates', json_build_array(p_longitude, p_latitude)) $$;

create or replace function private.find_city(p_state text, p_city text) returns setof private.cities
  language sql stable parallel safe
as $$
  select c.* from private.cities c
  where upper(c.state) = upper(p_state) and lower(c.name) = lower(p_city)
$$;

-------------------------------------------------------------------------------
-- Derived tables (performance; see docs/PERFORMANCE.md)
-------------------------------------------------------------------------------
-- Kept exact, in the same transaction as the change, by statement-level
-- triggers with transition tables (a bulk load pays one set-based statement,
-- not a trigger call per row). No foreign keys, so TRUNCATE of the bar data
-- works as before; TRUNCATE triggers clear them.
--
--   private.bar_live         one row per bar: city, name, current intensity and
--                            the weekly open minutes, so "the five busiest open
--                            bars of a city" is one index walk.
--   private.city_bar_counts  bars per city: the bars_by_city total.
--   private.city_post_hours  posts per city and UTC hour: totals and deep-page
--                            offsets without counting a big city's posts.

-- Minutes of the week (Monday 00:00 = 0) a slot is open; an after-midnight
-- slot runs into the next day (Sunday into Monday).
create or replace function private.slot_minutes(p_day smallint, p_opens time, p_closes time) returns int4multirange
  language sql immutable parallel safe
as $$
  select case when p_closes > p_opens
    then int4multirange(int4range((p_day - 1) * 1440 + (extract(epoch from p_opens) / 60)::int,
                                  (p_day - 1) * 1440 + (extract(epoch from p_closes) / 60)::int))
    else int4multirange(int4range((p_day - 1) * 1440 + (extract(epoch from p_opens) / 60)::int, p_day * 1440),
                        int4range((p_day % 7) * 1440, (p_day % 7) * 1440 + (extract(epoch from p_closes) / 60)::int))
  end
$$;

-- The minute of the week of a local wall-clock time (seconds dropped: slots are whole minutes).
create or replace function private.minute_of_week(p_local timestamp) returns integer
  language sql immutable parallel safe
as $$ select (extract(isodow from p_local)::int - 1) * 1440 + extract(hour from p_local)::int * 60 + extract(minute from p_local)::int $$;

create table if not exists private.bar_live (
  bar_id             bigint primary key,
  city_id            bigint not null,
  name               text not null,
  current_intensity  smallint,                        -- null: no occupancy row
  open_week          int4multirange not null default '{}',
  hours              json                             -- the bar's `hours` object; null: built live when read
);
alter table private.bar_live add column if not exists hours json;
create index if not exists bar_live_city_busiest on private.bar_live (city_id, current_intensity desc, name, bar_id) include (open_week);

create table if not exists private.city_bar_counts (
  city_id  bigint primary key,
  n        integer not null
);

create table if not exists private.city_post_hours (
  city_id  bigint not null,
  hour     timestamptz not null,                       -- start of a UTC hour
  n        integer not null,
  primary key (city_id, hour)
);

-- Recomputes the weekly open minutes of these bars from their opening hours.
-- The `hours` object from opening_hours rows (all seven keys; slots by opening time).
-- The `hours` object (all seven day keys, slots by opening time, HH:MM) of one
-- bar's slots given as parallel arrays.
create or replace function private.hours_object(p_days smallint[], p_opens time[], p_closes time[]) returns json
  language sql stable parallel safe
as $$
  select json_build_object(
    'monday',    coalesce(json_agg(s.slot order by s.opens) filter (where s.day = 1), '[]'::json),
    'tuesday',   coalesce(json_agg(s.slot order by s.opens) filter (where s.day = 2), '[]'::json),
    'wednesday', coalesce(json_agg(s.slot order by s.opens) filter (where s.day = 3), '[]'::json),
    'thursday',  coalesce(json_agg(s.slot order by s.opens) filter (where s.day = 4), '[]'::json),
    'friday',    coalesce(json_agg(s.slot order by s.opens) filter (where s.day = 5), '[]'::json),
    'saturday',  coalesce(json_agg(s.slot order by s.opens) filter (where s.day = 6), '[]'::json),
    'sunday',    coalesce(json_agg(s.slot order by s.opens) filter (where s.day = 7), '[]'::json))
  from (
    select d as day, o as opens, json_build_object('open', to_char(o, 'HH24:MI'), 'close', to_char(c, 'HH24:MI')) as slot
    from unnest(p_days, p_opens, p_closes) u(d, o, c)
  ) s
$$;

-- Recomputes the weekly open minutes and the `hours` object of these bars from their opening hours.
create or replace function private.bar_live_set_week(p_bar_ids bigint[]) returns void
  language sql volatile
as $$
  update private.bar_live l
  set open_week = coalesce(w.open_week, '{}'),
      hours = coalesce(j.hours, json_build_object('monday', '[]'::json, 'tuesday', '[]'::json, 'wednesday', '[]'::json,
        'thursday', '[]'::json, 'friday', '[]'::json, 'saturday', '[]'::json, 'sunday', '[]'::json))
  from (select distinct u.bar_id from unnest(p_bar_ids) u(bar_id)) t
  left join (
    select h.bar_id, range_agg(r) as open_week
    from private.opening_hours h
    join (select distinct bar_id from unnest(p_bar_ids) v(bar_id)) v on v.bar_id = h.bar_id
    cross join lateral unnest(private.slot_minutes(h.day_of_week, h.opens, h.closes)) r
    group by h.bar_id
  ) w on w.bar_id = t.bar_id
  left join (
    select h.bar_id, private.hours_object(array_agg(h.day_of_week), array_agg(h.opens), array_agg(h.closes)) as hours
    from private.opening_hours h
    join (select distinct bar_id from unnest(p_bar_ids) v(bar_id)) v on v.bar_id = h.bar_id
    group by h.bar_id
  ) j on j.bar_id = t.bar_id
  where l.bar_id = t.bar_id
$$;

create or replace function private.bar_live_sync() returns trigger
  language plpgsql
as $$
begin
  if tg_table_name = 'bars' then
    if tg_op = 'TRUNCATE' then
      truncate private.bar_live, private.city_bar_counts;
      return null;
    end if;
    if tg_op in ('UPDATE', 'DELETE') then
      update private.city_bar_counts k set n = k.n - d.n
      from (select city_id, count(*)::int as n from old_rows group by 1) d where k.city_id = d.city_id;
    end if;
    if tg_op in ('UPDATE', 'INSERT') then
      insert into private.city_bar_counts as k (city_id, n)
      select city_id, count(*)::int from new_rows group by 1
      on conflict (city_id) do update set n = k.n + excluded.n;
    end if;
    if tg_op = 'DELETE' then
      delete from private.bar_live l using old_rows o where l.bar_id = o.id;
    else  -- INSERT, UPDATE
      insert into private.bar_live as l (bar_id, city_id, name)
      select n.id, n.city_id, n.name from new_rows n
      on conflict (bar_id) do update set city_id = excluded.city_id, name = excluded.name
        where (l.city_id, l.name) is distinct from (excluded.city_id, excluded.name);
      if tg_op = 'INSERT' then  -- rows of a bar that existed before (a re-used id)
        update private.bar_live l set current_intensity = o.current_intensity
        from private.occupancy o, new_rows n where o.bar_id = n.id and l.bar_id = n.id;
        if exists (select from private.opening_hours h join new_rows n on n.id = h.bar_id) then
          perform private.bar_live_set_week(array(select id from new_rows));
        end if;
      end if;
    end if;
  elsif tg_table_name = 'occupancy' then
    if tg_op = 'TRUNCATE' then
      update private.bar_live set current_intensity = null where current_intensity is not null;
    elsif tg_op = 'DELETE' then
      update private.bar_live l set current_intensity = null from old_rows o
      where l.bar_id = o.bar_id and not exists (select from private.occupancy x where x.bar_id = o.bar_id);
    else
      if tg_op = 'UPDATE' then  -- a row moved to another bar
        update private.bar_live l set current_intensity = null from old_rows o
        where l.bar_id = o.bar_id and not exists (select from private.occupancy x where x.bar_id = o.bar_id);
      end if;
      update private.bar_live l set current_intensity = n.current_intensity from new_rows n
      where l.bar_id = n.bar_id and l.current_intensity is distinct from n.current_intensity;
    end if;
  else  -- opening_hours
    if tg_op = 'TRUNCATE' then
      update private.bar_live set open_week = '{}' where not isempty(open_week);
    elsif tg_op = 'INSERT' then
      perform private.bar_live_set_week(array(select bar_id from new_rows));
    elsif tg_op = 'DELETE' then
      perform private.bar_live_set_week(array(select bar_id from old_rows));
    else
      perform private.bar_live_set_week(array(select bar_id from new_rows union select bar_id from old_rows));
    end if;
  end if;
  return null;
end
$$;

create or replace function private.city_post_hours_sync() returns trigger
  language plpgsql
as $$
begin
  if tg_op = 'TRUNCATE' then
    truncate private.city_post_hours;
    return null;
  end if;
  if tg_op in ('UPDATE', 'DELETE') then
    update private.city_post_hours h set n = h.n - d.n
    from (select city_id, date_trunc('hour', created_at, 'UTC') as hour, count(*)::int as n from old_rows group by 1, 2) d
    where h.city_id = d.city_id and h.hour = d.hour;
  end if;
  if tg_op in ('UPDATE', 'INSERT') then
    insert into private.city_post_hours as h (city_id, hour, n)
    select city_id, date_trunc('hour', created_at, 'UTC'), count(*)::int from new_rows group by 1, 2
    on conflict (city_id, hour) do update set n = h.n + excluded.n;
  end if;
  return null;
end
$$;

-- Transition tables need one trigger per event.
do $$
declare
  t record;
begin
  for t in select * from (values
    ('bars', 'bar_live_sync'), ('occupancy', 'bar_live_sync'), ('opening_hours', 'bar_live_sync'),
    ('posts', 'city_post_hours_sync')) v(tbl, fn)
  loop
    execute format('create or replace trigger %I after insert on private.%I referencing new table as new_rows for each statement execute function private.%I()', t.fn || '_ins', t.tbl, t.fn);
    execute format('create or replace trigger %I after update on private.%I referencing old table as old_rows new table as new_rows for each statement execute function private.%I()', t.fn || '_upd', t.tbl, t.fn);
    execute format('create or replace trigger %I after delete on private.%I referencing old table as old_rows for each statement execute function private.%I()', t.fn || '_del', t.tbl, t.fn);
    execute format('create or replace trigger %I after truncate on private.%I for each statement execute function private.%I()', t.fn || '_trunc', t.tbl, t.fn);
  end loop;
end $$;

-- Backfill when out of step with the base tables (a fresh database, or data
-- loaded before these triggers existed). Cheap when in step.
do $$
begin
  if (select count(*) from private.bar_live) <> (select count(*) from private.bars) then
    truncate private.bar_live;
    insert into private.bar_live (bar_id, city_id, name, current_intensity)
    select b.id, b.city_id, b.name, o.current_intensity
    from private.bars b left join private.occupancy o on o.bar_id = b.id;
  end if;
  if (select coalesce(sum(n), 0) from private.city_bar_counts) <> (select count(*) from private.bars) then
    truncate private.city_bar_counts;
    insert into private.city_bar_counts (city_id, n) select city_id, count(*) from private.bars group by 1;
  end if;
  if exists (select from private.bar_live where hours is null) then
    perform private.bar_live_set_week(array(select bar_id from private.bar_live where hours is null));
    analyze private.bar_live;
  end if;
  if (select coalesce(sum(n), 0) from private.city_post_hours) <> (select count(*) from private.posts) then
    truncate private.city_post_hours;
    insert into private.city_post_hours (city_id, hour, n)
    select city_id, date_trunc('hour', created_at, 'UTC'), count(*) from private.posts group by 1, 2;
    analyze private.city_post_hours;
  end if;
end $$;

-------------------------------------------------------------------------------
-- Hours and occupancy
-------------------------------------------------------------------------------

-- All seven day keys, slots by opening time, HH:MM local wall-clock times.
create or replace function private.bar_hours_json(p_bar_id bigint) returns json
  language sql stable parallel safe
as $$
  select json_build_object(
    'monday',    coalesce(json_agg(s.slot order by s.opens) filter (where s.day_of_week = 1), '[]'::json),
    'tuesday',   coalesce(json_agg(s.slot order by s.opens) filter (where s.day_of_week = 2), '[]'::json),
    'wednesday', coalesce(json_agg(s.slot order by s.opens) filter (where s.day_of_week = 3), '[]'::json),
    'thursday',  coalesce(json_agg(s.slot order by s.opens) filter (where s.day_of_week = 4), '[]'::json),
    'friday',    coalesce(json_agg(s.slot order by s.opens) filter (where s.day_of_week = 5), '[]'::json),
    'saturday',  coalesce(json_agg(s.slot order by s.opens) filter (where s.day_of_week = 6), '[]'::json),
    'sunday',    coalesce(json_agg(s.slot order by s.opens) filter (where s.day_of_week = 7), '[]'::json))
  from (
    select h.day_of_week, h.opens,
           json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) as slot
    from private.opening_hours h
    where h.bar_id = p_bar_id
  ) s
$$;

-- Open at a local wall-clock time: a slot of today that has started and not
-- closed (an after-midnight slot runs to the end of the day), or yesterday's
-- after-midnight slot that has not closed yet.
create or replace function private.bar_is_open(p_bar_id bigint, p_local timestamp) returns boolean
  language sql stable parallel safe
as $$
  select exists (
    select 1 from private.opening_hours h
    where h.bar_id = p_bar_id
      and (
        (h.day_of_week = extract(isodow from p_local)::int
          and h.opens <= p_local::time
          and (h.closes > p_local::time or h.closes < h.opens))
        or
        (h.day_of_week = extract(isodow from p_local - interval '1 day')::int
          and h.closes < h.opens
          and p_local::time < h.closes)))
$$;

create or replace function private.occupancy_status(p_intensity integer, p_open boolean) returns text
  language sql immutable parallel safe
as $$
  select case
    when not p_open then 'closed'
    when p_intensity is null then null
    when p_intensity < 25 then 'quiet'
    when p_intensity < 50 then 'moderate'
    when p_intensity < 75 then 'busy'
    else 'very_busy'
  end
$$;

-- {current_intensity, status[, hourly_data]} at a local time. A closed bar is
-- intensity 0; an open bar without occupancy data has null intensity and status.
create or replace function private.bar_occupancy_json(p_bar_id bigint, p_local timestamp, p_hourly boolean) returns json
  language sql stable parallel safe
as $$
  select case when p_hourly
    then json_build_object('current_intensity', s.intensity, 'status', s.status, 'hourly_data', s.hourly)
    else json_build_object('current_intensity', s.intensity, 'status', s.status)
  end
  from (
    select
      case when o.open then (o.occ).current_intensity::int else 0 end as intensity,
      private.occupancy_status((o.occ).current_intensity, o.open) as status,
      case when p_hourly then (
        select json_agg(json_build_object(
                 'hour', h,
                 'intensity', (o.occ).weekly_profile[(extract(isodow from p_local)::int - 1) * 24 + h + 1]::int)
               order by h)
        from generate_series(0, 23) h)
      end as hourly
    from (
      select private.bar_is_open(p_bar_id, p_local) as open,
             (select occ from private.occupancy occ where occ.bar_id = p_bar_id) as occ
    ) o
  ) s
$$;

-------------------------------------------------------------------------------
-- Object shapes (every object of a kind has the same keys everywhere)
-------------------------------------------------------------------------------

create or replace function private.category_json(c private.categories) returns json
  language sql stable parallel safe
as $$ select json_build_object('name', c.name, 'slug', c.slug) $$;

create or replace function private.bar_categories_json(p_bar_id bigint) returns json
  language sql stable parallel safe
as $$
  select coalesce(json_agg(private.category_json(c) order by bc.is_primary desc, bc.position, c.name, c.id), '[]'::json)
  from private.bar_categories bc join private.categories c on c.id = bc.category_id
  where bc.bar_id = p_bar_id
$$;

create or replace function private.bar_primary_category_json(p_bar_id bigint) returns json
  language sql stable parallel safe
as $$
  select private.category_json(c)
  from private.bar_categories bc join private.categories c on c.id = bc.category_id
  where bc.bar_id = p_bar_id and bc.is_primary
$$;

create or replace function private.bar_photos_json(p_bar_id bigint) returns json
  language sql stable parallel safe
as $$
  select coalesce(json_agg(json_build_object('url', p.url) order by p.position, p.id), '[]'::json)
  from private.photos p where p.bar_id = p_bar_id
$$;

-- Event, short form (bar detail).
create or replace function private.event_short_json(e private.events) returns json
  language sql stable parallel safe
as $$
  select json_build_object(
    'id', e.id::text, 'name', e.title, 'description', e.description,
    'start_at', private.iso_utc(e.start_at), 'end_at', private.iso_utc(e.end_at))
$$;

-- Event, short form with its bar (bars_by_city events_today, feed events).
create or replace function private.event_with_bar_json(e private.events, b private.bars) returns json
  language sql stable parallel safe
as $$
  select json_build_object(
    'id', e.id::text, 'name', e.title, 'description', e.description,
    'start_at', private.iso_utc(e.start_at), 'end_at', private.iso_utc(e.end_at),
    'bar', json_build_object('id', b.id::text, 'name', b.name))
$$;

-- BarSummary (embedded in events and posts).
create or replace function private.bar_summary_json(b private.bars, c private.cities) returns json
  language sql stable parallel safe
as $$
  select json_build_object(
    'id', b.id::text, 'name', b.name, 'address', b.address, 'city', c.name, 'state', c.state,
    'latitude', b.latitude, 'longitude', b.longitude, 'profile_picture_url', b.profile_picture_url)
$$;

create or replace function private.city_json(c private.cities) returns json
  language sql stable parallel safe
as $$ select json_build_object('name', c.name, 'state', c.state) $$;

-------------------------------------------------------------------------------
-- Bar objects as row sources (performance)
-------------------------------------------------------------------------------
-- Set-returning SQL functions are inlined into the caller's query (LATERAL),
-- so each field's sub-select runs inside one plan rather than as a separate
-- SQL-function call per bar and field. Open now comes from bar_live.open_week.

create or replace function private.bar_list_row(p_bar_id bigint, p_now timestamptz) returns table (body json)
  language sql stable
as $$
  select json_build_object(
    'id', b.id::text,
    'name', b.name,
    'address', b.address,
    'city', c.name,
    'state', c.state,
    'zip_code', b.zip_code,
    'latitude', b.latitude,
    'longitude', b.longitude,
    'phone', b.phone,
    'website', b.website,
    'google_rating', b.google_rating,
    'google_ratings_total', b.google_ratings_total,
    'primary_category', (
      select json_build_object('name', k.name, 'slug', k.slug)
      from private.bar_categories bc join private.categories k on k.id = bc.category_id
      where bc.bar_id = b.id and bc.is_primary),
    'categories', (
      select coalesce(json_agg(json_build_object('name', k.name, 'slug', k.slug) order by bc.is_primary desc, bc.position, k.name, k.id), '[]'::json)
      from private.bar_categories bc join private.categories k on k.id = bc.category_id
      where bc.bar_id = b.id),
    'hours', coalesce(l.hours, (
      select json_build_object(
        'monday',    coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 1), '[]'::json),
        'tuesday',   coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 2), '[]'::json),
        'wednesday', coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 3), '[]'::json),
        'thursday',  coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 4), '[]'::json),
        'friday',    coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 5), '[]'::json),
        'saturday',  coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 6), '[]'::json),
        'sunday',    coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 7), '[]'::json))
      from private.opening_hours h where h.bar_id = b.id)),
    'profile_picture_url', b.profile_picture_url,
    'photos', (
      select coalesce(json_agg(json_build_object('url', p.url) order by p.position, p.id), '[]'::json)
      from private.photos p where p.bar_id = b.id),
    'occupancy', json_build_object(
      'current_intensity', case when x.open then o.current_intensity::int else 0 end,
      'status', private.occupancy_status(o.current_intensity, x.open)))
  from private.bars b
  join private.cities c on c.id = b.city_id
  left join private.bar_live l on l.bar_id = b.id
  left join private.occupancy o on o.bar_id = b.id
  cross join lateral (
    select coalesce(l.open_week @> private.minute_of_week(p_now at time zone c.time_zone), false) as open
  ) x
  where b.id = p_bar_id
$$;

-- The detail form: the list form's keys in the same order (json, not jsonb, keeps
-- monday..sunday and key order), plus description, price_level, hourly occupancy
-- and the next 10 upcoming events.
create or replace function private.bar_detail_row(p_bar_id bigint, p_now timestamptz) returns table (body json)
  language sql stable
as $$
  select json_build_object(
    'id', b.id::text,
    'name', b.name,
    'address', b.address,
    'city', c.name,
    'state', c.state,
    'zip_code', b.zip_code,
    'latitude', b.latitude,
    'longitude', b.longitude,
    'phone', b.phone,
    'website', b.website,
    'google_rating', b.google_rating,
    'google_ratings_total', b.google_ratings_total,
    'primary_category', (
      select json_build_object('name', k.name, 'slug', k.slug)
      from private.bar_categories bc join private.categories k on k.id = bc.category_id
      where bc.bar_id = b.id and bc.is_primary),
    'categories', (
      select coalesce(json_agg(json_build_object('name', k.name, 'slug', k.slug) order by bc.is_primary desc, bc.position, k.name, k.id), '[]'::json)
      from private.bar_categories bc join private.categories k on k.id = bc.category_id
      where bc.bar_id = b.id),
    'hours', coalesce(l.hours, (
      select json_build_object(
        'monday',    coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 1), '[]'::json),
        'tuesday',   coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 2), '[]'::json),
        'wednesday', coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 3), '[]'::json),
        'thursday',  coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 4), '[]'::json),
        'friday',    coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 5), '[]'::json),
        'saturday',  coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 6), '[]'::json),
        'sunday',    coalesce(json_agg(json_build_object('open', to_char(h.opens, 'HH24:MI'), 'close', to_char(h.closes, 'HH24:MI')) order by h.opens) filter (where h.day_of_week = 7), '[]'::json))
      from private.opening_hours h where h.bar_id = b.id)),
    'profile_picture_url', b.profile_picture_url,
    'photos', (
      select coalesce(json_agg(json_build_object('url', p.url) order by p.position, p.id), '[]'::json)
      from private.photos p where p.bar_id = b.id),
    'occupancy', json_build_object(
      'current_intensity', case when x.open then o.current_intensity::int else 0 end,
      'status', private.occupancy_status(o.current_intensity, x.open),
      'hourly_data', (
        select json_agg(json_build_object(
                 'hour', hr,
                 'intensity', o.weekly_profile[(extract(isodow from x.local)::int - 1) * 24 + hr + 1]::int)
               order by hr)
        from generate_series(0, 23) hr)),
    'description', b.description,
    'price_level', b.price_level,
    'events', (
      select coalesce(json_agg(private.event_short_json(e) order by e.start_at, e.id), '[]'::json)
      from (
        select e.* from private.events e
        where e.bar_id = b.id and e.end_at > p_now
        order by e.start_at, e.id
        limit 10
      ) e))
  from private.bars b
  join private.cities c on c.id = b.city_id
  left join private.bar_live l on l.bar_id = b.id
  left join private.occupancy o on o.bar_id = b.id
  cross join lateral (
    select p_now at time zone c.time_zone as local,
           coalesce(l.open_week @> private.minute_of_week(p_now at time zone c.time_zone), false) as open
  ) x
  where b.id = p_bar_id
$$;

-------------------------------------------------------------------------------
-- Post totals and deep pages from city_post_hours (performance)
-------------------------------------------------------------------------------
-- The window [lo, hi) splits into a partial first hour, whole UTC hours and a
-- partial last hour; whole hours come from city_post_hours, partial ones are
-- counted exactly (at most an hour of one city's posts each).
create or replace function private.post_window_parts(p_city_id bigint, p_lo timestamptz, p_hi timestamptz)
  returns table (part_lo timestamptz, part_hi timestamptz, n bigint)
  language sql stable
as $$
  with b as (
    select case when date_trunc('hour', p_lo, 'UTC') = p_lo then p_lo
                else date_trunc('hour', p_lo, 'UTC') + interval '1 hour' end as ceil_lo,
           date_trunc('hour', p_hi, 'UTC') as floor_hi
  )
  select greatest(b.floor_hi, b.ceil_lo), p_hi,
         (select count(*) from private.posts p
          where p.city_id = p_city_id and p.created_at >= greatest(b.floor_hi, b.ceil_lo) and p.created_at < p_hi)
  from b where greatest(b.floor_hi, b.ceil_lo) < p_hi
  union all
  select h.hour, h.hour + interval '1 hour', h.n::bigint
  from b, private.city_post_hours h
  where h.city_id = p_city_id and h.hour >= b.ceil_lo and h.hour < b.floor_hi and h.n > 0
  union all
  select p_lo, least(p_hi, b.ceil_lo),
         (select count(*) from private.posts p
          where p.city_id = p_city_id and p.created_at >= p_lo and p.created_at < least(p_hi, b.ceil_lo))
  from b where p_lo < least(p_hi, b.ceil_lo)
$$;

create or replace function private.post_count(p_city_id bigint, p_lo timestamptz, p_hi timestamptz) returns bigint
  language sql stable
as $$ select coalesce(sum(n), 0)::bigint from private.post_window_parts(p_city_id, p_lo, p_hi) $$;

-- Where the newest-first page at p_offset starts: the posts of [p_lo, part_hi)
-- after skipping `skip` of them. No row: the offset is past the end.
create or replace function private.post_page_start(p_city_id bigint, p_lo timestamptz, p_hi timestamptz, p_offset bigint)
  returns table (part_hi timestamptz, skip bigint)
  language sql stable
as $$
  select c.part_hi, p_offset - c.before
  from (
    select w.part_hi, w.n, coalesce(sum(w.n) over (order by w.part_lo desc rows between unbounded preceding and 1 preceding), 0) as before
    from private.post_window_parts(p_city_id, p_lo, p_hi) w
    where w.n > 0
  ) c
  where c.before <= p_offset and p_offset < c.before + c.n
$$;

-------------------------------------------------------------------------------
-- 1. GET test_endpoint
-------------------------------------------------------------------------------

create function api.test_endpoint(p_subscriber_id text, p_plan text, p_now timestamptz default now())
  returns json
  language sql stable security definer
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
  select json_build_object(
    'message', 'API key is valid',
    'timestamp', private.iso_utc(p_now),
    'subscriber_id', p_subscriber_id,
    'plan', p_plan)
$$;

-------------------------------------------------------------------------------
-- 2. GET bars
-------------------------------------------------------------------------------

-- Filters combine (AND). Order: nearest first when latitude/longitude are given,
-- else the order of `ids`, else name then id. The query is assembled from fixed
-- fragments (values are bound with USING) so each filter combination gets its
-- own plan: KNN over the geo index, the location box index, or the name index.
create function api.bars(
  p_ids text[] default null,
  p_category text default null,
  p_latitude double precision default null,
  p_longitude double precision default null,
  p_radius double precision default null,            -- miles
  p_corner1_latitude double precision default null,
  p_corner1_longitude double precision default null,
  p_corner2_latitude double precision default null,
  p_corner2_longitude double precision default null,
  p_limit integer default 100,
  p_now timestamptz default now()
) returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
declare
  v_ids bigint[];
  v_center earth;
  v_radius_m double precision := p_radius * 1609.344;
  v_box box;
  v_where text[] := array['true'];
  v_order text;
  v_bars json;
  v_sort text;
  v_bitmap text;
  v_jit text;
  v_nearest bigint[];
  v_probe integer;
  v_category_id bigint;
begin
  if p_ids is not null then
    select coalesce(array_agg(private.bar_id_or_null(i) order by n) filter (where private.bar_id_or_null(i) is not null), '{}')
      into v_ids from unnest(p_ids) with ordinality u(i, n);
    v_where := v_where || 'b.id = any($1)'::text;
  end if;
  if p_category is not null then
    -- the slug resolved once: each candidate bar is then one probe of bar_categories' primary key
    -- (an unknown slug leaves v_category_id null, which matches nothing)
    select k.id into v_category_id from private.categories k where k.slug = p_category;
    v_where := v_where || 'exists (select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = $2)'::text;
  end if;
  if p_latitude is not null and p_longitude is not null then
    v_center := private.earth_point(p_latitude, p_longitude);
    if p_radius is not null then
      v_where := v_where || array['earth_box($3, $4) @> b.geo', 'earth_distance($3, b.geo) <= $4'];
    end if;
  end if;
  if p_corner1_latitude is not null then
    v_box := box(point(p_corner1_longitude, p_corner1_latitude), point(p_corner2_longitude, p_corner2_latitude));
    -- Name order over a box: collecting the box from bars_location and sorting
    -- costs ~k (bars in the box); walking bars_name_id with the box as a filter
    -- costs ~limit * N / k. The planner's fixed box selectivity cannot tell them
    -- apart, so probe for k >= sqrt(limit * N) and then make the box test
    -- non-indexable (IS TRUE) to get the walk.
    v_probe := greatest(1000, sqrt(p_limit::float8 * greatest((select c.reltuples from pg_class c where c.oid = 'private.bars'::regclass), 1))::int);
    if v_center is null and v_ids is null and (
      select count(*) from (select 1 from private.bars b where b.location <@ v_box limit v_probe) x) = v_probe then
      v_where := v_where || '(b.location <@ $5) is true'::text;
    else
      v_where := v_where || 'b.location <@ $5'::text;
    end if;
  end if;
  if v_center is not null then
    -- Nearest first: a KNN walk of bars_geo (ORDER BY the distance operator alone;
    -- "b.id" as a second key would turn it into a sort of every bar in range),
    -- plus any bar tied at the distance of the last one, then ordered by
    -- distance, id. The planner misjudges the box (a fixed selectivity) and
    -- would rather sort, so sorting and bitmap scans are off for this statement.
    v_sort := current_setting('enable_sort');
    v_bitmap := current_setting('enable_bitmapscan');
    v_jit := current_setting('jit');
    perform set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true);
    -- disabled plan types inflate the cost estimate past jit_above_cost: a JIT compile costs ~1 s
    perform set_config('jit', 'off', true);
    execute format($q$
      with knn as (
        select b.id, b.geo <-> $3 as d from private.bars b where %1$s order by b.geo <-> $3 limit $6
      ),
      edge as (select max(d) as d, count(*) as n from knn),
      ties as (
        select b.id, b.geo <-> $3 as d from private.bars b, edge
        where edge.n = $6 and %1$s and earth_box($3, sec_to_gc(edge.d) + 1) @> b.geo and (b.geo <-> $3) = edge.d
      )
      select array(select u.id from (select * from knn union select * from ties) u order by u.d, u.id limit $6)
    $q$, array_to_string(v_where, ' and '))
    into v_nearest
    using v_ids, v_category_id, v_center, v_radius_m, v_box, p_limit, p_now;
    perform set_config('enable_sort', v_sort, true), set_config('enable_bitmapscan', v_bitmap, true),
            set_config('jit', v_jit, true);
    select coalesce(json_agg(r.body order by u.n), '[]'::json) into v_bars
    from unnest(v_nearest) with ordinality u(id, n)
    cross join lateral private.bar_list_row(u.id, p_now) r;
    return json_build_object('bars', v_bars);
  end if;

  v_order := case
    when v_ids is not null then 'array_position($1, b.id)'
    else 'b.name, b.id'
  end;

  execute format($q$
    select coalesce(json_agg(r.body order by s.n), '[]'::json)
    from (
      select b.id, row_number() over () as n
      from (select b.id from private.bars b where %s order by %s limit $6) b
    ) s
    cross join lateral private.bar_list_row(s.id, $7) r
  $q$, array_to_string(v_where, ' and '), v_order)
  into v_bars
  using v_ids, v_category_id, v_center, v_radius_m, v_box, p_limit, p_now;

  return json_build_object('bars', v_bars);
end
$$;

-------------------------------------------------------------------------------
-- 3. GET bars/:id
-------------------------------------------------------------------------------

create function api.bar(p_id text, p_now timestamptz default now())
  returns json
  language sql stable security definer
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
  select json_build_object('bar', r.body)
  from private.bar_detail_row(private.bar_id_or_null(p_id), p_now) r
$$;

-------------------------------------------------------------------------------
-- 4. GET bars_by_city/:state/:city
-------------------------------------------------------------------------------

-- group_slug narrows the bars, events_today and busiest_bars alike. events_today
-- are the events starting on the city's local today.
create function api.bars_by_city(
  p_state text,
  p_city text,
  p_group_slug text default null,
  p_page integer default 1,
  p_per_page integer default 20,
  p_now timestamptz default now()
) returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
declare
  v_city private.cities;
  v_local timestamp;
  v_group_id bigint;
  v_members bigint[];
begin
  select * into v_city from private.find_city(p_state, p_city);
  if not found then return null; end if;
  v_local := p_now at time zone v_city.time_zone;
  if p_group_slug is not null then
    select g.id into v_group_id from private.groups g where g.city_id = v_city.id and g.slug = p_group_slug;
  end if;

  if p_group_slug is not null then
    -- A group is at most a few hundred bars: everything is driven from its members.
    v_members := array(
      select bg.bar_id from private.bar_groups bg join private.bars b on b.id = bg.bar_id
      where bg.group_id = v_group_id and b.city_id = v_city.id);
    return json_build_object(
      'city', private.city_json(v_city),
      'bars', (
        select coalesce(json_agg(r.body order by page.name, page.id), '[]'::json)
        from (
          select b.id, b.name from private.bars b where b.id = any (v_members)
          order by b.name, b.id
          limit p_per_page offset (p_page - 1)::bigint * p_per_page
        ) page
        cross join lateral private.bar_list_row(page.id, p_now) r),
      'events_today', (
        select coalesce(json_agg(private.event_with_bar_json(e, b) order by e.start_at, e.id), '[]'::json)
        from private.events e join private.bars b on b.id = e.bar_id
        where e.bar_id = any (v_members)
          and e.start_at >= private.local_day_start(v_local::date, v_city.time_zone)
          and e.start_at < private.local_day_start(v_local::date + 1, v_city.time_zone)),
      'busiest_bars', (
        select coalesce(json_agg(json_build_object('id', t.bar_id::text, 'name', t.name, 'current_intensity', t.current_intensity)
                                 order by t.current_intensity desc, t.name, t.bar_id), '[]'::json)
        from (
          select l.bar_id, l.name, l.current_intensity::int as current_intensity
          from private.bar_live l
          where l.bar_id = any (v_members) and l.current_intensity is not null
            and l.open_week @> private.minute_of_week(v_local)
          order by l.current_intensity desc, l.name, l.bar_id
          limit 5
        ) t),
      'pagination', private.pagination_json(p_page, p_per_page, cardinality(v_members)));
  end if;

  return json_build_object(
    'city', private.city_json(v_city),
    'bars', (
      select coalesce(json_agg(r.body order by page.name, page.id), '[]'::json)
      from (
        select b.id, b.name from private.bars b where b.city_id = v_city.id
        order by b.name, b.id
        limit p_per_page offset (p_page - 1)::bigint * p_per_page
      ) page
      cross join lateral private.bar_list_row(page.id, p_now) r),
    'events_today', (
      select coalesce(json_agg(private.event_with_bar_json(e, b) order by e.start_at, e.id), '[]'::json)
      from private.events e join private.bars b on b.id = e.bar_id
      where e.city_id = v_city.id
        and e.start_at >= private.local_day_start(v_local::date, v_city.time_zone)
        and e.start_at < private.local_day_start(v_local::date + 1, v_city.time_zone)),
    'busiest_bars', (
      select coalesce(json_agg(json_build_object('id', t.bar_id::text, 'name', t.name, 'current_intensity', t.current_intensity)
                               order by t.current_intensity desc, t.name, t.bar_id), '[]'::json)
      from (
        -- most intense first down bar_live_city_busiest; open now is a range test on the same index entry
        select l.bar_id, l.name, l.current_intensity::int as current_intensity
        from private.bar_live l
        where l.city_id = v_city.id and l.current_intensity is not null
          and l.open_week @> private.minute_of_week(v_local)
        order by l.current_intensity desc, l.name, l.bar_id
        limit 5
      ) t),
    'pagination', private.pagination_json(p_page, p_per_page,
      coalesce((select k.n from private.city_bar_counts k where k.city_id = v_city.id), 0)::bigint));
end
$$;

-------------------------------------------------------------------------------
-- 5. GET events/:state/:city
-------------------------------------------------------------------------------

create function api.events(
  p_state text,
  p_city text,
  p_start_date text default null,      -- YYYY-MM-DD or ISO 8601 date-time; default today
  p_end_date text default null,        -- default 30 days after today (inclusive)
  p_classification text default null,
  p_group_slug text default null,
  p_page integer default 1,
  p_per_page integer default 20,
  p_now timestamptz default now()
) returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
declare
  v_city private.cities;
  v_today date;
  v_lo timestamptz;
  v_hi timestamptz;
  v_group_id bigint;
  v_body json;
begin
  select * into v_city from private.find_city(p_state, p_city);
  if not found then return null; end if;
  v_today := (p_now at time zone v_city.time_zone)::date;
  v_lo := coalesce(private.date_bound(p_start_date, v_city.time_zone, false), private.local_day_start(v_today, v_city.time_zone));
  v_hi := coalesce(private.date_bound(p_end_date, v_city.time_zone, true), private.local_day_start(v_today + 31, v_city.time_zone));
  if v_hi <= v_lo then
    raise exception using errcode = 'PT400', message = case when p_end_date is null
      then 'end_date must not be before start_date (end_date defaults to 30 days after today)'
      else 'end_date must not be before start_date' end;
  end if;
  if p_group_slug is not null then
    select g.id into v_group_id from private.groups g where g.city_id = v_city.id and g.slug = p_group_slug;
  end if;

  -- The filters are spliced in as fixed fragments (values bound with USING), so each
  -- combination is planned for itself: the (city, start) index, the (city,
  -- classification, start) index, or the group's bars through (bar, start).
  execute format($q$
    with matching as (
      select e.id, e.start_at from private.events e
      where e.city_id = $1 and e.start_at >= $2 and e.start_at < $3 %s %s
    )
    select json_build_object(
      'events', (
        select coalesce(json_agg(json_build_object(
                 'id', e.id::text,
                 'title', e.title,
                 'description', e.description,
                 'classification', e.classification,
                 'start_at', private.iso_utc(e.start_at),
                 'end_at', private.iso_utc(e.end_at),
                 'created_at', private.iso_utc(e.created_at),
                 'bar', private.bar_summary_json(b, $8))
               order by e.start_at, e.id), '[]'::json)
        from (
          select m.id from matching m order by m.start_at, m.id
          limit $6 offset ($7 - 1)::bigint * $6
        ) page
        join private.events e on e.id = page.id
        join private.bars b on b.id = e.bar_id),
      'pagination', private.pagination_json($7, $6, (select count(*) from matching)))
    $q$,
    case when p_classification is not null then 'and e.classification = $4' else '' end,
    case when p_group_slug is not null
      then 'and e.bar_id = any (array(select bg.bar_id from private.bar_groups bg where bg.group_id = $5))' else '' end)
  into v_body
  using v_city.id, v_lo, v_hi, p_classification, v_group_id, p_per_page, p_page, v_city;
  return v_body;
end
$$;

-------------------------------------------------------------------------------
-- 6. GET posts/:state/:city
-------------------------------------------------------------------------------

-- Posts (GET posts) in the order of their ids.
create or replace function private.posts_json(p_ids bigint[], p_city private.cities) returns json
  language sql stable
as $$
  select coalesce(json_agg(json_build_object(
           'id', p.id::text,
           'text', p.content,
           'created_at', private.iso_utc(p.created_at),
           'bar', private.bar_summary_json(b, p_city))
         order by u.n), '[]'::json)
  from unnest(p_ids) with ordinality u(id, n)
  join private.posts p on p.id = u.id
  join private.bars b on b.id = p.bar_id
$$;

create function api.posts(
  p_state text,
  p_city text,
  p_start_date text default null,      -- default 30 days ago
  p_end_date text default null,        -- default today (inclusive)
  p_group_slug text default null,
  p_page integer default 1,
  p_per_page integer default 20,
  p_now timestamptz default now()
) returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
declare
  v_city private.cities;
  v_today date;
  v_lo timestamptz;
  v_hi timestamptz;
  v_group_id bigint;
  v_start timestamptz;
  v_skip bigint;
begin
  select * into v_city from private.find_city(p_state, p_city);
  if not found then return null; end if;
  v_today := (p_now at time zone v_city.time_zone)::date;
  v_lo := coalesce(private.date_bound(p_start_date, v_city.time_zone, false), private.local_day_start(v_today - 30, v_city.time_zone));
  v_hi := coalesce(private.date_bound(p_end_date, v_city.time_zone, true), private.local_day_start(v_today + 1, v_city.time_zone));
  if v_hi <= v_lo then
    raise exception using errcode = 'PT400', message = case when p_end_date is null
      then 'end_date must not be before start_date (end_date defaults to today)'
      else 'end_date must not be before start_date' end;
  end if;
  if p_group_slug is not null then
    select g.id into v_group_id from private.groups g where g.city_id = v_city.id and g.slug = p_group_slug;
  end if;

  if p_group_slug is not null then
    -- a group is at most a few hundred bars: count and page its posts directly
    return (
      with matching as (
        select p.id, p.created_at from private.posts p
        where p.bar_id = any (array(select bg.bar_id from private.bar_groups bg where bg.group_id = v_group_id))
          and p.city_id = v_city.id and p.created_at >= v_lo and p.created_at < v_hi
      )
      select json_build_object(
        'posts', private.posts_json(array(
          select m.id from matching m order by m.created_at desc, m.id desc
          limit p_per_page offset (p_page - 1)::bigint * p_per_page), v_city),
        'pagination', private.pagination_json(p_page, p_per_page, (select count(*) from matching)))
    );
  end if;

  -- The whole city: the total from city_post_hours, and the page found by
  -- skipping whole hours (an index range scan within one hour, not an OFFSET
  -- over everything newer).
  select s.part_hi, s.skip into v_start, v_skip
  from private.post_page_start(v_city.id, v_lo, v_hi, (p_page - 1)::bigint * p_per_page) s;
  return json_build_object(
    'posts', private.posts_json(array(
      select p.id from private.posts p
      where v_start is not null and p.city_id = v_city.id and p.created_at >= v_lo and p.created_at < v_start
      order by p.created_at desc, p.id desc
      limit p_per_page offset v_skip), v_city),
    'pagination', private.pagination_json(p_page, p_per_page, private.post_count(v_city.id, v_lo, v_hi)));
end
$$;

-------------------------------------------------------------------------------
-- 7. GET feed/:state/:city
-------------------------------------------------------------------------------

-- Posts newest first, paged by p_page; events are the upcoming ones (ending
-- after now) by start time, always their first page.
create function api.feed(
  p_state text,
  p_city text,
  p_page integer default 1,
  p_per_page integer default 20,
  p_now timestamptz default now()
) returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
declare
  v_city private.cities;
  v_start timestamptz;
  v_skip bigint;
begin
  select * into v_city from private.find_city(p_state, p_city);
  if not found then return null; end if;
  select s.part_hi, s.skip into v_start, v_skip
  from private.post_page_start(v_city.id, '-infinity', 'infinity', (p_page - 1)::bigint * p_per_page) s;

  return json_build_object(
    'city', private.city_json(v_city),
    'posts', (
      select coalesce(json_agg(json_build_object(
               'id', p.id::text,
               'content', p.content,
               'created_at', private.iso_utc(p.created_at),
               'user', json_build_object('id', u.id::text, 'username', u.username),
               'bar', json_build_object('id', b.id::text, 'name', b.name),
               'media', (select coalesce(json_agg(json_build_object('url', m.url) order by m.position, m.id), '[]'::json)
                         from private.post_media m where m.post_id = p.id))
             order by p.created_at desc, p.id desc), '[]'::json)
      from (
        select p.* from private.posts p
        where v_start is not null and p.city_id = v_city.id and p.created_at < v_start
        order by p.created_at desc, p.id desc
        limit p_per_page offset v_skip
      ) p
      join private.users u on u.id = p.user_id
      join private.bars b on b.id = p.bar_id),
    'events', (
      select coalesce(json_agg(private.event_with_bar_json(e, b) order by e.start_at, e.id), '[]'::json)
      from (
        -- an event ending after now started after now minus the longest event (index events_duration)
        select e.* from private.events e
        where e.city_id = v_city.id and e.end_at > p_now
          and e.start_at > p_now - (select max(x.end_at - x.start_at) from private.events x)
        order by e.start_at, e.id
        limit p_per_page
      ) e
      join private.bars b on b.id = e.bar_id),
    'posts_pagination', private.pagination_json(p_page, p_per_page, private.post_count(v_city.id, '-infinity', 'infinity')),
    'events_pagination', private.pagination_json(1, p_per_page,
      (select count(*) from private.events e where e.city_id = v_city.id and e.end_at > p_now)));
end
$$;

-------------------------------------------------------------------------------
-- 8. GET search
-------------------------------------------------------------------------------

-- Bars and cities ranked together. Relevance tiers: 1 exact name, 2 name prefix,
-- 3 word/trigram similarity (ordered by similarity). Within equal relevance:
-- nearer first when a position is given, else more popular first (a bar's
-- google_ratings_total, a city's population). A city matches on its name or on
-- "<City>, <ST>".
create function api.search(
  p_q text,
  p_latitude double precision default null,
  p_longitude double precision default null,
  p_page integer default 1,
  p_per_page integer default 20
) returns json
  language sql stable security definer
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
  with params as (
    select lower(btrim(p_q)) as q,
           private.like_prefix(lower(btrim(p_q))) as prefix,
           case when p_latitude is not null and p_longitude is not null
                then private.earth_point(p_latitude, p_longitude) end as center
  ),
  candidates as (
    select 'bar'::text as type, b.id, b.name, b.address, c.state, b.latitude, b.longitude,
           b.price_level, b.profile_picture_url as image_url, b.geo,
           b.google_ratings_total::bigint as popularity,
           lower(b.name) as key1, lower(b.name) as key2
    from params p, private.bars b join private.cities c on c.id = b.city_id
    where lower(b.name) = p.q
       or lower(b.name) like p.prefix
       or lower(b.name) % p.q
       or p.q <% lower(b.name)
    union all
    select 'city', c.id, c.name || ', ' || c.state, null, c.state, c.latitude, c.longitude,
           null, null, c.geo, coalesce(c.population, 0)::bigint,
           lower(c.name), lower(c.name || ', ' || c.state)
    from params p, private.cities c
    where lower(c.name) = p.q or lower(c.name || ', ' || c.state) = p.q
       or lower(c.name) like p.prefix or lower(c.name || ', ' || c.state) like p.prefix
       or lower(c.name) % p.q or p.q <% lower(c.name)
  ),
  ranked as (
    select r.*,
           case when r.key1 = p.q or r.key2 = p.q then 1
                when r.key1 like p.prefix or r.key2 like p.prefix then 2
                else 3 end as tier,
           greatest(similarity(p.q, r.key1), word_similarity(p.q, r.key1)) as score,
           case when p.center is not null then earth_distance(p.center, r.geo) end as distance_m
    from candidates r, params p
  ),
  page as (
    select r.*, row_number() over () as n
    from (
      select * from ranked
      order by tier, case when tier = 3 then score end desc, distance_m, popularity desc, name, type, id
      limit p_per_page offset (p_page - 1)::bigint * p_per_page
    ) r
  )
  select json_build_object(
    'results', (
      select coalesce(json_agg(json_build_object(
               'type', pg.type,
               'id', pg.id::text,
               'name', pg.name,
               'address', pg.address,
               'state', pg.state,
               'location', private.geojson_point(pg.latitude, pg.longitude),
               'price_level', pg.price_level,
               'distance', round((pg.distance_m / 1609.344)::numeric, 2)::double precision,
               'image_url', pg.image_url)
             order by pg.n), '[]'::json)
      from page pg),
    'pagination', private.pagination_json(p_page, p_per_page, (select count(*) from ranked)))
$$;

-------------------------------------------------------------------------------
-- Privileges: the partner server may call the endpoint functions, nothing else.
-------------------------------------------------------------------------------

grant execute on function api.test_endpoint(text, text, timestamptz) to bar_partner;
grant execute on function api.bars(text[], text, double precision, double precision, double precision,
  double precision, double precision, double precision, double precision, integer, timestamptz) to bar_partner;
grant execute on function api.bar(text, timestamptz) to bar_partner;
grant execute on function api.bars_by_city(text, text, text, integer, integer, timestamptz) to bar_partner;
grant execute on function api.events(text, text, text, text, text, text, integer, integer, timestamptz) to bar_partner;
grant execute on function api.posts(text, text, text, text, text, integer, integer, timestamptz) to bar_partner;
grant execute on function api.feed(text, text, integer, integer, timestamptz) to bar_partner;
grant execute on function api.search(text, double precision, double precision, integer, integer) to bar_partner;
