-- GET bars (repeatable file; see db/CONVENTIONS.md).
--
-- Filters combine (AND). Order: nearest first when latitude/longitude are given,
-- else the order of `ids`, else name then id.
--
-- Plan caching: plpgsql with static SQL only. Each way of finding the page is
-- its own statement (so its cached generic plan is the right index walk):
--   ids                 primary key probes (bars_pkey), ordered in memory
--   center + radius     KNN walk of bars_geo with the radius box as index condition
--   center              KNN walk of bars_geo
--   box, many bars      walk of bars_name_id with the box as a filter
--   box, few bars       bars_location, then sort
--   category            walk of bars_name_id probing bar_categories' primary key
--   nothing             walk of bars_name_id
-- Filters that never choose the index (category beside a location) are written
-- `(<not given> or <test>)`: a plan-time constant in a custom plan, one boolean
-- test per row in the generic plan.
-- With v1.1 filters (and no ids) the page is found in bounded work instead: the
-- walk above over at most 5,000 candidates, tested row by row; when that cannot
-- prove the page, the matching bars of the region (box, category, radius or all)
-- are collected set-based and sorted (see the block in api.bars): through an
-- index of a filter (the open slots, rating, price level, intensity) when the
-- region is large, else region-first. When the filters need a bar open at an
-- instant and fewer than 2,000 bars of the region's time zones are open then
-- (night there), those are collected at once through their open slots, without
-- the walk.
-- The page (ordered ids) is then rendered by one statement.

-- Old signature (v1.0, without the v1.1 filters).
drop function if exists api.bars(text[], text, double precision, double precision, double precision,
  double precision, double precision, double precision, double precision, integer, timestamptz);

-- The v1.1 filters of GET bars and GET bars_by_city (decisions.md "Filters") on
-- one bar's values: open at an instant is judged in the bar's local time against
-- bar_live.open_week (after-midnight slots run into the next day); status is the
-- current occupancy status (an open bar without occupancy data has none and
-- matches no status). An expression (inlined into the caller).
create or replace function private.bar_filter_ok(
  p_open_week int4multirange, p_intensity smallint, p_time_zone text, p_price_level smallint, p_rating numeric,
  p_now timestamptz, p_open_now boolean, p_open_at timestamptz,
  p_price_levels integer[], p_min_rating numeric, p_statuses text[]
) returns boolean
  language sql stable parallel safe
as $$
  select (p_open_now is null
          or coalesce(p_open_week @> private.minute_of_week(p_now at time zone p_time_zone), false) = p_open_now)
     and (p_open_at is null
          or coalesce(p_open_week @> private.minute_of_week(p_open_at at time zone p_time_zone), false))
     and (p_price_levels is null or coalesce(p_price_level = any (p_price_levels), false))
     and (p_min_rating is null or coalesce(p_rating >= p_min_rating, false))
     and (p_statuses is null
          or coalesce(private.occupancy_status(p_intensity,
               coalesce(p_open_week @> private.minute_of_week(p_now at time zone p_time_zone), false)) = any (p_statuses), false))
$$;

-- The same by bar id (a few primary-key probes). A scalar sub-select, so the
-- planner runs it per candidate row of an index walk and never turns it into a
-- join over every bar.
create or replace function private.bar_filters_match(
  p_bar_id bigint, p_now timestamptz, p_open_now boolean, p_open_at timestamptz,
  p_price_levels integer[], p_min_rating numeric, p_statuses text[]
) returns boolean
  language sql stable parallel safe
as $$
  select coalesce((
    select private.bar_filter_ok(l.open_week, l.current_intensity, d.time_zone, l.price_level, l.google_rating,
                                 p_now, p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
    from private.bar_live l
    join private.bar_documents d on d.bar_id = l.bar_id
    where l.bar_id = p_bar_id), false)
$$;

-- The same test with the local minutes of the week already computed (per city,
-- once per statement: the time-zone conversion is the expensive part of a test
-- over many bars). p_minute_now / p_minute_at: p_now / p_open_at in the bar's
-- city's local time. Equals bar_filter_ok for the bar's time zone.
create or replace function private.bar_filter_at(
  p_open_week int4multirange, p_intensity smallint, p_price_level smallint, p_rating numeric,
  p_minute_now integer, p_minute_at integer, p_open_now boolean, p_open_at timestamptz,
  p_price_levels integer[], p_min_rating numeric, p_statuses text[]
) returns boolean
  language sql immutable parallel safe
as $$
  select (p_open_now is null or coalesce(p_open_week @> p_minute_now, false) = p_open_now)
     and (p_open_at is null or coalesce(p_open_week @> p_minute_at, false))
     and (p_price_levels is null or coalesce(p_price_level = any (p_price_levels), false))
     and (p_min_rating is null or coalesce(p_rating >= p_min_rating, false))
     and (p_statuses is null
          or coalesce(private.occupancy_status(p_intensity, coalesce(p_open_week @> p_minute_now, false)) = any (p_statuses), false))
$$;

-- Whether the filters need a bar open now: open_now=true, or any status but
-- closed (an open bar has one of those; a closed bar only "closed").
create or replace function private.filters_need_open_now(p_open_now boolean, p_statuses text[]) returns boolean
  language sql immutable parallel safe
as $$ select coalesce(p_open_now or (p_statuses is not null and not ('closed' = any (p_statuses))), false) $$;

-- Each city's local minute of the week at p_now and at p_open_at (null when
-- p_open_at is): the time-zone conversion once per city, not per bar. Inlined
-- into the calling statement (SQL, stable, no SET clause).
create or replace function private.city_local_minutes(p_now timestamptz, p_open_at timestamptz)
  returns table (id bigint, m_now integer, m_at integer)
  language sql stable parallel safe
as $$
  select c.id, private.minute_of_week(p_now at time zone c.time_zone),
         private.minute_of_week(p_open_at at time zone c.time_zone)
  from private.cities c
$$;

-- Whether a bar is in the requested area: within the radius of the center and
-- inside the box (each when given). An expression, inlined into the caller
-- (index conditions stay index conditions; a sub-select here would stop the
-- inlining, so the category test stays with the caller).
create or replace function private.bar_in_area(
  p_geo earth, p_location point, p_center earth, p_radius_m double precision, p_box box
) returns boolean
  language sql stable parallel safe
as $$
  select (p_radius_m is null or (earth_box(p_center, p_radius_m) @> p_geo and earth_distance(p_center, p_geo) <= p_radius_m))
     and (p_box is null or p_location <@ p_box)
$$;

-- Whether fewer than p_n bars of the region's time zones (see open_slot_keys)
-- are open at an instant, counted through bar_open_slots (one GiST probe per
-- zone, at most p_n rows).
drop function if exists private.open_bars_fewer_than(timestamptz, integer);
create or replace function private.open_bars_fewer_than(
  p_at timestamptz, p_center earth, p_radius_m double precision, p_box box, p_n integer
) returns boolean
  language sql stable parallel safe
as $$
  select count(*) < p_n from (
    select 1 from private.open_slot_keys(p_at, p_center, p_radius_m, p_box) k
    join private.bar_open_slots s on s.slot @> k.k limit p_n) x
$$;

-- The planner's estimate of the bars passing the filters that have indexes on
-- bar_live (rating, price levels, an intensity range; null: not given), for
-- these values (EXPLAIN, ~0.2 ms): api.bars skips a walk that could not fill
-- the page, and reads a large region's matches through those indexes only when
-- they are selective. (Counting them, even bounded, read 390,000 rows, 130 ms,
-- for price levels 3,4 with rating 4.5.)
drop function if exists private.indexed_filters_fewer_than(numeric, integer[], integer, integer, integer);
create or replace function private.indexed_filters_estimate(
  p_min_rating numeric, p_price_levels integer[], p_intensity_min integer, p_intensity_max integer
) returns float8
  language plpgsql volatile  -- (EXPLAIN is not allowed in a stable function)
as $$
declare
  v_plan json;
begin
  execute 'explain (format json) select 1 from private.bar_live l
           where ($1::numeric is null or l.google_rating >= $1)
             and ($2::integer[] is null or l.price_level = any ($2))
             and ($3::integer is null or l.current_intensity between $3 and $4)'
    into v_plan using p_min_rating, p_price_levels, p_intensity_min, p_intensity_max;
  return (v_plan -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
end
$$;

-- Of the instants the filters need bars open at (open_at; now, for open_now=true
-- or a status other than closed), one at which fewer than p_n bars of the
-- region's time zones are open, or null.
drop function if exists private.open_instant_of_few(timestamptz, timestamptz, boolean, integer);
create or replace function private.open_instant_of_few(
  p_open_at timestamptz, p_now timestamptz, p_needs_open_now boolean,
  p_center earth, p_radius_m double precision, p_box box, p_n integer
) returns timestamptz
  language sql stable parallel safe
as $$
  select case
    when p_open_at is not null and private.open_bars_fewer_than(p_open_at, p_center, p_radius_m, p_box, p_n) then p_open_at
    when p_needs_open_now and private.open_bars_fewer_than(p_now, p_center, p_radius_m, p_box, p_n) then p_now end
$$;

create or replace function api.bars(
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
  p_now timestamptz default now(),
  p_open_now boolean default null,
  p_open_at timestamptz default null,
  p_price_levels integer[] default null,
  p_min_rating numeric default null,
  p_statuses text[] default null
) returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
declare
  v_ids bigint[];
  v_center earth;
  v_radius_m double precision;
  v_box box;
  v_has_category boolean := p_category is not null;
  v_category_id bigint;
  v_filtered boolean := p_open_now is not null or p_open_at is not null or p_price_levels is not null
                        or p_min_rating is not null or p_statuses is not null;
  v_page bigint[];
  v_probe integer;
  v_sort text;
  v_bitmap text;
  v_jit text;
  v_budget constant integer := 5000;  -- candidates of a filtered walk before the set-based evaluation
  v_name_scan constant integer := 20000; -- bars_name_id entries a name-order walk reads (~25 ms)
  v_found bigint;
  v_collect boolean;
  v_few_region boolean;
  v_region_cap constant integer := 20000;  -- bars of a region read row by row rather than through the filters' indexes
  v_filter_cap constant integer := 50000;  -- a region is read rather than this many bars of the filters' indexes
  v_indexed boolean := p_min_rating is not null or p_price_levels is not null;  -- (or statuses: below)
  v_indexed_estimate float8;               -- bars passing those filters (private.indexed_filters_estimate)
  v_bars float8;                           -- the planner's count of bars (pg_class.reltuples)
  v_open_few constant integer := 2000;     -- bars open at the instant (region's zones), collected at once (no walk)
  v_intensity_min integer;
  v_intensity_max integer;
  v_plan_mode text;
  v_minutes_now integer[];  -- by city id: its local minute of the week at p_now
  v_minutes_at integer[];   -- and at p_open_at
  v_needs_open_now boolean := private.filters_need_open_now(p_open_now, p_statuses);
  v_open_instant timestamptz;  -- an instant the bars must be open at, with few open then (bar_open_slots)
  v_by_slots boolean := false;
begin
  if v_has_category then
    -- the slug resolved once: each candidate bar is then one probe of bar_categories' primary key
    select k.id into v_category_id from private.categories k where k.slug = p_category;
    if v_category_id is null then
      return json_build_object('bars', '[]'::json);  -- an unknown slug matches nothing
    end if;
  end if;
  if p_latitude is not null and p_longitude is not null then
    v_center := private.earth_point(p_latitude, p_longitude);
    v_radius_m := p_radius * 1609.344;
  end if;
  if p_corner1_latitude is not null then
    v_box := box(point(p_corner1_longitude, p_corner1_latitude), point(p_corner2_longitude, p_corner2_latitude));
  end if;

  if v_filtered and p_ids is null then
    -- The v1.1 filters, bounded. Testing each candidate of an index walk visits
    -- up to every bar when few match (1M bars: 17 s for a radius, 96 s without a
    -- location). So: first the walk, tested row by row against bar_live (each
    -- city's local minute of the week computed once per call, not per row), stops
    -- at the p_limit-th match or after v_budget candidates. p_limit matches are
    -- the page (name order: (name, id) is a total order; nearest first: plus the
    -- matches tied at the distance of the last one, as the unfiltered walk).
    -- Otherwise few bars match, and they are collected (see v_collect below).
    -- each city's local minutes, by city id, for every statement below (the walks stream: a join
    -- would lose their order)
    select array_agg(t.m_now order by g.id), array_agg(t.m_at order by g.id)
      into v_minutes_now, v_minutes_at
      from generate_series(1, (select max(c.id) from private.cities c)) g(id)
      left join private.city_local_minutes(p_now, p_open_at) t on t.id = g.id;
    v_bars := greatest((select c.reltuples from pg_class c where c.oid = 'private.bars'::regclass), 1);
    v_probe := greatest(1000, sqrt(p_limit::float8 * v_bars)::int);
    if p_statuses is not null and not ('closed' = any (p_statuses)) then
      -- the intensities (0-100, occupancy's check) an open bar has in the asked statuses
      select min(i), max(i) into v_intensity_min, v_intensity_max
        from generate_series(0, 100) i
        where private.occupancy_status(i, true) = any (p_statuses);
    end if;
    v_indexed := v_indexed or v_intensity_min is not null;
    if v_indexed then
      v_indexed_estimate := private.indexed_filters_estimate(p_min_rating, p_price_levels, v_intensity_min, v_intensity_max);
    end if;
    -- a box or a category of few bars is collected whole (as the unfiltered box path judges "few")
    v_collect := (v_center is null and v_box is not null
                  and (select count(*) from (select 1 from private.bars b where b.location <@ v_box limit v_probe) x) < v_probe)
              or (v_center is null and v_has_category
                  and (select count(*) from (select 1 from private.bar_categories bc where bc.category_id = v_category_id limit v_probe) x) < v_probe);
    v_few_region := v_collect;
    if p_open_at is not null or v_needs_open_now then
      -- few bars of the region's time zones open at the instant (night there): collect those, no walk
      -- (and rather than a region of few bars: an open bar costs what a bar of the region costs)
      v_open_instant := private.open_instant_of_few(p_open_at, p_now, v_needs_open_now, v_center, v_radius_m, v_box, v_open_few);
      v_by_slots := v_open_instant is not null;
      v_collect := v_collect or v_by_slots;
    end if;
    -- a walk meets the indexed filters' matches at about their share of all bars: when the planner
    -- expects fewer than p_limit among v_budget candidates, the walk would end empty-handed (rare
    -- filters within 25 miles of New York: 5,000 candidates, 32 ms), so the matches are collected
    v_collect := v_collect or (v_indexed and v_indexed_estimate < ceil(p_limit * v_bars / v_budget));
    if v_collect then
      null;
    elsif v_center is not null then
      v_sort := current_setting('enable_sort');
      v_bitmap := current_setting('enable_bitmapscan');
      v_jit := current_setting('jit');
      perform set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true);
      perform set_config('jit', 'off', true);
      if v_radius_m is not null then
        with knn as materialized (
          select w.id, w.d from (
            select b.id, b.geo <-> v_center as d from private.bars b
            where earth_box(v_center, v_radius_m) @> b.geo and earth_distance(v_center, b.geo) <= v_radius_m
              and (not v_has_category or exists (
                    select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
              and (v_box is null or b.location <@ v_box)
            order by b.geo <-> v_center limit v_budget
          ) w
          join private.bar_live l on l.bar_id = w.id
          where private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                      v_minutes_now[l.city_id], v_minutes_at[l.city_id],
                                      p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
          order by w.d limit p_limit
        ),
        edge as (select max(d) as d, count(*) as n from knn),
        ties as (
          select b.id, b.geo <-> v_center as d
          from edge, private.bars b join private.bar_live l on l.bar_id = b.id
          where edge.n = p_limit
            and earth_box(v_center, sec_to_gc(edge.d) + 1) @> b.geo and (b.geo <-> v_center) = edge.d
            and (not v_has_category or exists (
                  select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
            and (v_box is null or b.location <@ v_box)
            and private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                      v_minutes_now[l.city_id], v_minutes_at[l.city_id],
                                      p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
        )
        select (select n from edge), array(select u.id from (select * from knn union select * from ties) u order by u.d, u.id limit p_limit)
        into v_found, v_page;
      else
        with knn as materialized (
          select w.id, w.d from (
            select b.id, b.geo <-> v_center as d from private.bars b
            where (not v_has_category or exists (
                    select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
              and (v_box is null or b.location <@ v_box)
            order by b.geo <-> v_center limit v_budget
          ) w
          join private.bar_live l on l.bar_id = w.id
          where private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                      v_minutes_now[l.city_id], v_minutes_at[l.city_id],
                                      p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
          order by w.d limit p_limit
        ),
        edge as (select max(d) as d, count(*) as n from knn),
        ties as (
          select b.id, b.geo <-> v_center as d
          from edge, private.bars b join private.bar_live l on l.bar_id = b.id
          where edge.n = p_limit
            and earth_box(v_center, sec_to_gc(edge.d) + 1) @> b.geo and (b.geo <-> v_center) = edge.d
            and (not v_has_category or exists (
                  select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
            and (v_box is null or b.location <@ v_box)
            and private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                      v_minutes_now[l.city_id], v_minutes_at[l.city_id],
                                      p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
        )
        select (select n from edge), array(select u.id from (select * from knn union select * from ties) u order by u.d, u.id limit p_limit)
        into v_found, v_page;
      end if;
      perform set_config('enable_sort', v_sort, true), set_config('enable_bitmapscan', v_bitmap, true),
              set_config('jit', v_jit, true);
      v_collect := v_found < p_limit;
    else
      -- Name order: the walk stops at the p_limit-th match ((name, id) is a total order, so those are
      -- the page), or after v_budget candidates, or after v_name_scan entries of bars_name_id: over a
      -- box it reads about N / (bars in the box) entries per candidate (a dense New York box with
      -- rare statuses: 180,000 entries, 225 ms, for 5,000 candidates). The matches within the entries
      -- read are the first in name order all the same; fewer than p_limit go to the collect step. The
      -- box's fixed selectivity estimate would have the planner sort the box instead: sorting is off.
      v_sort := current_setting('enable_sort');
      perform set_config('enable_sort', 'off', true);
      with m as (
        select w.id, w.name
        from (
          select b.id, b.name
          from (select b.id, b.name, b.location from private.bars b order by b.name, b.id limit v_name_scan) b
          where (v_box is null or (b.location <@ v_box) is true)  -- not indexable: the walk of bars_name_id
            and (not v_has_category or exists (
                  select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
          order by b.name, b.id limit v_budget
        ) w
        join private.bar_live l on l.bar_id = w.id
        where private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                    v_minutes_now[l.city_id], v_minutes_at[l.city_id],
                                    p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
        order by w.name, w.id limit p_limit
      )
      select count(*), array(select m.id from m order by m.name, m.id) into v_found, v_page from m;
      perform set_config('enable_sort', v_sort, true);
      v_collect := v_found < p_limit;
    end if;

    if v_collect then
      -- Few bars of the region match: every match of the region is collected,
      -- then sorted. In a large region (over v_region_cap bars, or no region),
      -- when a filter has an index, the matches are found through it first:
      -- the bars open at the asked instant through bar_open_slots (one GiST
      -- probe per time zone the region meets) when fewer than v_region_cap are
      -- open; else the rating, the price levels, the intensity range of the
      -- asked statuses ("closed" aside). A custom plan, so the filters not
      -- given and the source not taken fold away and only index conditions
      -- remain (planned per call: this path is rare). Otherwise the region is
      -- read and tested row by row.
      -- a region of fewer bars than the cap is read region-first (bounded work)
      if v_few_region or v_by_slots then
        null;
      elsif v_radius_m is not null then
        v_few_region := (select count(*) from (
          select 1 from private.bars b where earth_box(v_center, v_radius_m) @> b.geo limit v_region_cap) x) < v_region_cap;
      elsif v_box is not null then
        v_few_region := (select count(*) from (
          select 1 from private.bars b where b.location <@ v_box limit v_region_cap) x) < v_region_cap;
      end if;
      if not v_few_region and not v_by_slots and (p_open_at is not null or v_needs_open_now) then
        v_open_instant := private.open_instant_of_few(p_open_at, p_now, v_needs_open_now, v_center, v_radius_m, v_box,
                                                         v_region_cap);
        v_by_slots := v_open_instant is not null;
      end if;
      -- the filters' indexes serve a large region only when they are selective (or when there is no
      -- region): min_rating=3.5 holds for 93 % of bars, and reading them cost 790 ms for a New York
      -- box of 24,000 bars
      if v_by_slots
         or (not v_few_region and v_indexed
             and (v_indexed_estimate < v_filter_cap or (v_center is null and v_box is null))) then
        v_plan_mode := current_setting('plan_cache_mode');
        perform set_config('plan_cache_mode', 'force_custom_plan', true);
        v_page := array(
          with f as materialized (
            select l.bar_id, l.open_week, l.current_intensity, l.price_level, l.google_rating, l.city_id
            from private.bar_live l
            where not v_by_slots
              and (p_min_rating is null or l.google_rating >= p_min_rating)
              and (p_price_levels is null or l.price_level = any (p_price_levels))
              and (v_intensity_min is null or l.current_intensity between v_intensity_min and v_intensity_max)
            union all
            select l.bar_id, l.open_week, l.current_intensity, l.price_level, l.google_rating, l.city_id
            from private.open_slot_keys(v_open_instant, v_center, v_radius_m, v_box) k
            join private.bar_open_slots s on s.slot @> k.k
            join private.bar_live l on l.bar_id = s.bar_id
            where v_by_slots
          ),
          g as (
            select f.bar_id from f
            where private.bar_filter_at(f.open_week, f.current_intensity, f.price_level, f.google_rating,
                                        v_minutes_now[f.city_id], v_minutes_at[f.city_id],
                                        p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
          ),
          m as materialized (
            select b.id, b.name, case when v_center is not null then b.geo <-> v_center end as d
            from g join private.bars b on b.id = g.bar_id
            where not v_by_slots
              and private.bar_in_area(b.geo, b.location, v_center, v_radius_m, v_box)
              and (not v_has_category or exists (
                    select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
            union all
            -- the open bars: one primary-key probe each (fewer than v_region_cap; the planner misjudges
            -- both the slots' and the region's row counts and would rather hash the whole region)
            select b.id, b.name, case when v_center is not null then b.geo <-> v_center end as d
            from g cross join lateral (
              select b.id, b.name, b.geo, b.location from private.bars b where b.id = g.bar_id offset 0) b
            where v_by_slots
              and private.bar_in_area(b.geo, b.location, v_center, v_radius_m, v_box)
              and (not v_has_category or exists (
                    select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
          )
          select m.id from m order by m.d, m.name, m.id limit p_limit);
        perform set_config('plan_cache_mode', v_plan_mode, true);
      else
        v_page := array(
          with m as materialized (
            select b.id, b.name, case when v_center is not null then b.geo <-> v_center end as d
            from private.bars b
            join private.bar_live l on l.bar_id = b.id
            where private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                        v_minutes_now[l.city_id], v_minutes_at[l.city_id],
                                        p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
              and private.bar_in_area(b.geo, b.location, v_center, v_radius_m, v_box)
              and (not v_has_category or exists (
                    select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
          )
          select m.id from m order by m.d, m.name, m.id limit p_limit);
      end if;
    end if;

  elsif p_ids is not null then
    select coalesce(array_agg(private.bar_id_or_null(i) order by n) filter (where private.bar_id_or_null(i) is not null), '{}')
      into v_ids from unnest(p_ids) with ordinality u(i, n);
    v_page := array(
      select b.id from private.bars b
      where b.id = any (v_ids)
        and (not v_has_category or exists (
              select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
        and (v_radius_m is null or (earth_box(v_center, v_radius_m) @> b.geo and earth_distance(v_center, b.geo) <= v_radius_m))
        and (v_box is null or b.location <@ v_box)
        and (not v_filtered or private.bar_filters_match(b.id, p_now, p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses))
      order by case when v_center is null then array_position(v_ids, b.id) end, b.geo <-> v_center, b.id
      limit p_limit);

  elsif v_center is not null then
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
    if v_radius_m is not null then
      with knn as (
        select b.id, b.geo <-> v_center as d from private.bars b
        where earth_box(v_center, v_radius_m) @> b.geo and earth_distance(v_center, b.geo) <= v_radius_m
          and (not v_has_category or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
          and (v_box is null or b.location <@ v_box)
        order by b.geo <-> v_center limit p_limit
      ),
      edge as (select max(d) as d, count(*) as n from knn),
      ties as (
        select b.id, b.geo <-> v_center as d from private.bars b, edge
        where edge.n = p_limit
          and earth_box(v_center, v_radius_m) @> b.geo and earth_distance(v_center, b.geo) <= v_radius_m
          and (not v_has_category or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
          and (v_box is null or b.location <@ v_box)
          and earth_box(v_center, sec_to_gc(edge.d) + 1) @> b.geo and (b.geo <-> v_center) = edge.d
      )
      select array(select u.id from (select * from knn union select * from ties) u order by u.d, u.id limit p_limit)
      into v_page;
    else
      with knn as (
        select b.id, b.geo <-> v_center as d from private.bars b
        where (not v_has_category or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
          and (v_box is null or b.location <@ v_box)
        order by b.geo <-> v_center limit p_limit
      ),
      edge as (select max(d) as d, count(*) as n from knn),
      ties as (
        select b.id, b.geo <-> v_center as d from private.bars b, edge
        where edge.n = p_limit
          and (not v_has_category or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
          and (v_box is null or b.location <@ v_box)
          and earth_box(v_center, sec_to_gc(edge.d) + 1) @> b.geo and (b.geo <-> v_center) = edge.d
      )
      select array(select u.id from (select * from knn union select * from ties) u order by u.d, u.id limit p_limit)
      into v_page;
    end if;
    perform set_config('enable_sort', v_sort, true), set_config('enable_bitmapscan', v_bitmap, true),
            set_config('jit', v_jit, true);

  elsif v_box is not null then
    -- Name order over a box: collecting the box from bars_location and sorting
    -- costs ~k (bars in the box); walking bars_name_id with the box as a filter
    -- costs ~limit * N / k. Probe for k >= sqrt(limit * N) to choose.
    v_probe := greatest(1000, sqrt(p_limit::float8 * greatest((select c.reltuples from pg_class c where c.oid = 'private.bars'::regclass), 1))::int);
    if (select count(*) from (select 1 from private.bars b where b.location <@ v_box limit v_probe) x) = v_probe then
      v_page := array(
        select b.id from private.bars b
        where (b.location <@ v_box) is true  -- not indexable: the walk of bars_name_id
          and (not v_has_category or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
        order by b.name, b.id
        limit p_limit);
    else
      v_page := array(
        select b.id from private.bars b
        where b.location <@ v_box
          and (not v_has_category or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id))
        order by b.name, b.id
        limit p_limit);
    end if;

  elsif v_has_category then
    v_page := array(
      select b.id from private.bars b
      where exists (select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = v_category_id)
      order by b.name, b.id
      limit p_limit);

  else
    v_page := array(
      select b.id from private.bars b
      order by b.name, b.id
      limit p_limit);
  end if;

  return json_build_object('bars', (
    select coalesce(json_agg(r.body order by u.n), '[]'::json)
    from unnest(v_page) with ordinality u(id, n)
    cross join lateral private.bar_list_row(u.id, p_now) r));
end
$$;

revoke all on function api.bars(text[], text, double precision, double precision, double precision,
  double precision, double precision, double precision, double precision, integer, timestamptz,
  boolean, timestamptz, integer[], numeric, text[]) from public;
grant execute on function api.bars(text[], text, double precision, double precision, double precision,
  double precision, double precision, double precision, double precision, integer, timestamptz,
  boolean, timestamptz, integer[], numeric, text[]) to bar_partner;
