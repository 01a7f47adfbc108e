-- Value helpers shared by the endpoint functions (repeatable file; see db/CONVENTIONS.md).
-- Pure formatting and arithmetic: no table access.

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

-- A point on the earth: contrib earthdistance's ll_to_earth spelled out with
-- schema-qualified calls (first version: committed 000001, which called
-- ll_to_earth under `set search_path`). Without a SET clause the planner
-- inlines it: the generated geo columns of bars and cities call it for every
-- row (the 1M-bar seed's bars step spent ~45 s in the non-inlined call), as do
-- the endpoints for a request's position. Qualified, it still works under an
-- empty search_path (pg_restore recomputes generated columns with one). Not
-- STRICT (a strict function is inlined only if its body is: earth() is not);
-- a null coordinate still gives null, through the strict cube functions.
create or replace function private.earth_point(latitude double precision, longitude double precision)
  returns public.earth
  language sql immutable parallel safe
as $$
  select public.cube(public.cube(public.cube(public.earth() * cos(radians(latitude)) * cos(radians(longitude))),
                                 public.earth() * cos(radians(latitude)) * sin(radians(longitude))),
                     public.earth() * sin(radians(latitude)))::public.earth
$$;

-- earthdistance's gc_to_sec (the straight-line distance of a great-circle one, for
-- cube's <->) and earth_box (the cube holding every point within a distance), as
-- expressions the planner inlines. The extension's are STRICT SQL functions whose
-- bodies are not strict (a CASE), so they are never inlined: each statement or
-- PL/pgSQL expression that calls one parses and plans its body again on every
-- request (fmgr_sql: a radius call spent 5-7 % of its database time there). Same
-- formula, same earth().
create or replace function private.earth_chord(p_meters double precision) returns double precision
  language sql immutable parallel safe
as $$
  select case when p_meters < 0 then 0::float8 when p_meters / public.earth() > pi() then 2 * public.earth()
              else 2 * public.earth() * sin(p_meters / (2 * public.earth())) end
$$;

create or replace function private.radius_box(p_center public.earth, p_meters double precision) returns public.cube
  language sql immutable parallel safe
as $$ select public.cube_enlarge(p_center, private.earth_chord(p_meters), 3) $$;

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

create or replace function private.category_json(c private.categories) returns json
  language sql stable parallel safe
as $$ select json_build_object('name', c.name, 'slug', c.slug) $$;

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

-- Helpers of the tables' check constraints (first created in migration 000001;
-- a constraint keeps using the function by oid, so create or replace is safe).
create or replace function private.is_time_zone(tz text) returns boolean
  language plpgsql immutable strict parallel safe
as $$
begin
  perform now() at time zone tz;
  return true;
exception when invalid_parameter_value then
  return false;
end $$;

create or replace function private.is_http_url(url text) returns boolean
  language sql immutable strict parallel safe
as $$ select url ~ '^https?://[^\s/?#]+[^\s]*$' $$;

-- The `hours` object of a bar (bar documents, bar_live) from parallel arrays of its slots.
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

-- The occupancy object's first keys as json_build_object writes them (no closing
-- brace: the detail form appends hourly_data): '{"current_intensity" : 40, "status" : "busy"'.
-- A closed bar shows intensity 0 (decisions.md).
create or replace function private.occupancy_json_head(p_intensity integer, p_open boolean) returns text
  language sql stable parallel safe
as $$
  select '{"current_intensity" : ' || case when p_open then coalesce(p_intensity::text, 'null') else '0' end
      || ', "status" : ' || coalesce('"' || private.occupancy_status(p_intensity, p_open) || '"', 'null')
$$;

-- hourly_data of one local day: the 24 values of a weekly profile from subscript p_first,
-- as the text json_agg(json_build_object('hour', h, 'intensity', v) order by h)
-- gives (a null profile: 24 null intensities). One expression, no aggregate
-- (~9 us instead of ~28 for the aggregate over generate_series). plpgsql, so that
-- callers do not inline (and initialise on every call) its 48-term expression: it is
-- stored per bar (occupancy.hourly_days) and called only to fill that.
create or replace function private.hourly_json_text(p_profile smallint[], p_first integer) returns text
  language plpgsql immutable parallel safe
as $$
begin
  return
    '[{"hour" : 0, "intensity" : ' || coalesce(p_profile[p_first + 0]::text, 'null')
    || '}, {"hour" : 1, "intensity" : ' || coalesce(p_profile[p_first + 1]::text, 'null')
    || '}, {"hour" : 2, "intensity" : ' || coalesce(p_profile[p_first + 2]::text, 'null')
    || '}, {"hour" : 3, "intensity" : ' || coalesce(p_profile[p_first + 3]::text, 'null')
    || '}, {"hour" : 4, "intensity" : ' || coalesce(p_profile[p_first + 4]::text, 'null')
    || '}, {"hour" : 5, "intensity" : ' || coalesce(p_profile[p_first + 5]::text, 'null')
    || '}, {"hour" : 6, "intensity" : ' || coalesce(p_profile[p_first + 6]::text, 'null')
    || '}, {"hour" : 7, "intensity" : ' || coalesce(p_profile[p_first + 7]::text, 'null')
    || '}, {"hour" : 8, "intensity" : ' || coalesce(p_profile[p_first + 8]::text, 'null')
    || '}, {"hour" : 9, "intensity" : ' || coalesce(p_profile[p_first + 9]::text, 'null')
    || '}, {"hour" : 10, "intensity" : ' || coalesce(p_profile[p_first + 10]::text, 'null')
    || '}, {"hour" : 11, "intensity" : ' || coalesce(p_profile[p_first + 11]::text, 'null')
    || '}, {"hour" : 12, "intensity" : ' || coalesce(p_profile[p_first + 12]::text, 'null')
    || '}, {"hour" : 13, "intensity" : ' || coalesce(p_profile[p_first + 13]::text, 'null')
    || '}, {"hour" : 14, "intensity" : ' || coalesce(p_profile[p_first + 14]::text, 'null')
    || '}, {"hour" : 15, "intensity" : ' || coalesce(p_profile[p_first + 15]::text, 'null')
    || '}, {"hour" : 16, "intensity" : ' || coalesce(p_profile[p_first + 16]::text, 'null')
    || '}, {"hour" : 17, "intensity" : ' || coalesce(p_profile[p_first + 17]::text, 'null')
    || '}, {"hour" : 18, "intensity" : ' || coalesce(p_profile[p_first + 18]::text, 'null')
    || '}, {"hour" : 19, "intensity" : ' || coalesce(p_profile[p_first + 19]::text, 'null')
    || '}, {"hour" : 20, "intensity" : ' || coalesce(p_profile[p_first + 20]::text, 'null')
    || '}, {"hour" : 21, "intensity" : ' || coalesce(p_profile[p_first + 21]::text, 'null')
    || '}, {"hour" : 22, "intensity" : ' || coalesce(p_profile[p_first + 22]::text, 'null')
    || '}, {"hour" : 23, "intensity" : ' || coalesce(p_profile[p_first + 23]::text, 'null')
    || '}]';
end
$$;

-- hourly_data of the 7 days of a weekly profile (1 = Monday), as occupancy.hourly_days stores them.
create or replace function private.hourly_days_json(p_profile smallint[]) returns text[]
  language sql immutable parallel safe
as $$
  select array[private.hourly_json_text(p_profile, 1), private.hourly_json_text(p_profile, 25),
               private.hourly_json_text(p_profile, 49), private.hourly_json_text(p_profile, 73),
               private.hourly_json_text(p_profile, 97), private.hourly_json_text(p_profile, 121),
               private.hourly_json_text(p_profile, 145)]
$$;

-- Per-city counts by UTC hour (private.city_post_hours, private.city_event_hours): the statement
-- trigger that keeps one exact in the same transaction as the change of its base table, a bulk
-- load paying one set-based statement. Arguments: the count table, the base table's time column.
-- (EXECUTE: the two tables differ only in names; this runs on writes, never on a partner's read.)
create or replace function private.city_hours_sync() returns trigger
  language plpgsql
as $$
declare
  v_counts text := tg_argv[0];
  v_at text := tg_argv[1];
begin
  if tg_op = 'TRUNCATE' then
    execute format('truncate private.%I', v_counts);
    return null;
  end if;
  if tg_op in ('UPDATE', 'DELETE') then
    execute format(
      'update private.%1$I h set n = h.n - d.n
       from (select city_id, date_trunc(''hour'', %2$I, ''UTC'') as hour, count(*)::int as n from old_rows group by 1, 2) d
       where h.city_id = d.city_id and h.hour = d.hour', v_counts, v_at);
  end if;
  if tg_op in ('UPDATE', 'INSERT') then
    execute format(
      'insert into private.%1$I as h (city_id, hour, n)
       select city_id, date_trunc(''hour'', %2$I, ''UTC''), count(*)::int from new_rows group by 1, 2
       on conflict (city_id, hour) do update set n = h.n + excluded.n', v_counts, v_at);
  end if;
  return null;
end
$$;

-- The four statement triggers (transition tables need one trigger per event) of one count table.
create or replace function private.city_hours_triggers(p_table text, p_counts text, p_at text) returns void
  language plpgsql
as $$
declare
  v_call text := format('execute function private.city_hours_sync(%L, %L)', p_counts, p_at);
  v_name text := p_counts || '_sync';
begin
  execute format('create or replace trigger %I after insert on private.%I referencing new table as new_rows for each statement %s', v_name || '_ins', p_table, v_call);
  execute format('create or replace trigger %I after update on private.%I referencing old table as old_rows new table as new_rows for each statement %s', v_name || '_upd', p_table, v_call);
  execute format('create or replace trigger %I after delete on private.%I referencing old table as old_rows for each statement %s', v_name || '_del', p_table, v_call);
  execute format('create or replace trigger %I after truncate on private.%I for each statement %s', v_name || '_trunc', p_table, v_call);
end
$$;
