-- GET bars: api.bars (repeatable file; see db/CONVENTIONS.md). Its access paths are in
-- 21-bars-paths.sql and 21-bars-filtered.sql, the filter predicates in 21-bar-filters.sql.
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
-- are collected set-based and sorted (private.bars_page_filtered): through an
-- index of a filter (the open slots, rating, price level, intensity) when the
-- region is large, else region-first. When the filters need a bar open at an
-- instant and fewer than 2,000 bars of the region's time zones are open then
-- (night there), those are collected at once through their open slots, without
-- the walk.
-- The page (ordered ids) is then rendered by one statement.

-- Old signature (v1.0, without the v1.1 filters).
drop function if exists api.bars(text[], text, double precision, double precision, double precision,
  double precision, double precision, double precision, double precision, integer, timestamptz);

-- v1.3 and before returned json; the page is now its JSON text (below), the same bytes.
do $$
begin
  if (select p.prorettype from pg_proc p
      where p.oid = to_regprocedure('api.bars(text[], text, double precision, double precision, double precision,
        double precision, double precision, double precision, double precision, integer, timestamptz,
        boolean, timestamptz, integer[], numeric, text[])')) = 'json'::regtype then
    drop function api.bars(text[], text, double precision, double precision, double precision,
      double precision, double precision, double precision, double precision, integer, timestamptz,
      boolean, timestamptz, integer[], numeric, text[]);
  end if;
end
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
) returns text  -- JSON
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
declare
  v_center earth;
  v_radius_m double precision;
  v_box box;
  v_category_id bigint;
  v_filtered boolean := p_open_now is not null or p_open_at is not null or p_price_levels is not null
                        or p_min_rating is not null or p_statuses is not null;
  v_page bigint[];
  v_n integer;
begin
  if p_category is not null then
    -- the slug resolved once: each candidate bar is then one probe of bar_categories' primary key
    select k.id into v_category_id from private.categories k where k.slug = p_category;
    if v_category_id is null then
      return '{"bars" : []}';  -- an unknown slug matches nothing
    end if;
  end if;
  if p_latitude is not null and p_longitude is not null then
    v_center := private.earth_point(p_latitude, p_longitude);
    v_radius_m := p_radius * 1609.344;
  end if;
  if p_corner1_latitude is not null then
    v_box := box(point(p_corner1_longitude, p_corner1_latitude), point(p_corner2_longitude, p_corner2_latitude));
  end if;

  -- each way of finding the page is its own function (21-bars-paths.sql, 21-bars-filtered.sql)
  if v_filtered and p_ids is null then
    v_page := private.bars_page_filtered(v_center, v_radius_m, v_box, v_category_id, p_now,
                                         p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses, p_limit);
  elsif p_ids is not null then
    v_page := private.bars_page_by_ids(p_ids, v_center, v_radius_m, v_box, v_category_id, v_filtered, p_now,
                                       p_open_now, p_open_at, p_price_levels, p_min_rating, p_statuses, p_limit);
  elsif v_center is not null then
    v_page := private.bars_page_nearest(v_center, p_latitude, p_longitude, v_radius_m, v_box, v_category_id, p_limit);
  elsif v_box is not null then
    v_page := private.bars_page_in_box(v_box, v_category_id, p_limit);
  else
    v_page := private.bars_page_by_name(v_category_id, p_limit);
  end if;

  -- The page as text, byte for byte what json_build_object('bars', json_agg(...)) gives: a json
  -- result would parse each bar's text again (10 % of a 50-bar radius call). The braces go on the
  -- first and last bars' texts, not around the whole page: copying a page of 50 bars (58 KB) twice
  -- more grew and trimmed the backend's heap (brk) on every call, 15 % of a radius call
  -- (docs/performance/2026-12-06-v1.3.md, machine AO).
  v_n := cardinality(v_page);
  return coalesce(
    (select case when count(*) = v_n then
              coalesce(string_agg(case when u.n = 1 and u.n = v_n then '{"bars" : [' || r.body || ']}'
                                       when u.n = 1 then '{"bars" : [' || r.body
                                       when u.n = v_n then r.body || ']}'
                                       else r.body end, ', ' order by u.n), '{"bars" : []}')
            end
     from unnest(v_page) with ordinality u(id, n)
     cross join lateral private.bar_list_row(u.id, p_now) r),
    -- a bar of the page without its document (only inside a bulk load that defers them): the
    -- braces around the bars that have one
    (select '{"bars" : [' || coalesce(string_agg(r.body, ', ' order by u.n), '') || ']}'
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
