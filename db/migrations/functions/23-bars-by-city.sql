-- GET bars_by_city/:state/:city (repeatable file; see db/CONVENTIONS.md).
--
-- group_slug narrows the bars, events_today and busiest_bars alike. events_today
-- are the events starting on the city's local today. The v1.1 filters (open_now,
-- open_at, price_levels, min_rating, statuses; decisions.md "Filters") narrow the
-- bars page and its total, applied before pagination.
-- plpgsql with static SQL: one statement per shape (group or city, filtered or not).

-- Old signatures (v1.0, without the v1.1 filters; v1.1, without events_today_limit).
drop function if exists api.bars_by_city(text, text, text, integer, integer, timestamptz);
drop function if exists api.bars_by_city(text, text, text, integer, integer, timestamptz,
  boolean, timestamptz, integer[], numeric, text[]);
-- Until v1.3 events_today was stored as one json text (now an array of its events).
drop function if exists private.city_events_today_build(bigint, text, date);
drop function if exists private.city_events_today(private.cities, date);

-------------------------------------------------------------------------------
-- events_today of a whole city: a fragment per city and local day
-------------------------------------------------------------------------------
-- (tables in committed migrations 000006 and 000013). The largest city has ~1,200
-- events a day (~300 KB of json); building them costs ~tens of ms, so the built
-- fragment (an array of the events' json, so that events_today_limit slices it
-- and events_today_total counts it) is kept and served until the city's version moves on.
--
-- Correctness under concurrency (READ COMMITTED; each statement below takes a
-- new snapshot): the reader reads the city's version BEFORE the snapshot that
-- builds the fragment, and stores the fragment tagged with that version. A
-- writer that commits after the version was read has incremented it, so the
-- fragment (built with or without the writer's change) never matches the
-- current version and is rebuilt by the next reader. Storing is skipped on a
-- read-only connection (a replica): the fragment is then built per request.

-- The events of one city starting on its local day `p_day`, in order (the items of
-- events_today); the one definition of that list.
create or replace function private.city_events_today_build(p_city_id bigint, p_time_zone text, p_day date)
  returns json[]
  language sql stable
as $$
  select coalesce(array_agg(private.event_with_bar_json(e, b) order by e.start_at, e.id), '{}')
  from private.events e join private.bars b on b.id = e.bar_id
  where e.city_id = p_city_id
    and e.start_at >= private.local_day_start(p_day, p_time_zone)
    and e.start_at < private.local_day_start(p_day + 1, p_time_zone)
$$;

create or replace function private.city_events_today(p_city private.cities, p_day date)
  returns json[]
  language plpgsql volatile
as $$
declare
  v_version bigint;
  v_items json[];
begin
  v_version := coalesce((select v.version from private.city_events_version v where v.city_id = p_city.id), 0);
  select f.items into v_items from private.city_events_today f
  where f.city_id = p_city.id and f.day = p_day and f.version = v_version;
  if found then
    return v_items;
  end if;
  v_items := private.city_events_today_build(p_city.id, p_city.time_zone, p_day);
  if not current_setting('transaction_read_only')::boolean then
    begin
      insert into private.city_events_today as f (city_id, day, version, items)
      values (p_city.id, p_day, v_version, v_items)
      on conflict (city_id, day) do update set version = excluded.version, items = excluded.items
        where f.version < excluded.version;
      delete from private.city_events_today f where f.city_id = p_city.id and f.day < p_day - 1;
    exception when read_only_sql_transaction or lock_not_available or serialization_failure then
      null;  -- serving does not depend on the store
    end;
  end if;
  return v_items;
end
$$;

-- events_today as served: the first p_limit items (all of them when p_limit is null, the v1 default).
-- stable, as array_to_json is: an immutable wrapper over a stable call is not inlined (and is then
-- planned on every call)
create or replace function private.events_today_json(p_items json[], p_limit integer) returns json
  language sql stable
as $$
  select array_to_json(case when p_limit is null then p_items else p_items[1:p_limit] end)
$$;

-- A new version for every city whose events_today may have changed.
create or replace function private.city_events_bump(p_city_ids bigint[]) returns void
  language sql volatile
as $$
  insert into private.city_events_version as v (city_id, version)
  select distinct u.id, 1 from unnest(p_city_ids) u(id) where u.id is not null
  order by 1
  on conflict (city_id) do update set version = v.version + 1
$$;

create or replace function private.city_events_sync() returns trigger
  language plpgsql volatile
as $$
begin
  if tg_op = 'TRUNCATE' then
    -- every city, also those without a version row yet (a fragment stored at version 0)
    perform private.city_events_bump(array(select id from private.cities union select city_id from private.city_events_today));
    delete from private.city_events_today;
    return null;
  end if;
  if tg_table_name = 'events' then
    if tg_op = 'INSERT' then
      perform private.city_events_bump(array(select city_id from new_rows));
    elsif tg_op = 'DELETE' then
      perform private.city_events_bump(array(select city_id from old_rows));
    else
      perform private.city_events_bump(array(select city_id from new_rows union select city_id from old_rows));
    end if;
  elsif tg_table_name = 'bars' then  -- events_today shows the bar's name
    if tg_op = 'UPDATE' then
      perform private.city_events_bump(array(
        select distinct e.city_id from private.events e
        where e.bar_id in (
          select n.id from new_rows n join old_rows o on o.id = n.id where n.name is distinct from o.name)));
    end if;  -- INSERT: no events yet; DELETE: its events are deleted (cascade) and bump
  elsif tg_table_name = 'cities' then  -- the time zone sets the local day
    if tg_op = 'UPDATE' then
      perform private.city_events_bump(array(
        select n.id from new_rows n join old_rows o on o.id = n.id where n.time_zone is distinct from o.time_zone));
    end if;
  end if;
  return null;
end
$$;

do $$
declare
  t text;
begin
  execute 'create or replace trigger city_events_ins after insert on private.events referencing new table as new_rows for each statement execute function private.city_events_sync()';
  execute 'create or replace trigger city_events_del after delete on private.events referencing old table as old_rows for each statement execute function private.city_events_sync()';
  execute 'create or replace trigger city_events_trunc after truncate on private.events for each statement execute function private.city_events_sync()';
  foreach t in array array['events', 'bars', 'cities'] loop
    execute format('create or replace trigger city_events_upd after update on private.%I referencing old table as old_rows new table as new_rows for each statement execute function private.city_events_sync()', t);
  end loop;
end $$;

-------------------------------------------------------------------------------
-- The bars of a city open at a minute of its local week, through their open
-- slots (bar_open_slots, functions/11-bar-live.sql): one GiST probe of the city's
-- time zone. Null when p_max or more bars of that zone are open then (evening:
-- the callers' walks of the city are cheaper). The count comes first, index-only
-- (it stops at p_max: a bitmap scan reading the bar ids would first collect every
-- open slot of the zone, 227,000 of them on a New York evening, 35 ms).
-------------------------------------------------------------------------------
create or replace function private.city_open_bars(p_city_id bigint, p_minute integer, p_max integer) returns bigint[]
  language sql stable parallel safe
as $$
  with k as materialized (
    select private.slot_key(z.id, p_minute) as k
    from private.cities c join private.time_zones z on z.name = c.time_zone
    where c.id = p_city_id)
  select case when (select count(*) from (
                      select 1 from k join private.bar_open_slots s on s.slot @> k.k limit p_max) x) < p_max then
    array(select s.bar_id from k join private.bar_open_slots s on s.slot @> k.k
          join private.bar_live l on l.bar_id = s.bar_id where l.city_id = p_city_id) end
$$;

-------------------------------------------------------------------------------
-- busiest_bars of a whole city
-------------------------------------------------------------------------------
-- The five most intense bars open at a minute of the week. First the top 2,000
-- of the city by intensity down bar_live_city_busiest (index-only), stopping at
-- the fifth open one (city_busiest_top): if five of them are open, they are the
-- answer (any open bar further down ranks lower). (Aggregating all 2,000 to keep
-- five cost 1.1 ms of New York City's page by day; the walk stops after a few rows.)
-- Otherwise (night: few bars open) the city's open bars come from their open
-- slots, or, when its time zone has many open, the rest of its entries are walked
-- (city_busiest_night).
-- (A GiST index on open_week does not help: a weekly multirange's bounding range
-- covers the week, so every bar with hours is a recheck.)

-- The walk by day, planned once per connection. It was a custom plan, planned on
-- every call (with the page's below, 27 relation-size probes a call; pgbench of
-- New York City's page +24 % without them, docs/PERFORMANCE.md). A generic plan
-- is costed for an average city: for one of a few hundred bars the planner may
-- prefer to sort the city's bars (or walk every city's by intensity and sort each
-- run of equal intensities), which for New York City are 47,000. With both sorts
-- off the index walk is the only plan without a sort, so it is the plan whatever
-- the statistics (test/db/functions/city.test.ts; db/CONVENTIONS.md › plan_cache_mode).
create or replace function private.city_busiest_top(p_city_id bigint, p_minute integer) returns bigint[]
  language plpgsql stable
  set plan_cache_mode = force_generic_plan
  set enable_sort = off
  set enable_incremental_sort = off
as $$
begin
  return array(
    select t.bar_id from (
      select l.bar_id, l.name, l.current_intensity, l.open_week
      from private.bar_live l
      where l.city_id = p_city_id and l.current_intensity is not null
      order by l.current_intensity desc, l.name, l.bar_id
      limit 2000
    ) t
    where t.open_week @> p_minute
    order by t.current_intensity desc, t.name, t.bar_id
    limit 5);
end
$$;

-- Fewer than five open among the top 2,000 (p_top): when the city has more than
-- 2,000 such bars, the open ones further down. Custom plans: at night, for one
-- city's size (the generic plan of an average city would sort New York City).
create or replace function private.city_busiest_night(p_city_id bigint, p_minute integer, p_top bigint[])
  returns bigint[]
  language plpgsql stable
  set plan_cache_mode = force_custom_plan
as $$
declare
  v_seen integer;
  v_open bigint[];
begin
  select count(*) into v_seen from (
    select 1 from private.bar_live l
    where l.city_id = p_city_id and l.current_intensity is not null
    limit 2000) x;
  if v_seen < 2000 then
    return p_top;  -- the top 2,000 were the whole city
  end if;
  v_open := private.city_open_bars(p_city_id, p_minute, 5000);
  if v_open is not null then
    return array(
      select l.bar_id from private.bar_live l
      where l.bar_id = any (v_open) and l.current_intensity is not null
      order by l.current_intensity desc, l.name, l.bar_id
      limit 5);
  end if;
  return array(
    select l.bar_id from private.bar_live l
    where l.city_id = p_city_id and l.current_intensity is not null and l.open_week @> p_minute
    order by l.current_intensity desc, l.name, l.bar_id
    limit 5);
end
$$;

-- The five rendered. Generic plans (the custom plans of the last statement, its ids known, are
-- costed below the generic one's, so the plan cache would keep planning it on every call).
create or replace function private.city_busiest_bars(p_city_id bigint, p_minute integer) returns json
  language plpgsql stable
  set plan_cache_mode = force_generic_plan
as $$
declare
  v_ids bigint[];
begin
  v_ids := private.city_busiest_top(p_city_id, p_minute);
  if cardinality(v_ids) < 5 then
    v_ids := private.city_busiest_night(p_city_id, p_minute, v_ids);
  end if;
  return (
    select coalesce(json_agg(json_build_object('id', l.bar_id::text, 'name', l.name, 'current_intensity', l.current_intensity::int)
                             order by u.n), '[]'::json)
    from unnest(v_ids[1:5]) with ordinality u(id, n)
    join private.bar_live l on l.bar_id = u.id);
end
$$;

-------------------------------------------------------------------------------
-- A page of a whole city's bars, unfiltered: by name, id down bars_city_name
-- (index-only). Planned once per connection: the plan cache kept custom plans
-- (a generic plan's unknown LIMIT is costed above them), so the statement was
-- planned on every call. Both sorts off, as in city_busiest_top: the index walk
-- is the only plan without a sort, whatever the statistics.
-------------------------------------------------------------------------------
create or replace function private.city_page_ids(p_city_id bigint, p_page integer, p_per_page integer)
  returns bigint[]
  language plpgsql stable
  set plan_cache_mode = force_generic_plan
  set enable_sort = off
  set enable_incremental_sort = off
as $$
begin
  return array(
    select b.id from private.bars b where b.city_id = p_city_id
    order by b.name, b.id
    limit p_per_page offset (p_page - 1)::bigint * p_per_page);
end
$$;

-------------------------------------------------------------------------------
-- A group's page (group_slug): a group is at most a few hundred bars, so
-- everything is driven from its members
-------------------------------------------------------------------------------
-- The group's bars that are in its city, each probed in bars_id_city_id_key
-- (index-only). A LATERAL with LIMIT cannot become a join, so this is the plan
-- whatever the statistics: the join the planner chose instead read the city's
-- whole bars_city_name for the members (11,000 entries in San Antonio for 200
-- members, 1.4 ms), and was planned on every call (a custom plan).
create or replace function private.city_group_member_ids(p_group_id bigint, p_city_id bigint) returns bigint[]
  language plpgsql stable
  set plan_cache_mode = force_generic_plan
as $$
begin
  return array(
    select bg.bar_id from private.bar_groups bg
    cross join lateral (select from private.bars b where b.id = bg.bar_id and b.city_id = p_city_id limit 1) in_city
    where bg.group_id = p_group_id);
end
$$;

-- The page of group p_group_id (null: no such group, an empty page) of p_city at
-- p_now (p_local, the city's local time). The filters narrow the bars and their
-- total; events_today and busiest_bars are the whole group's. Generic plans: each
-- statement reads the members it is given (no city-sized range to cost).
create or replace function private.city_group_page(
  p_city private.cities, p_group_id bigint, p_local timestamp, p_now timestamptz, p_page integer, p_per_page integer,
  p_open_now boolean, p_open_at timestamptz, p_price_levels integer[], p_min_rating numeric, p_statuses text[],
  p_events_today_limit integer
) returns json
  language plpgsql stable
  set plan_cache_mode = force_generic_plan
as $$
declare
  v_members bigint[] := private.city_group_member_ids(p_group_id, p_city.id);
  v_matches bigint[] := v_members;
  v_page bigint[];
  v_events json[];
begin
  if p_open_now is not null or p_open_at is not null or p_price_levels is not null
     or p_min_rating is not null or p_statuses is not null then
    v_matches := array(
      select m.id from unnest(v_members) m(id)
      where private.bar_filters_match(m.id, p_now, p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses));
  end if;
  v_page := array(
    select b.id from private.bars b where b.id = any (v_matches)
    order by b.name, b.id
    limit p_per_page offset (p_page - 1)::bigint * p_per_page);
  v_events := array(
    select private.event_with_bar_json(e, b)
    from private.events e join private.bars b on b.id = e.bar_id
    where e.bar_id = any (v_members)
      and e.start_at >= private.local_day_start(p_local::date, p_city.time_zone)
      and e.start_at < private.local_day_start(p_local::date + 1, p_city.time_zone)
    order by e.start_at, e.id);
  return json_build_object(
    'city', private.city_json(p_city),
    'bars', (
      select coalesce(json_agg(r.body::json order by u.n), '[]'::json)
      from unnest(v_page) with ordinality u(id, n)
      cross join lateral private.bar_list_row(u.id, p_now) r),
    'events_today', private.events_today_json(v_events, p_events_today_limit),
    'busiest_bars', (
      select coalesce(json_agg(json_build_object('id', t.bar_id::text, 'name', t.name, 'current_intensity', t.current_intensity)
                               order by t.current_intensity desc, t.name, t.bar_id), '[]'::json)
      from (
        select l.bar_id, l.name, l.current_intensity::int as current_intensity
        from private.bar_live l
        where l.bar_id = any (v_members) and l.current_intensity is not null
          and l.open_week @> private.minute_of_week(p_local)
        order by l.current_intensity desc, l.name, l.bar_id
        limit 5
      ) t),
    'pagination', private.pagination_json(p_page, p_per_page, cardinality(v_matches)),
    'events_today_total', cardinality(v_events));  -- last: the server reads it off the end of the text
end
$$;

-------------------------------------------------------------------------------
-- The endpoint
-------------------------------------------------------------------------------

create or replace function api.bars_by_city(
  p_state text,
  p_city text,
  p_group_slug text default null,
  p_page integer default 1,
  p_per_page integer default 20,
  p_now timestamptz default now(),
  p_open_now boolean default null,
  p_open_at timestamptz default null,
  p_price_levels integer[] default null,
  p_min_rating numeric default null,
  p_statuses text[] default null,
  p_events_today_limit integer default null  -- null: all of them (v1)
) returns json
  language plpgsql volatile security definer  -- volatile: stores the events_today fragment
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
declare
  v_city private.cities;
  v_local timestamp;
  v_group_id bigint;
  v_filtered boolean := p_open_now is not null or p_open_at is not null or p_price_levels is not null
                        or p_min_rating is not null or p_statuses is not null;
  v_page bigint[];
  v_total bigint;
  v_open bigint[];     -- the city's bars open at the filters' instant, when few are
  v_matches bigint[];
  v_minute_now integer;  -- the city's minute of the week now and at p_open_at, computed once: per row,
  v_minute_at integer;   -- a generic plan converted the time zone for each of NYC's 47,000 bars (50 ms)
  v_events json[];
begin
  select * into v_city from private.find_city(p_state, p_city);
  if not found then return null; end if;
  v_local := p_now at time zone v_city.time_zone;
  v_minute_now := private.minute_of_week(v_local);
  v_minute_at := private.minute_of_week(p_open_at at time zone v_city.time_zone);

  if p_group_slug is not null then
    select g.id into v_group_id from private.groups g where g.city_id = v_city.id and g.slug = p_group_slug;
    return private.city_group_page(v_city, v_group_id, v_local, p_now, p_page, p_per_page, p_open_now, p_open_at,
                                   p_price_levels, p_min_rating, p_statuses, p_events_today_limit);
  end if;

  -- the filters need bars open at an instant: when few of the city's time zone are open then, its
  -- open bars (their open slots) are the candidates
  if p_open_at is not null then
    v_open := private.city_open_bars(v_city.id, private.minute_of_week(p_open_at at time zone v_city.time_zone), 5000);
  end if;
  if v_open is null and private.filters_need_open_now(p_open_now, p_statuses) then
    v_open := private.city_open_bars(v_city.id, private.minute_of_week(v_local), 5000);
  end if;

  if v_open is not null then
    v_matches := array(
      select l.bar_id from private.bar_live l
      where l.bar_id = any (v_open)
        and private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                  v_minute_now, v_minute_at, p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
      order by l.name, l.bar_id);
    v_total := cardinality(v_matches);
    v_page := v_matches[(p_page - 1)::bigint * p_per_page + 1 : p_page::bigint * p_per_page];
  elsif v_filtered then
    -- the city's bars in name order down bar_live_city_name (index-only: the
    -- filtered columns are included), then the total over the same range
    v_page := array(
      select l.bar_id from private.bar_live l
      where l.city_id = v_city.id
        and private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                  v_minute_now, v_minute_at, p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
      order by l.name, l.bar_id
      limit p_per_page offset (p_page - 1)::bigint * p_per_page);
    select count(*) into v_total
    from private.bar_live l
    where l.city_id = v_city.id
      and private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                v_minute_now, v_minute_at, p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses);
  else
    v_page := private.city_page_ids(v_city.id, p_page, p_per_page);
    v_total := coalesce((select k.n from private.city_bar_counts k where k.city_id = v_city.id), 0);
  end if;

  v_events := private.city_events_today(v_city, v_local::date);
  return json_build_object(
    'city', private.city_json(v_city),
    'bars', (
      select coalesce(json_agg(r.body::json order by u.n), '[]'::json)
      from unnest(v_page) with ordinality u(id, n)
      cross join lateral private.bar_list_row(u.id, p_now) r),
    'events_today', private.events_today_json(v_events, p_events_today_limit),
    'busiest_bars', private.city_busiest_bars(v_city.id, private.minute_of_week(v_local)),
    'pagination', private.pagination_json(p_page, p_per_page, v_total),
    'events_today_total', cardinality(v_events));  -- last: the server reads it off the end of the text
end
$$;

revoke all on function api.bars_by_city(text, text, text, integer, integer, timestamptz,
  boolean, timestamptz, integer[], numeric, text[], integer) from public;
grant execute on function api.bars_by_city(text, text, text, integer, integer, timestamptz,
  boolean, timestamptz, integer[], numeric, text[], integer) to bar_partner;
