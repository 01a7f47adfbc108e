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
create or replace function private.iso_utc(ts timestamptz) returns text
  language sql immutable parallel safe
as $$ select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') $$;

-- The instant a local calendar day starts in a time zone (DST-safe: a day may be 23 or 25 hours).
create or replace function private.local_day_start(p_day date, p_time_zone text) returns timestamptz
  language sql immutable parallel safe
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
  language sql immutable parallel safe
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
  language sql immutable parallel safe
as $$ select json_build_object('type', 'Point', 'coordinates', json_build_array(p_longitude, p_latitude)) $$;

create or replace function private.find_city(p_state text, p_city text) returns setof private.cities
  language sql stable parallel safe
as $$
  select c.* from private.cities c
  where upper(c.state) = upper(p_state) and lower(c.name) = lower(p_city)
$$;

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
  language sql immutable parallel safe
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

-- Bar, list form (GET bars, bars_by_city).
create or replace function private.bar_list_json(b private.bars, c private.cities, p_now timestamptz) returns json
  language sql stable parallel safe
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
    'primary_category', private.bar_primary_category_json(b.id),
    'categories', private.bar_categories_json(b.id),
    'hours', private.bar_hours_json(b.id),
    'profile_picture_url', b.profile_picture_url,
    'photos', private.bar_photos_json(b.id),
    'occupancy', private.bar_occupancy_json(b.id, p_now at time zone c.time_zone, false))
$$;

-- Event, short form (bar detail).
create or replace function private.event_short_json(e private.events) returns json
  language sql immutable parallel safe
as $$
  select json_build_object(
    'id', e.id::text, 'name', e.title, 'description', e.description,
    'start_at', private.iso_utc(e.start_at), 'end_at', private.iso_utc(e.end_at))
$$;

-- Event, short form with its bar (bars_by_city events_today, feed events).
create or replace function private.event_with_bar_json(e private.events, b private.bars) returns json
  language sql immutable parallel safe
as $$
  select json_build_object(
    'id', e.id::text, 'name', e.title, 'description', e.description,
    'start_at', private.iso_utc(e.start_at), 'end_at', private.iso_utc(e.end_at),
    'bar', json_build_object('id', b.id::text, 'name', b.name))
$$;

-- Bar, detail form (GET bars/:id): the list form plus description, price_level,
-- hourly occupancy and the next 10 upcoming events.
create or replace function private.bar_detail_json(b private.bars, c private.cities, p_now timestamptz) returns json
  language sql stable parallel safe
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
    'primary_category', private.bar_primary_category_json(b.id),
    'categories', private.bar_categories_json(b.id),
    'hours', private.bar_hours_json(b.id),
    'profile_picture_url', b.profile_picture_url,
    'photos', private.bar_photos_json(b.id),
    'occupancy', private.bar_occupancy_json(b.id, p_now at time zone c.time_zone, true),
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
$$;

create or replace function private.bar_summary_json(b private.bars, c private.cities) returns json
  language sql immutable parallel safe
as $$
  select json_build_object(
    'id', b.id::text, 'name', b.name, 'address', b.address, 'city', c.name, 'state', c.state,
    'latitude', b.latitude, 'longitude', b.longitude, 'profile_picture_url', b.profile_picture_url)
$$;

create or replace function private.city_json(c private.cities) returns json
  language sql immutable parallel safe
as $$ select json_build_object('name', c.name, 'state', c.state) $$;

-------------------------------------------------------------------------------
-- 1. GET test_endpoint
-------------------------------------------------------------------------------

create function api.test_endpoint(p_subscriber_id text, p_plan text, p_now timestamptz default now())
  returns json
  language sql stable security definer
  set search_path = private, public, pg_temp
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
as $$
declare
  v_ids bigint[];
  v_center earth;
  v_radius_m double precision := p_radius * 1609.344;
  v_box box;
  v_where text[] := array['true'];
  v_order text;
  v_bars json;
begin
  if p_ids is not null then
    select coalesce(array_agg(private.bar_id_or_null(i) order by n) filter (where private.bar_id_or_null(i) is not null), '{}')
      into v_ids from unnest(p_ids) with ordinality u(i, n);
    v_where := v_where || 'b.id = any($1)'::text;
  end if;
  if p_category is not null then
    v_where := v_where || 'exists (select 1 from private.bar_categories bc join private.categories k on k.id = bc.category_id where bc.bar_id = b.id and k.slug = $2)'::text;
  end if;
  if p_latitude is not null and p_longitude is not null then
    v_center := private.earth_point(p_latitude, p_longitude);
    if p_radius is not null then
      v_where := v_where || array['earth_box($3, $4) @> b.geo', 'earth_distance($3, b.geo) <= $4'];
    end if;
  end if;
  if p_corner1_latitude is not null then
    v_box := box(point(p_corner1_longitude, p_corner1_latitude), point(p_corner2_longitude, p_corner2_latitude));
    v_where := v_where || 'b.location <@ $5'::text;
  end if;
  v_order := case
    when v_center is not null then 'b.geo <-> $3, b.id'
    when v_ids is not null then 'array_position($1, b.id)'
    else 'b.name, b.id'
  end;

  execute format($q$
    select coalesce(json_agg(private.bar_list_json(b, c, $7) order by s.n), '[]'::json)
    from (
      select b.id, row_number() over () as n
      from (select b.id from private.bars b where %s order by %s limit $6) b
    ) s
    join private.bars b on b.id = s.id
    join private.cities c on c.id = b.city_id
  $q$, array_to_string(v_where, ' and '), v_order)
  into v_bars
  using v_ids, p_category, v_center, v_radius_m, v_box, p_limit, p_now;

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
as $$
  select json_build_object('bar', private.bar_detail_json(b, c, p_now))
  from private.bars b join private.cities c on c.id = b.city_id
  where b.id = private.bar_id_or_null(p_id)
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
as $$
declare
  v_city private.cities;
  v_local timestamp;
  v_group_id bigint;
begin
  select * into v_city from private.find_city(p_state, p_city);
  if not found then return null; end if;
  v_local := p_now at time zone v_city.time_zone;
  if p_group_slug is not null then
    select g.id into v_group_id from private.groups g where g.city_id = v_city.id and g.slug = p_group_slug;
  end if;

  return (
    with city_bars as not materialized (  -- inlined into each use: index scans, not a materialised copy
      select b.id, b.name from private.bars b
      where b.city_id = v_city.id
        and (p_group_slug is null or exists (
              select 1 from private.bar_groups bg where bg.bar_id = b.id and bg.group_id = v_group_id))
    )
    select json_build_object(
      'city', private.city_json(v_city),
      'bars', (
        select coalesce(json_agg(private.bar_list_json(b, v_city, p_now) order by b.name, b.id), '[]'::json)
        from (
          select cb.id from city_bars cb order by cb.name, cb.id
          limit p_per_page offset (p_page - 1)::bigint * p_per_page
        ) page
        join private.bars b on b.id = page.id),
      'events_today', (
        select coalesce(json_agg(private.event_with_bar_json(e, b) order by e.start_at, e.id), '[]'::json)
        from private.events e join private.bars b on b.id = e.bar_id
        where e.city_id = v_city.id
          and e.start_at >= private.local_day_start(v_local::date, v_city.time_zone)
          and e.start_at < private.local_day_start(v_local::date + 1, v_city.time_zone)
          and (p_group_slug is null or exists (
                select 1 from private.bar_groups bg where bg.bar_id = e.bar_id and bg.group_id = v_group_id))),
      'busiest_bars', (
        select coalesce(json_agg(json_build_object('id', t.id::text, 'name', t.name, 'current_intensity', t.current_intensity)
                                 order by t.current_intensity desc, t.name, t.id), '[]'::json)
        from (
          -- most intense first, checking "open now" only until five open bars are found
          select ranked.* from (
            select cb.id, cb.name, o.current_intensity::int as current_intensity
            from city_bars cb join private.occupancy o on o.bar_id = cb.id
            order by o.current_intensity desc, cb.name, cb.id
            offset 0  -- keeps the open-now filter out of the sort
          ) ranked
          where private.bar_is_open(ranked.id, v_local)
          limit 5
        ) t),
      'pagination', private.pagination_json(p_page, p_per_page, (select count(*) from city_bars)))
  );
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
as $$
declare
  v_city private.cities;
  v_today date;
  v_lo timestamptz;
  v_hi timestamptz;
  v_group_id bigint;
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

  return (
    with matching as (
      select e.id, e.start_at from private.events e
      where e.city_id = v_city.id and e.start_at >= v_lo and e.start_at < v_hi
        and (p_classification is null or e.classification = p_classification)
        and (p_group_slug is null or exists (
              select 1 from private.bar_groups bg where bg.bar_id = e.bar_id and bg.group_id = v_group_id))
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
                 'bar', private.bar_summary_json(b, v_city))
               order by e.start_at, e.id), '[]'::json)
        from (
          select m.id from matching m order by m.start_at, m.id
          limit p_per_page offset (p_page - 1)::bigint * p_per_page
        ) page
        join private.events e on e.id = page.id
        join private.bars b on b.id = e.bar_id),
      'pagination', private.pagination_json(p_page, p_per_page, (select count(*) from matching)))
  );
end
$$;

-------------------------------------------------------------------------------
-- 6. GET posts/:state/:city
-------------------------------------------------------------------------------

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
as $$
declare
  v_city private.cities;
  v_today date;
  v_lo timestamptz;
  v_hi timestamptz;
  v_group_id bigint;
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

  return (
    with matching as (
      select p.id, p.created_at from private.posts p
      where p.city_id = v_city.id and p.created_at >= v_lo and p.created_at < v_hi
        and (p_group_slug is null or exists (
              select 1 from private.bar_groups bg where bg.bar_id = p.bar_id and bg.group_id = v_group_id))
    )
    select json_build_object(
      'posts', (
        select coalesce(json_agg(json_build_object(
                 'id', p.id::text,
                 'text', p.content,
                 'created_at', private.iso_utc(p.created_at),
                 'bar', private.bar_summary_json(b, v_city))
               order by p.created_at desc, p.id desc), '[]'::json)
        from (
          select m.id from matching m order by m.created_at desc, m.id desc
          limit p_per_page offset (p_page - 1)::bigint * p_per_page
        ) page
        join private.posts p on p.id = page.id
        join private.bars b on b.id = p.bar_id),
      'pagination', private.pagination_json(p_page, p_per_page, (select count(*) from matching)))
  );
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
as $$
declare
  v_city private.cities;
begin
  select * into v_city from private.find_city(p_state, p_city);
  if not found then return null; end if;

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
        where p.city_id = v_city.id
        order by p.created_at desc, p.id desc
        limit p_per_page offset (p_page - 1)::bigint * p_per_page
      ) p
      join private.users u on u.id = p.user_id
      join private.bars b on b.id = p.bar_id),
    'events', (
      select coalesce(json_agg(private.event_with_bar_json(e, b) order by e.start_at, e.id), '[]'::json)
      from (
        select e.* from private.events e
        where e.city_id = v_city.id and e.end_at > p_now
        order by e.start_at, e.id
        limit p_per_page
      ) e
      join private.bars b on b.id = e.bar_id),
    'posts_pagination', private.pagination_json(p_page, p_per_page,
      (select count(*) from private.posts p where p.city_id = v_city.id)),
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
