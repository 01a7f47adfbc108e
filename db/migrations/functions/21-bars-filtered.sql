-- GET bars with the v1.1 filters (and no ids): the bounded page search of api.bars
-- (21-bars.sql), one function per step, each plpgsql with static SQL (plans cached per
-- connection): private.bars_page_filtered decides; private.bars_filtered_walk_nearest and
-- private.bars_filtered_walk_by_name walk an index over at most 5,000 candidates;
-- private.bars_filtered_collect collects the matches of the region when the walk cannot prove
-- the page. The filter predicates: 21-bar-filters.sql. Repeatable file; see db/CONVENTIONS.md.
-- Called only from api.bars: its search_path (private, public) resolves the earthdistance
-- functions and operators (earth_box, <->) as it did when these statements were its own.

-- The filtered walk in nearest-first order (api.bars with v1.1 filters and a center; see
-- private.bars_page_filtered): a KNN walk of bars_geo over at most p_budget candidates, each
-- tested against bar_live with its city's local minutes (p_minutes_now / p_minutes_at, by city
-- id), stopping at the p_limit-th match, plus the matches tied at the distance of the last one.
-- o_matches < p_limit: the walk did not prove the page (the caller collects instead).
create or replace function private.bars_filtered_walk_nearest(
  p_center public.earth, p_radius_m double precision, p_box box, p_category_id bigint,
  p_minutes_now integer[], p_minutes_at integer[],
  p_open_now boolean, p_open_at timestamptz, p_price_levels integer[], p_min_rating numeric, p_statuses text[],
  p_limit integer, p_budget integer,
  out o_matches bigint, out o_page bigint[]
)
  language plpgsql stable
as $$
declare
  v_chord double precision := private.earth_chord(p_radius_m);  -- for private.within_radius
  v_sort text;
  v_bitmap text;
  v_jit text;
begin
  v_sort := current_setting('enable_sort');
  v_bitmap := current_setting('enable_bitmapscan');
  v_jit := current_setting('jit');
  perform set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true);
  perform set_config('jit', 'off', true);
  if p_radius_m is not null then
    with knn as materialized (
      select w.id, w.d from (
        select b.id, b.geo <-> p_center as d from private.bars b
        where private.radius_box(p_center, p_radius_m) @> b.geo and private.within_radius(p_center, b.geo, p_radius_m, v_chord)
          and (p_category_id is null or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
          and (p_box is null or b.location <@ p_box)
        order by b.geo <-> p_center limit p_budget
      ) w
      join private.bar_live l on l.bar_id = w.id
      where private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                  p_minutes_now[l.city_id], p_minutes_at[l.city_id],
                                  p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
      order by w.d limit p_limit
    ),
    edge as (select max(d) as d, count(*) as n from knn),
    ties as (
      select b.id, b.geo <-> p_center as d
      from edge, private.bars b join private.bar_live l on l.bar_id = b.id
      where edge.n = p_limit
        and earth_box(p_center, sec_to_gc(edge.d) + 1) @> b.geo and (b.geo <-> p_center) = edge.d
        and (p_category_id is null or exists (
              select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
        and (p_box is null or b.location <@ p_box)
        and private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                  p_minutes_now[l.city_id], p_minutes_at[l.city_id],
                                  p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
    )
    select (select n from edge), array(select u.id from (select * from knn union select * from ties) u order by u.d, u.id limit p_limit)
    into o_matches, o_page;
  else
    with knn as materialized (
      select w.id, w.d from (
        select b.id, b.geo <-> p_center as d from private.bars b
        where (p_category_id is null or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
          and (p_box is null or b.location <@ p_box)
        order by b.geo <-> p_center limit p_budget
      ) w
      join private.bar_live l on l.bar_id = w.id
      where private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                  p_minutes_now[l.city_id], p_minutes_at[l.city_id],
                                  p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
      order by w.d limit p_limit
    ),
    edge as (select max(d) as d, count(*) as n from knn),
    ties as (
      select b.id, b.geo <-> p_center as d
      from edge, private.bars b join private.bar_live l on l.bar_id = b.id
      where edge.n = p_limit
        and earth_box(p_center, sec_to_gc(edge.d) + 1) @> b.geo and (b.geo <-> p_center) = edge.d
        and (p_category_id is null or exists (
              select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
        and (p_box is null or b.location <@ p_box)
        and private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                  p_minutes_now[l.city_id], p_minutes_at[l.city_id],
                                  p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
    )
    select (select n from edge), array(select u.id from (select * from knn union select * from ties) u order by u.d, u.id limit p_limit)
    into o_matches, o_page;
  end if;
  perform set_config('enable_sort', v_sort, true), set_config('enable_bitmapscan', v_bitmap, true),
          set_config('jit', v_jit, true);
end
$$;

-- The filtered walk in name order (no center): bars_name_id, at most p_budget candidates and
-- v_name_scan entries; o_matches < p_limit: not proven (the caller collects instead).
create or replace function private.bars_filtered_walk_by_name(
  p_box box, p_category_id bigint,
  p_minutes_now integer[], p_minutes_at integer[],
  p_open_now boolean, p_open_at timestamptz, p_price_levels integer[], p_min_rating numeric, p_statuses text[],
  p_limit integer, p_budget integer,
  out o_matches bigint, out o_page bigint[]
)
  language plpgsql stable
as $$
declare
  v_sort text;
  v_name_scan constant integer := 20000; -- bars_name_id entries a name-order walk reads (~25 ms)
begin
  -- Name order: the walk stops at the p_limit-th match ((name, id) is a total order, so those are
  -- the page), or after p_budget candidates, or after v_name_scan entries of bars_name_id: over a
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
      where (p_box is null or (b.location <@ p_box) is true)  -- not indexable: the walk of bars_name_id
        and (p_category_id is null or exists (
              select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
      order by b.name, b.id limit p_budget
    ) w
    join private.bar_live l on l.bar_id = w.id
    where private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                p_minutes_now[l.city_id], p_minutes_at[l.city_id],
                                p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
    order by w.name, w.id limit p_limit
  )
  select count(*), array(select m.id from m order by m.name, m.id) into o_matches, o_page from m;
  perform set_config('enable_sort', v_sort, true);
end
$$;

-- The filtered path's collect step (private.bars_page_filtered): every match of the region,
-- sorted, when the walk could not prove the page or was skipped. p_few_region: the region was
-- already judged small; p_by_slots / p_open_instant: few bars are open at that instant, read
-- through bar_open_slots.
create or replace function private.bars_filtered_collect(
  p_center public.earth, p_radius_m double precision, p_box box, p_category_id bigint,
  p_minutes_now integer[], p_minutes_at integer[], p_now timestamptz,
  p_open_now boolean, p_open_at timestamptz, p_price_levels integer[], p_min_rating numeric, p_statuses text[],
  p_limit integer, p_few_region boolean, p_by_slots boolean, p_open_instant timestamptz,
  p_indexed boolean, p_indexed_estimate float8, p_intensity_min integer, p_intensity_max integer
) returns bigint[]
  language plpgsql stable
as $$
declare
  v_page bigint[];
  v_few_region boolean := p_few_region;
  v_by_slots boolean := p_by_slots;
  v_open_instant timestamptz := p_open_instant;
  v_indexed boolean := p_indexed;
  v_indexed_estimate float8 := p_indexed_estimate;
  v_intensity_min integer := p_intensity_min;
  v_intensity_max integer := p_intensity_max;
  v_needs_open_now boolean := private.filters_need_open_now(p_open_now, p_statuses);
  v_region_cap constant integer := 20000;  -- bars of a region read row by row rather than through the filters' indexes
  v_filter_cap constant integer := 50000;  -- a region is read rather than this many bars of the filters' indexes
  v_plan_mode text;
begin
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
  elsif p_radius_m is not null then
    v_few_region := (select count(*) from (
      select 1 from private.bars b where private.radius_box(p_center, p_radius_m) @> b.geo limit v_region_cap) x) < v_region_cap;
  elsif p_box is not null then
    v_few_region := (select count(*) from (
      select 1 from private.bars b where b.location <@ p_box limit v_region_cap) x) < v_region_cap;
  end if;
  if not v_few_region and not v_by_slots and (p_open_at is not null or v_needs_open_now) then
    v_open_instant := private.open_instant_of_few(p_open_at, p_now, v_needs_open_now, p_center, p_radius_m, p_box,
                                                     v_region_cap);
    v_by_slots := v_open_instant is not null;
  end if;
  -- the filters' indexes serve a large region only when they are selective (or when there is no
  -- region): min_rating=3.5 holds for 93 % of bars, and reading them cost 790 ms for a New York
  -- box of 24,000 bars
  if v_by_slots
     or (not v_few_region and v_indexed
         and (v_indexed_estimate < v_filter_cap or (p_center is null and p_box is null))) then
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
        from private.open_slot_keys(v_open_instant, p_center, p_radius_m, p_box) k
        join private.bar_open_slots s on s.slot @> k.k
        join private.bar_live l on l.bar_id = s.bar_id
        where v_by_slots
      ),
      g as (
        select f.bar_id from f
        where private.bar_filter_at(f.open_week, f.current_intensity, f.price_level, f.google_rating,
                                    p_minutes_now[f.city_id], p_minutes_at[f.city_id],
                                    p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
      ),
      m as materialized (
        select b.id, b.name, case when p_center is not null then b.geo <-> p_center end as d
        from g join private.bars b on b.id = g.bar_id
        where not v_by_slots
          and private.bar_in_area(b.geo, b.location, p_center, p_radius_m, p_box)
          and (p_category_id is null or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
        union all
        -- the open bars: one primary-key probe each (fewer than v_region_cap; the planner misjudges
        -- both the slots' and the region's row counts and would rather hash the whole region)
        select b.id, b.name, case when p_center is not null then b.geo <-> p_center end as d
        from g cross join lateral (
          select b.id, b.name, b.geo, b.location from private.bars b where b.id = g.bar_id offset 0) b
        where v_by_slots
          and private.bar_in_area(b.geo, b.location, p_center, p_radius_m, p_box)
          and (p_category_id is null or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
      )
      select m.id from m order by m.d, m.name, m.id limit p_limit);
    perform set_config('plan_cache_mode', v_plan_mode, true);
  else
    v_page := array(
      with m as materialized (
        select b.id, b.name, case when p_center is not null then b.geo <-> p_center end as d
        from private.bars b
        join private.bar_live l on l.bar_id = b.id
        where private.bar_filter_at(l.open_week, l.current_intensity, l.price_level, l.google_rating,
                                    p_minutes_now[l.city_id], p_minutes_at[l.city_id],
                                    p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses)
          and private.bar_in_area(b.geo, b.location, p_center, p_radius_m, p_box)
          and (p_category_id is null or exists (
                select 1 from private.bar_categories bc where bc.bar_id = b.id and bc.category_id = p_category_id))
      )
      select m.id from m order by m.d, m.name, m.id limit p_limit);
  end if;
  return v_page;
end
$$;

-- The page of api.bars with v1.1 filters (and no ids), in bounded work: first a walk
-- (private.bars_filtered_walk_nearest or _by_name), else the collect step
-- (private.bars_filtered_collect). The region (center, radius, box, category) is api.bars's;
-- p_category_id null: no category.
create or replace function private.bars_page_filtered(
  p_center public.earth, p_radius_m double precision, p_box box, p_category_id bigint, p_now timestamptz,
  p_open_now boolean, p_open_at timestamptz, p_price_levels integer[], p_min_rating numeric, p_statuses text[],
  p_limit integer
) returns bigint[]
  language plpgsql stable
as $$
declare
  v_page bigint[];
  v_probe integer;
  v_budget constant integer := 5000;  -- candidates of a filtered walk before the set-based evaluation
  v_found bigint;
  v_collect boolean;
  v_few_region boolean;
  v_indexed boolean := p_min_rating is not null or p_price_levels is not null;  -- (or statuses: below)
  v_indexed_estimate float8;               -- bars passing those filters (private.indexed_filters_estimate)
  v_bars float8;                           -- the planner's count of bars (pg_class.reltuples)
  v_open_few constant integer := 2000;     -- bars open at the instant (region's zones), collected at once (no walk)
  v_intensity_min integer;
  v_intensity_max integer;
  v_minutes_now integer[];  -- by city id: its local minute of the week at p_now
  v_minutes_at integer[];   -- and at p_open_at
  v_needs_open_now boolean := private.filters_need_open_now(p_open_now, p_statuses);
  v_open_instant timestamptz;  -- an instant the bars must be open at, with few open then (bar_open_slots)
  v_by_slots boolean := false;
begin
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
  v_collect := (p_center is null and p_box is not null
                and (select count(*) from (select 1 from private.bars b where b.location <@ p_box limit v_probe) x) < v_probe)
            or (p_center is null and p_category_id is not null
                and (select count(*) from (select 1 from private.bar_categories bc where bc.category_id = p_category_id limit v_probe) x) < v_probe);
  v_few_region := v_collect;
  if p_open_at is not null or v_needs_open_now then
    -- few bars of the region's time zones open at the instant (night there): collect those, no walk
    -- (and rather than a region of few bars: an open bar costs what a bar of the region costs)
    v_open_instant := private.open_instant_of_few(p_open_at, p_now, v_needs_open_now, p_center, p_radius_m, p_box, v_open_few);
    v_by_slots := v_open_instant is not null;
    v_collect := v_collect or v_by_slots;
  end if;
  -- a walk meets the indexed filters' matches at about their share of all bars: when the planner
  -- expects fewer than p_limit among v_budget candidates, the walk would end empty-handed (rare
  -- filters within 25 miles of New York: 5,000 candidates, 32 ms), so the matches are collected
  v_collect := v_collect or (v_indexed and v_indexed_estimate < ceil(p_limit * v_bars / v_budget));
  if v_collect then
    null;
  elsif p_center is not null then
    select w.o_matches, w.o_page into v_found, v_page
      from private.bars_filtered_walk_nearest(p_center, p_radius_m, p_box, p_category_id, v_minutes_now, v_minutes_at,
                                              p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses, p_limit, v_budget) w;
    v_collect := v_found < p_limit;
  else
    select w.o_matches, w.o_page into v_found, v_page
      from private.bars_filtered_walk_by_name(p_box, p_category_id, v_minutes_now, v_minutes_at,
                                              p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses, p_limit, v_budget) w;
    v_collect := v_found < p_limit;
  end if;
  if v_collect then
    v_page := private.bars_filtered_collect(p_center, p_radius_m, p_box, p_category_id, v_minutes_now, v_minutes_at, p_now,
                                            p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses, p_limit, v_few_region, v_by_slots, v_open_instant,
                                            v_indexed, v_indexed_estimate, v_intensity_min, v_intensity_max);
  end if;
  return v_page;
end
$$;
