-- GET bars without the v1.1 filters (or with ids): api.bars's access paths (21-bars.sql), one
-- function each, each plpgsql with static SQL so that its cached generic plan is the right
-- index walk (see the header of 21-bars.sql). Repeatable file; see db/CONVENTIONS.md.
-- Called only from api.bars: its search_path (private, public) resolves the earthdistance
-- functions and operators (earth_box, <->) as it did when these statements were its own.

-- GET bars?ids=: primary key probes (bars_pkey), in the order of ids (nearest first with a
-- center), with every other filter as a residual test.
create or replace function private.bars_page_by_ids(
  p_ids text[], p_center public.earth, p_radius_m double precision, p_box box, p_category_id bigint,
  p_filtered boolean, p_now timestamptz,
  p_open_now boolean, p_open_at timestamptz, p_price_levels integer[], p_min_rating numeric, p_statuses text[],
  p_limit integer
) returns bigint[]
  language plpgsql stable
as $$
declare
  v_ids bigint[];
  v_page bigint[];
begin
  select coalesce(array_agg(private.bar_id_or_null(i) order by n) filter (where private.bar_id_or_null(i) is not null), '{}')
    into v_ids from unnest(p_ids) with ordinality u(i, n);
  v_page := array(
    select b.id from private.bars b
    where b.id = any (v_ids)
      and (p_category_id is null or exists (
            select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
      and (p_radius_m is null or (private.radius_box(p_center, p_radius_m) @> b.geo and earth_distance(p_center, b.geo) <= p_radius_m))
      and (p_box is null or b.location <@ p_box)
      and (not p_filtered or private.bar_filters_match(b.id, p_now, p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses))
    order by case when p_center is null then array_position(v_ids, b.id) end, b.geo <-> p_center, b.id
    limit p_limit);
  return v_page;
end
$$;

-- The latitude/longitude box holding every point within p_chord (a straight-line distance, as
-- cube's <->) of (p_latitude, p_longitude), widened by a relative 1e-7 against rounding. The widest
-- longitude of a circle of angular radius r around latitude f is asin(sin r / cos f) (on the sphere
-- earth_point places bars on). Null where the circle crosses the antimeridian (no box of the plane
-- holds it) or reaches beyond 70 degrees of latitude: a degree of longitude shrinks with cos f, and
-- the box of a walk's bound holds up to 4 / (pi cos f) times the walk's bars (3.7 at 70 degrees).
create or replace function private.radius_latlon_box(
  p_latitude double precision, p_longitude double precision, p_chord double precision
) returns box
  language plpgsql immutable parallel safe  -- (an SQL body over a sub-select would be planned on every call)
as $$
declare
  v_r double precision := 2 * asin(least(1, greatest(p_chord, 0) / (2 * public.earth()))) * (1 + 1e-7) + 1e-12;
  v_dlat double precision := degrees(v_r);
  v_dlon double precision;
begin
  if abs(p_latitude) + v_dlat >= 70 then
    return null;
  end if;
  v_dlon := degrees(asin(sin(v_r) / cos(radians(p_latitude))));
  if abs(p_longitude) + v_dlon >= 180 then
    return null;
  end if;
  return box(point(p_longitude - v_dlon, p_latitude - v_dlat), point(p_longitude + v_dlon, p_latitude + v_dlat));
end
$$;

-- GET bars nearest first (a center, optionally a radius, a box, a category).
drop function if exists private.bars_page_nearest(public.earth, double precision, box, bigint, integer);
create or replace function private.bars_page_nearest(
  p_center public.earth, p_latitude double precision, p_longitude double precision, p_radius_m double precision,
  p_box box, p_category_id bigint, p_limit integer
) returns bigint[]
  language plpgsql stable
  -- planned once per connection: the custom plans it chose by itself were planned on every call
  -- (0.28 ms, half of the walk; they were no better: the walk below is the only plan sorting allows)
  set plan_cache_mode = force_generic_plan
as $$
declare
  v_ids bigint[];
  v_ds double precision[];
  v_page bigint[];
  v_cube public.cube;
  v_chord double precision;
  v_span box;
  v_bound double precision;
  v_walked integer;
  v_sort text;
  v_bitmap text;
  v_jit text;
begin
  -- Otherwise nearest first is a KNN walk of bars_geo (ORDER BY the distance operator alone;
  -- "b.id" as a second key would turn it into a sort of every bar in range) of
  -- one bar more than the page, ordered by distance, id. When that extra bar is
  -- farther than the page's last, no bar outside the walk ties with it and the
  -- page is the walk's first p_limit; else (a tie at the edge, rare) the bars at
  -- the edge's distance are collected too. The planner misjudges the box (a fixed
  -- selectivity) and would rather sort, so sorting and bitmap scans are off here.
  v_sort := current_setting('enable_sort');
  v_bitmap := current_setting('enable_bitmapscan');
  v_jit := current_setting('jit');
  perform set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true);
  -- disabled plan types inflate the cost estimate past jit_above_cost: a JIT compile costs ~1 s
  perform set_config('jit', 'off', true);
  if p_radius_m is not null then
    -- the radius tested without an SQL function per bar (private.within_radius); the box computed once
    v_chord := private.earth_chord(p_radius_m);
    if p_category_id is null and p_box is null then
      v_span := private.radius_latlon_box(p_latitude, p_longitude, v_chord * (1 + 1e-9));
    end if;
  end if;
  if v_span is not null then
    -- Within a radius, without a category or a box, below 70 degrees of latitude and away from the
    -- antimeridian (radius_latlon_box): the first p_limit + 1 bars of a walk of the
    -- plane (degrees; bars_location_near, index-only) bound the page: when all of them are within
    -- the radius, no bar of the page is farther than the farthest of them. The page is then every
    -- bar of that bound's latitude/longitude box within the radius, by distance, id (a few times
    -- p_limit bars). Same page as the walk of bars_geo below, a third of its time at 1M bars.
    select max(w.geo <-> p_center), count(*) into v_bound, v_walked from (
      select b.geo from private.bars b
      where b.location <@ v_span
      order by b.location <-> point(p_longitude, p_latitude) limit p_limit + 1) w;
    if v_walked = p_limit + 1 and v_bound < v_chord * (1 - 1e-9) then
      v_span := private.radius_latlon_box(p_latitude, p_longitude, v_bound);
    end if;
    -- (every bar tied with the page's last is in that box: the page is complete, ties by id)
    v_page := coalesce((select (array_agg(k.id order by k.d, k.id))[1:p_limit] from (
      select b.id, b.geo <-> p_center as d from private.bars b
      where b.location <@ v_span and private.within_radius(p_center, b.geo, p_radius_m, v_chord)) k), '{}');
  elsif p_radius_m is not null then
    v_cube := private.radius_box(p_center, p_radius_m);
    select array_agg(k.id order by k.d, k.id), array_agg(k.d order by k.d, k.id) into v_ids, v_ds from (
      select b.id, b.geo <-> p_center as d from private.bars b
      where v_cube @> b.geo and private.within_radius(p_center, b.geo, p_radius_m, v_chord)
        and (p_category_id is null or exists (
              select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
        and (p_box is null or b.location <@ p_box)
      order by b.geo <-> p_center limit p_limit + 1) k;
  else
    select array_agg(k.id order by k.d, k.id), array_agg(k.d order by k.d, k.id) into v_ids, v_ds from (
      select b.id, b.geo <-> p_center as d from private.bars b
      where (p_category_id is null or exists (
              select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
        and (p_box is null or b.location <@ p_box)
      order by b.geo <-> p_center limit p_limit + 1) k;
  end if;
  if v_span is not null then
    null;  -- the page from the plane's walk, above
  elsif coalesce(cardinality(v_ds), 0) <= p_limit or v_ds[p_limit + 1] > v_ds[p_limit] then
    v_page := coalesce(v_ids[1:p_limit], '{}');
  else
    -- a tie at the edge: every bar at the edge's distance, by id
    v_page := array(
      select u.id from (
        select k.id, k.d from unnest(v_ids, v_ds) k(id, d) where k.d < v_ds[p_limit]
        union all
        select b.id, b.geo <-> p_center from private.bars b
        where earth_box(p_center, sec_to_gc(v_ds[p_limit]) + 1) @> b.geo and (b.geo <-> p_center) = v_ds[p_limit]
          and (p_radius_m is null or earth_distance(p_center, b.geo) <= p_radius_m)
          and (p_category_id is null or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
          and (p_box is null or b.location <@ p_box)) u
      order by u.d, u.id limit p_limit);
  end if;
  perform set_config('enable_sort', v_sort, true), set_config('enable_bitmapscan', v_bitmap, true),
          set_config('jit', v_jit, true);
  return v_page;
end
$$;

-- GET bars in a box, name order (optionally a category).
create or replace function private.bars_page_in_box(p_box box, p_category_id bigint, p_limit integer) returns bigint[]
  language plpgsql stable
as $$
declare
  v_page bigint[];
  v_probe integer;
begin
  -- Name order over a box: collecting the box from bars_location and sorting
  -- costs ~k (bars in the box); walking bars_name_id with the box as a filter
  -- costs ~limit * N / k. Probe for k >= sqrt(limit * N) to choose.
  v_probe := greatest(1000, sqrt(p_limit::float8 * greatest((select c.reltuples from pg_class c where c.oid = 'private.bars'::regclass), 1))::int);
  if (select count(*) from (select 1 from private.bars b where b.location <@ p_box limit v_probe) x) = v_probe then
    v_page := array(
      select b.id from private.bars b
      where (b.location <@ p_box) is true  -- not indexable: the walk of bars_name_id
        and (p_category_id is null or exists (
              select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
      order by b.name, b.id
      limit p_limit);
  else
    v_page := array(
      select b.id from private.bars b
      where b.location <@ p_box
        and (p_category_id is null or exists (
              select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
      order by b.name, b.id
      limit p_limit);
  end if;
  return v_page;
end
$$;

-- GET bars in name order: a category's bars (a walk of bars_name_id probing bar_categories'
-- primary key), or every bar (a walk of bars_name_id).
create or replace function private.bars_page_by_name(p_category_id bigint, p_limit integer) returns bigint[]
  language plpgsql stable
as $$
declare
  v_page bigint[];
begin
  if p_category_id is not null then
    v_page := array(
      select b.id from private.bars b
      where exists (select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id)
      order by b.name, b.id
      limit p_limit);
  else
    v_page := array(
      select b.id from private.bars b
      order by b.name, b.id
      limit p_limit);
  end if;
  return v_page;
end
$$;
