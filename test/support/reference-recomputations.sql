-- Per-bar recomputations of what bar documents and bar_live store precomputed
-- (the first versions of the detail JSON, migration 000002). Test-only: no
-- endpoint calls them, so they are not in the production schema. The test set-up
-- (test/support/global-setup.ts) creates them in the schema test_ref of the
-- template database; the derived-table tests compare the stored fragments with
-- them (test/perf/bar-documents.test.ts, test/support/derived-drift.ts,
-- test/api/time.test.ts).

create schema if not exists test_ref;

-- All seven day keys, slots by opening time, HH:MM local wall-clock times.
create or replace function test_ref.bar_hours_json(p_bar_id bigint) returns json
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
create or replace function test_ref.bar_is_open(p_bar_id bigint, p_local timestamp) returns boolean
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

-- {current_intensity, status[, hourly_data]} at a local time. A closed bar is
-- intensity 0; an open bar without occupancy data has null intensity and status.
create or replace function test_ref.bar_occupancy_json(p_bar_id bigint, p_local timestamp, p_hourly boolean) returns json
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
      select test_ref.bar_is_open(p_bar_id, p_local) as open,
             (select occ from private.occupancy occ where occ.bar_id = p_bar_id) as occ
    ) o
  ) s
$$;

create or replace function test_ref.bar_categories_json(p_bar_id bigint) returns json
  language sql stable parallel safe
as $$
  select coalesce(json_agg(private.category_json(c) order by bc.is_primary desc, bc.position, c.name, c.id), '[]'::json)
  from private.bar_categories bc join private.categories c on c.id = bc.category_id
  where bc.bar_id = p_bar_id
$$;

create or replace function test_ref.bar_primary_category_json(p_bar_id bigint) returns json
  language sql stable parallel safe
as $$
  select private.category_json(c)
  from private.bar_categories bc join private.categories c on c.id = bc.category_id
  where bc.bar_id = p_bar_id and bc.is_primary
$$;

create or replace function test_ref.bar_photos_json(p_bar_id bigint) returns json
  language sql stable parallel safe
as $$
  select coalesce(json_agg(json_build_object('url', p.url) order by p.position, p.id), '[]'::json)
  from private.photos p where p.bar_id = p_bar_id
$$;
