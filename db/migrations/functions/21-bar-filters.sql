-- The v1.1 filters of GET bars and GET bars_by_city (decisions.md "Filters"): the predicates
-- and the estimates the filtered paths use (21-bars-filtered.sql, 23-bars-by-city.sql).
-- Repeatable file; see db/CONVENTIONS.md.

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

-- Whether a bar is within p_radius_m metres (great circle) of p_center, for the nearest-first walks,
-- given p_chord = gc_to_sec(p_radius_m), computed once per call. earth_distance(c, g) <= r is
-- sec_to_gc(g <-> c) <= r, and sec_to_gc is an SQL function the planner cannot inline (strict, over a
-- CASE): it ran once per bar walked. Here the straight-line distance g <-> c (which the walk computes
-- anyway) decides, and earth_distance only for a bar within a billionth of the edge, where rounding
-- could decide otherwise: the answers are earth_distance's. An expression, inlined into the caller.
create or replace function private.within_radius(
  p_center earth, p_geo earth, p_radius_m double precision, p_chord double precision
) returns boolean
  language sql immutable parallel safe
as $$
  select ((p_geo <-> p_center) <= p_chord * (1 - 1e-9) and p_radius_m > 0)
      or ((p_geo <-> p_center) <= p_chord * (1 + 1e-9) and earth_distance(p_center, p_geo) <= p_radius_m)
$$;

-- Whether a bar is in the requested area: within the radius of the center and
-- inside the box (each when given). An expression, inlined into the caller
-- (index conditions stay index conditions; a sub-select here would stop the
-- inlining, so the category test stays with the caller). The radius is decided
-- by private.within_radius, not earth_distance: the collect step tests every bar
-- of its region, and earth_distance's sec_to_gc (never inlined) cost 137,931 calls
-- for a 25 mi New York radius (285 -> 140 ms at 1M bars, docs/performance/2026-12-06-v1.3.md).
create or replace function private.bar_in_area(
  p_geo earth, p_location point, p_center earth, p_radius_m double precision, p_box box
) returns boolean
  language sql stable parallel safe
as $$
  select (p_radius_m is null or (private.radius_box(p_center, p_radius_m) @> p_geo
                                 and private.within_radius(p_center, p_geo, p_radius_m, private.earth_chord(p_radius_m))))
     and (p_box is null or p_location <@ p_box)
$$;

-- Whether fewer than p_n bars of the region's time zones (see open_slot_keys)
-- are open at an instant, counted through bar_open_slots (one GiST probe per
-- zone, at most p_n rows). plpgsql: its plan is kept (as SQL with a FROM,
-- called as a value, it was planned again on every call).
drop function if exists private.open_bars_fewer_than(timestamptz, integer);
create or replace function private.open_bars_fewer_than(
  p_at timestamptz, p_center earth, p_radius_m double precision, p_box box, p_n integer
) returns boolean
  language plpgsql stable parallel safe
as $$
begin
  return (
    select count(*) < p_n from (
      select 1 from private.open_slot_keys(p_at, p_center, p_radius_m, p_box) k
      join private.bar_open_slots s on s.slot @> k.k limit p_n) x);
end
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
