-- GET events/:state/:city (repeatable file; see db/CONVENTIONS.md).
--
-- plpgsql with static SQL, so each statement is planned once per connection.
-- The filters are not ($x is null or ...) predicates in one statement: each
-- combination is its own static statement, so that its generic plan is the
-- right one for it (EXPLAIN in docs/explain/events--*.txt):
--   no filter       the (city_id, start_at, id) index range
--   classification  the (city_id, classification, start_at, id) index range
--   group           the group's bars (a few hundred at most) through (bar_id, start_at, id);
--                   with a classification too, the same statement: the
--                   classification stays a residual filter. (As its own
--                   statement, `e.classification = $x` made the generic plan
--                   scan the city's whole classification range through
--                   (city_id, classification, start_at, id) and filter by bar:
--                   5,252 rows instead of 124 for the largest city's largest
--                   group, 41-69 ms instead of 0.6-3 ms.)

-------------------------------------------------------------------------------
-- private.city_event_hours (migration 000014): events per city and UTC hour of
-- start, kept exact by statement triggers (00-common.sql city_hours_sync).
-------------------------------------------------------------------------------
select private.city_hours_triggers('events', 'city_event_hours', 'start_at');  -- 00-common.sql
drop function if exists private.city_event_hours_sync();  -- its first version (before city_hours_sync)

-- The number of a city's events starting in [p_lo, p_hi): the whole UTC hours inside the window
-- from city_event_hours, the partial hours at its ends counted exactly (at most an hour each).
-- plpgsql: as a SQL function (a FROM, so never inlined where called as a value) it was parsed and
-- planned again on every call.
create or replace function private.event_count(p_city_id bigint, p_lo timestamptz, p_hi timestamptz) returns bigint
  language plpgsql stable
as $$
begin
  return (
  with b as (
    select case when date_trunc('hour', p_lo, 'UTC') = p_lo then p_lo
                else date_trunc('hour', p_lo, 'UTC') + interval '1 hour' end as ceil_lo,
           date_trunc('hour', p_hi, 'UTC') as floor_hi)
  select case
    when b.ceil_lo >= b.floor_hi then
      (select count(*) from private.events e where e.city_id = p_city_id and e.start_at >= p_lo and e.start_at < p_hi)
    else
      (select coalesce(sum(h.n), 0) from private.city_event_hours h
       where h.city_id = p_city_id and h.hour >= b.ceil_lo and h.hour < b.floor_hi)
      + (select count(*) from private.events e where e.city_id = p_city_id and e.start_at >= p_lo and e.start_at < b.ceil_lo)
      + (select count(*) from private.events e where e.city_id = p_city_id and e.start_at >= b.floor_hi and e.start_at < p_hi)
    end
  from b);
end
$$;

-- Full form of an event, with its bar (BarSummary in the city's name and state).
create or replace function private.events_page_json(p_ids bigint[], p_city private.cities) returns json
  language plpgsql stable  -- plpgsql: its plan is kept (as SQL with a FROM it was planned on every call)
as $$
begin
  return (
  select coalesce(json_agg(json_build_object(
           'id', e.id::text,
           'title', e.title,
           'description', e.description,
           'classification', e.classification,
           'start_at', private.iso_utc(e.start_at),
           'end_at', private.iso_utc(e.end_at),
           'created_at', private.iso_utc(e.created_at),
           'bar', private.bar_summary_json(b, p_city))
         order by u.n), '[]'::json)
  from unnest(p_ids) with ordinality u(id, n)
  join private.events e on e.id = u.id
  join private.bars b on b.id = e.bar_id);
end
$$;

create or replace function api.events(
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
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
as $$
declare
  v_city private.cities;
  v_today date;
  v_lo timestamptz;
  v_hi timestamptz;
  v_group_bars bigint[];
  v_offset bigint := (p_page - 1)::bigint * p_per_page;
  v_ids bigint[];
  v_total bigint;
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
    v_group_bars := array(
      select bg.bar_id from private.bar_groups bg join private.groups g on g.id = bg.group_id
      where g.city_id = v_city.id and g.slug = p_group_slug);
  end if;

  if p_group_slug is null and p_classification is null then
    v_ids := array(
      select e.id from private.events e
      where e.city_id = v_city.id and e.start_at >= v_lo and e.start_at < v_hi
      order by e.start_at, e.id limit p_per_page offset v_offset);
    v_total := private.event_count(v_city.id, v_lo, v_hi);
  elsif p_group_slug is null then
    v_ids := array(
      select e.id from private.events e
      where e.city_id = v_city.id and e.classification = p_classification
        and e.start_at >= v_lo and e.start_at < v_hi
      order by e.start_at, e.id limit p_per_page offset v_offset);
    select count(*) into v_total from private.events e
    where e.city_id = v_city.id and e.classification = p_classification
      and e.start_at >= v_lo and e.start_at < v_hi;
  else
    -- a group: its bars' events; the classification (if any) is a residual filter
    v_ids := array(
      select e.id from private.events e
      where e.bar_id = any (v_group_bars) and e.city_id = v_city.id
        and (p_classification is null or e.classification = p_classification)
        and e.start_at >= v_lo and e.start_at < v_hi
      order by e.start_at, e.id limit p_per_page offset v_offset);
    select count(*) into v_total from private.events e
    where e.bar_id = any (v_group_bars) and e.city_id = v_city.id
      and (p_classification is null or e.classification = p_classification)
      and e.start_at >= v_lo and e.start_at < v_hi;
  end if;

  return json_build_object(
    'events', private.events_page_json(v_ids, v_city),
    'pagination', private.pagination_json(p_page, p_per_page, v_total));
end
$$;

revoke all on function api.events(text, text, text, text, text, text, integer, integer, timestamptz) from public;
grant execute on function api.events(text, text, text, text, text, text, integer, integer, timestamptz) to bar_partner;
