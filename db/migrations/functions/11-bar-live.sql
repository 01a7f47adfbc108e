-- bar_live maintenance (repeatable file; the table is in committed 000002).
-- One row per bar: city, name, current intensity, the weekly open minutes and the
-- `hours` object, kept exact by statement-level triggers on bars, occupancy and
-- opening_hours (created in 000002). Current source of the trigger function;
-- changes: TRUNCATE of opening_hours also clears the stored `hours` objects
-- (they were left as before; readers fall back to opening_hours when null);
-- price_level and google_rating are kept too (the v1.1 filters); and the bars'
-- open slots keyed by time zone (bar_open_slots, the "open at an instant" index
-- of the filters) and the time zones' extents (migration 000009). A bulk load
-- may defer all of it (private.defer_bar_live) and call private.bar_live_rebuild()
-- once at its end, as the seed does.

-- The weekly open minutes and the `hours` object of these bars, from their
-- opening hours (a bar without any: no minutes, seven empty days). Bars with the
-- same hours (their rows as one text key) share one computation: a rebuild of a
-- million bars computes a few thousand distinct weeks, not a million.
create or replace function private.bar_weeks(p_bar_ids bigint[])
  returns table (bar_id bigint, open_week int4multirange, hours json)
  language sql stable
as $$
  with ids as (select distinct u.bar_id from unnest(p_bar_ids) u(bar_id)),
  week as (
    select h.bar_id,
           string_agg(concat_ws(' ', h.day_of_week, h.opens, h.closes), ',' order by h.day_of_week, h.opens, h.closes) as k
    from private.opening_hours h join ids on ids.bar_id = h.bar_id
    group by h.bar_id),
  one as (select distinct on (w.k) w.k, w.bar_id from week w order by w.k, w.bar_id),
  minutes as (
    select o.k, range_agg(r) as open_week
    from one o join private.opening_hours h on h.bar_id = o.bar_id
    cross join lateral unnest(private.slot_minutes(h.day_of_week, h.opens, h.closes)) r
    group by o.k),
  objects as (
    select o.k, private.hours_object(array_agg(h.day_of_week), array_agg(h.opens), array_agg(h.closes)) as hours
    from one o join private.opening_hours h on h.bar_id = o.bar_id
    group by o.k)
  select t.bar_id, coalesce(m.open_week, '{}'),
         coalesce(j.hours, json_build_object('monday', '[]'::json, 'tuesday', '[]'::json, 'wednesday', '[]'::json,
           'thursday', '[]'::json, 'friday', '[]'::json, 'saturday', '[]'::json, 'sunday', '[]'::json))
  from ids t
  left join week w on w.bar_id = t.bar_id
  left join minutes m on m.k = w.k
  left join objects j on j.k = w.k
$$;

-- Recomputes the weekly open minutes and the `hours` object of these bars.
create or replace function private.bar_live_set_week(p_bar_ids bigint[]) returns void
  language sql volatile
as $$
  update private.bar_live l set open_week = w.open_week, hours = w.hours
  from private.bar_weeks(p_bar_ids) w
  where l.bar_id = w.bar_id
$$;

-- Grows the extents of the time zones of these bars to include them. A bar that
-- leaves its zone (deleted, moved, its city in another zone) shrinks the zone's
-- extents through private.time_zone_extents_recompute when it lay on their boundary.
create or replace function private.time_zone_extents_add(p_bar_ids bigint[]) returns void
  language sql volatile
as $$
  update private.time_zones z
  set location_extent = case when z.location_extent is null then e.location_extent
                             else bound_box(z.location_extent, e.location_extent) end,
      geo_extent = case when z.geo_extent is null then e.geo_extent else public.cube_union(z.geo_extent, e.geo_extent) end
  from (
    select c.time_zone,
           box(point(min(b.longitude), min(b.latitude)), point(max(b.longitude), max(b.latitude))) as location_extent,
           public.cube(array[min(public.cube_ll_coord(b.geo, 1)), min(public.cube_ll_coord(b.geo, 2)), min(public.cube_ll_coord(b.geo, 3))],
                       array[max(public.cube_ur_coord(b.geo, 1)), max(public.cube_ur_coord(b.geo, 2)), max(public.cube_ur_coord(b.geo, 3))]) as geo_extent
    from (select distinct u.id from unnest(p_bar_ids) u(id)) u
    join private.bars b on b.id = u.id
    join private.cities c on c.id = b.city_id
    group by c.time_zone
  ) e
  where e.time_zone = z.name
    and (z.location_extent is null or z.geo_extent is null
         or not (z.location_extent @> e.location_extent) or not (z.geo_extent @> e.geo_extent))
$$;

-- The extents of these time zones recomputed from the bars of their cities (null
-- when a zone has none): a scan of the zone's bars, run only when a bar that left
-- lay on the boundary (private.on_zone_extent_boundary) or a city changed zone.
create or replace function private.time_zone_extents_recompute(p_zones text[]) returns void
  language sql volatile
as $$
  update private.time_zones z
  set location_extent = e.location_extent, geo_extent = e.geo_extent
  from (
    select u.name,
           case when count(b.id) > 0 then
             box(point(min(b.longitude), min(b.latitude)), point(max(b.longitude), max(b.latitude))) end as location_extent,
           case when count(b.id) > 0 then
             public.cube(array[min(public.cube_ll_coord(b.geo, 1)), min(public.cube_ll_coord(b.geo, 2)), min(public.cube_ll_coord(b.geo, 3))],
                         array[max(public.cube_ur_coord(b.geo, 1)), max(public.cube_ur_coord(b.geo, 2)), max(public.cube_ur_coord(b.geo, 3))]) end as geo_extent
    from (select distinct x.name from unnest(p_zones) x(name) where x.name is not null) u
    left join private.cities c on c.time_zone = u.name
    left join private.bars b on b.city_id = c.id
    group by u.name
  ) e
  where z.name = e.name
$$;

-- True when a bar at this position lies on the boundary of a zone's extents (so the
-- extents may shrink without it). The extents are min/max of the same stored values:
-- equality is exact.
create or replace function private.on_zone_extent_boundary(
  p_location_extent box, p_geo_extent public.cube, p_latitude double precision, p_longitude double precision, p_geo public.earth
) returns boolean
  language sql immutable parallel safe
as $$
  select p_location_extent is null or p_geo_extent is null
      or p_longitude in ((p_location_extent[0])[0], (p_location_extent[1])[0])
      or p_latitude in ((p_location_extent[0])[1], (p_location_extent[1])[1])
      or public.cube_ll_coord(p_geo, 1) in (public.cube_ll_coord(p_geo_extent, 1), public.cube_ur_coord(p_geo_extent, 1))
      or public.cube_ll_coord(p_geo, 2) in (public.cube_ll_coord(p_geo_extent, 2), public.cube_ur_coord(p_geo_extent, 2))
      or public.cube_ll_coord(p_geo, 3) in (public.cube_ll_coord(p_geo_extent, 3), public.cube_ur_coord(p_geo_extent, 3))
$$;

-- The key of a minute of the local week in a time zone (private.time_zones.id):
-- the one encoding of bar_open_slots (its slots are ranges of these keys).
create or replace function private.slot_key(p_zone integer, p_minute integer) returns bigint
  language sql immutable parallel safe
as $$ select p_zone::bigint * 10080 + p_minute $$;

-- Recomputes the open slots of these bars from bar_live (their city's time zone
-- and open_week): slot = [zone * 10080 + opens, zone * 10080 + closes), zone
-- from private.time_zones (a new time zone is numbered here).
create or replace function private.bar_open_slots_set(p_bar_ids bigint[]) returns void
  language sql volatile
as $$
  insert into private.time_zones (name)
  select distinct c.time_zone from private.cities c
  where c.id in (select l.city_id from private.bar_live l join unnest(p_bar_ids) u(id) on u.id = l.bar_id)
    and not exists (select from private.time_zones z where z.name = c.time_zone)
  order by 1
  on conflict (name) do nothing;
  select private.time_zone_extents_add(p_bar_ids);
  delete from private.bar_open_slots s using unnest(p_bar_ids) u(id) where s.bar_id = u.id;
  insert into private.bar_open_slots (bar_id, slot)
  select l.bar_id, int8range(private.slot_key(z.id, lower(r)), private.slot_key(z.id, upper(r)))
  from (select distinct u.id from unnest(p_bar_ids) u(id)) u
  join private.bar_live l on l.bar_id = u.id
  join private.cities c on c.id = l.city_id
  join private.time_zones z on z.name = c.time_zone
  cross join lateral unnest(l.open_week) r;
$$;

drop function if exists private.open_slot_keys(timestamptz);  -- (before the region arguments)
-- The slot keys at an instant (each zone's local minute of the week) of the time
-- zones whose bars may lie in a region (a radius of p_center, a box; each when
-- given): a bar is open then when one of its slots holds its zone's key.
create or replace function private.open_slot_keys(
  p_at timestamptz, p_center public.earth default null, p_radius_m double precision default null, p_box box default null
) returns table (k bigint)
  language sql stable parallel safe
as $$
  select private.slot_key(z.id, private.minute_of_week(p_at at time zone z.name)) from private.time_zones z
  where (p_radius_m is null or z.geo_extent && private.radius_box(p_center, p_radius_m))
    and (p_box is null or z.location_extent && p_box)
$$;

create or replace function private.bar_live_sync() returns trigger
  language plpgsql
as $$
declare
  v_bar_ids bigint[];
begin
  if current_setting('private.defer_bar_live', true) = 'on' then
    return null;  -- a bulk load (the seed) calls private.bar_live_rebuild() once at its end
  end if;
  if tg_table_name = 'bars' then
    if tg_op = 'TRUNCATE' then
      truncate private.bar_live, private.city_bar_counts, private.bar_open_slots;
      update private.time_zones set location_extent = null, geo_extent = null
      where location_extent is not null or geo_extent is not null;
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
      delete from private.bar_open_slots s using old_rows o where s.bar_id = o.id;
      perform private.time_zone_extents_recompute(array(
        select distinct z.name from old_rows o
        join private.cities c on c.id = o.city_id join private.time_zones z on z.name = c.time_zone
        where private.on_zone_extent_boundary(z.location_extent, z.geo_extent, o.latitude, o.longitude, o.geo)));
    else  -- INSERT, UPDATE
      insert into private.bar_live as l (bar_id, city_id, name, price_level, google_rating)
      select n.id, n.city_id, n.name, n.price_level, n.google_rating from new_rows n
      on conflict (bar_id) do update
        set city_id = excluded.city_id, name = excluded.name,
            price_level = excluded.price_level, google_rating = excluded.google_rating
        where (l.city_id, l.name, l.price_level, l.google_rating)
              is distinct from (excluded.city_id, excluded.name, excluded.price_level, excluded.google_rating);
      if tg_op = 'INSERT' then  -- rows of a bar that existed before (a re-used id)
        update private.bar_live l set current_intensity = o.current_intensity
        from private.occupancy o, new_rows n where o.bar_id = n.id and l.bar_id = n.id;
        if exists (select from private.opening_hours h join new_rows n on n.id = h.bar_id) then
          perform private.bar_live_set_week(array(select id from new_rows));
          perform private.bar_open_slots_set(array(select id from new_rows));
        else  -- (bar_open_slots_set grows them otherwise) the extents cover every bar of the zone
          perform private.time_zone_extents_add(array(select id from new_rows));
        end if;
      else  -- a bar moved to another city (maybe another time zone), or moved within its city
        v_bar_ids := array(select n.id from new_rows n join old_rows o on o.id = n.id where n.city_id is distinct from o.city_id);
        if cardinality(v_bar_ids) > 0 then
          perform private.bar_open_slots_set(v_bar_ids);
        end if;
        v_bar_ids := array(select n.id from new_rows n join old_rows o on o.id = n.id
                           where n.city_id = o.city_id and (n.latitude, n.longitude) is distinct from (o.latitude, o.longitude));
        if cardinality(v_bar_ids) > 0 then
          perform private.time_zone_extents_add(v_bar_ids);
        end if;
        -- the zones the moved bars left, when they lay on their boundary
        perform private.time_zone_extents_recompute(array(
          select distinct z.name from old_rows o join new_rows n on n.id = o.id
          join private.cities c on c.id = o.city_id join private.time_zones z on z.name = c.time_zone
          where (n.city_id, n.latitude, n.longitude) is distinct from (o.city_id, o.latitude, o.longitude)
            and private.on_zone_extent_boundary(z.location_extent, z.geo_extent, o.latitude, o.longitude, o.geo)));
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
      update private.bar_live set open_week = '{}', hours = null where not isempty(open_week) or hours is not null;
      truncate private.bar_open_slots;
    else
      if tg_op = 'INSERT' then
        v_bar_ids := array(select bar_id from new_rows);
      elsif tg_op = 'DELETE' then
        v_bar_ids := array(select bar_id from old_rows);
      else
        v_bar_ids := array(select bar_id from new_rows union select bar_id from old_rows);
      end if;
      perform private.bar_live_set_week(v_bar_ids);
      perform private.bar_open_slots_set(v_bar_ids);
    end if;
  end if;
  return null;
end
$$;

-- A city's new time zone moves its bars' open slots to that zone's keys.
create or replace function private.bar_open_slots_city_sync() returns trigger
  language plpgsql
as $$
begin
  if exists (select from new_rows n join old_rows o on o.id = n.id where n.time_zone is distinct from o.time_zone) then
    perform private.bar_open_slots_set(array(
      select l.bar_id from new_rows n join old_rows o on o.id = n.id join private.bar_live l on l.city_id = n.id
      where n.time_zone is distinct from o.time_zone));
    perform private.time_zone_extents_recompute(array(
      select o.time_zone from new_rows n join old_rows o on o.id = n.id where n.time_zone is distinct from o.time_zone));
  end if;
  return null;
end
$$;

create or replace trigger bar_open_slots_city_update after update on private.cities
  referencing old table as old_rows new table as new_rows for each statement
  execute function private.bar_open_slots_city_sync();

-- bar_live, the city bar counts, the open slots and the time zones' extents of
-- every bar, rebuilt set-based (after a load with private.defer_bar_live on).
create or replace function private.bar_live_rebuild() returns void
  language plpgsql volatile
as $$
declare
  v_bar_ids bigint[] := array(select b.id from private.bars b);
begin
  truncate private.bar_live, private.city_bar_counts, private.bar_open_slots;
  insert into private.city_bar_counts (city_id, n) select b.city_id, count(*)::int from private.bars b group by 1;
  insert into private.bar_live (bar_id, city_id, name, price_level, google_rating, current_intensity, open_week, hours)
  select b.id, b.city_id, b.name, b.price_level, b.google_rating, o.current_intensity, w.open_week, w.hours
  from private.bars b
  join private.bar_weeks(v_bar_ids) w on w.bar_id = b.id
  left join private.occupancy o on o.bar_id = b.id;
  perform private.bar_open_slots_set(v_bar_ids);
end
$$;
