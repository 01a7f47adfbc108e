/**
 * Queries that count the rows of each derived table (bar_live, the open slots and
 * the time zones' extents, city bar counts, city post hours) that differ from a
 * recomputation from the base tables, both directions: 0 when exact.
 */
export const DRIFT = {
  barLive: `
    with expected as (
      select b.id as bar_id, b.city_id, b.name, b.price_level, b.google_rating, o.current_intensity,
             coalesce((select range_agg(r) from private.opening_hours h
                       cross join lateral unnest(private.slot_minutes(h.day_of_week, h.opens, h.closes)) r
                       where h.bar_id = b.id), '{}') as open_week,
             test_ref.bar_hours_json(b.id)::text as hours
      from private.bars b left join private.occupancy o on o.bar_id = b.id),
    actual as (
      select l.bar_id, l.city_id, l.name, l.price_level, l.google_rating, l.current_intensity, l.open_week,
             coalesce(l.hours, test_ref.bar_hours_json(l.bar_id))::text as hours
      from private.bar_live l)
    select count(*)::int as n from ((select * from expected except select * from actual)
                                    union all (select * from actual except select * from expected)) d`,
  // each open slot as (bar, its city's time zone, minutes of the local week), decoded from the zone-keyed rows
  openSlots: `
    with expected as (
      select b.id as bar_id, c.time_zone, r as minutes
      from private.bars b join private.cities c on c.id = b.city_id
      cross join lateral unnest((select range_agg(r) from private.opening_hours h
                                 cross join lateral unnest(private.slot_minutes(h.day_of_week, h.opens, h.closes)) r
                                 where h.bar_id = b.id)) r),
    actual as (
      select s.bar_id, z.name as time_zone,
             int4range((lower(s.slot) - z.id * 10080)::int, (upper(s.slot) - z.id * 10080)::int) as minutes
      from private.bar_open_slots s left join private.time_zones z on z.id = lower(s.slot) / 10080)
    select count(*)::int as n from ((select * from expected except all select * from actual)
                                    union all (select * from actual except all select * from expected)) d`,
  // every bar with open slots lies inside its time zone's extents (they may be larger, never smaller)
  zoneExtents: `
    select count(*)::int as n
    from private.bars b join private.cities c on c.id = b.city_id
    left join private.time_zones z on z.name = c.time_zone
    where exists (select from private.bar_open_slots s where s.bar_id = b.id)
      and (z.id is null or not coalesce(z.location_extent @> b.location and z.geo_extent @> b.geo, false))`,
  // every time zone's extents are exactly those of its cities' bars (null without bars): they shrink too
  zoneExtentsExact: `
    select count(*)::int as n from private.time_zones z
    cross join lateral (
      select case when count(b.id) > 0 then
               box(point(min(b.longitude), min(b.latitude)), point(max(b.longitude), max(b.latitude))) end as loc,
             case when count(b.id) > 0 then
               public.cube(array[min(public.cube_ll_coord(b.geo, 1)), min(public.cube_ll_coord(b.geo, 2)), min(public.cube_ll_coord(b.geo, 3))],
                           array[max(public.cube_ur_coord(b.geo, 1)), max(public.cube_ur_coord(b.geo, 2)), max(public.cube_ur_coord(b.geo, 3))]) end as geo
      from private.cities c join private.bars b on b.city_id = c.id where c.time_zone = z.name) e
    where not (coalesce(z.location_extent ~= e.loc, z.location_extent is null and e.loc is null)
               and coalesce(z.geo_extent = e.geo, z.geo_extent is null and e.geo is null))`,
  barCounts: `
    with expected as (select city_id, count(*)::int as n from private.bars group by 1),
    actual as (select city_id, n from private.city_bar_counts where n <> 0)
    select count(*)::int as n from ((select * from expected except select * from actual)
                                    union all (select * from actual except select * from expected)) d`,
  postHours: `
    with expected as (select city_id, date_trunc('hour', created_at, 'UTC') as hour, count(*)::int as n from private.posts group by 1, 2),
    actual as (select city_id, hour, n from private.city_post_hours where n <> 0)
    select count(*)::int as n from ((select * from expected except select * from actual)
                                    union all (select * from actual except select * from expected)) d`,
};
