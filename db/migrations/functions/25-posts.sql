-- GET posts/:state/:city (repeatable file; see db/CONVENTIONS.md), and the
-- derived table private.city_post_hours (posts per city and UTC hour) that
-- serves its totals and deep pages, shared with the feed (26-feed.sql).

-- Kept exact by statement triggers (00-common.sql city_hours_sync).
select private.city_hours_triggers('posts', 'city_post_hours', 'created_at');
drop function if exists private.city_post_hours_sync();  -- its first version (migration 000002)

-- The window [lo, hi) splits into a partial first hour, whole UTC hours and a
-- partial last hour; whole hours come from city_post_hours, partial ones are
-- counted exactly (at most an hour of one city's posts each).
create or replace function private.post_window_parts(p_city_id bigint, p_lo timestamptz, p_hi timestamptz)
  returns table (part_lo timestamptz, part_hi timestamptz, n bigint)
  language sql stable
as $$
  with b as (
    select case when date_trunc('hour', p_lo, 'UTC') = p_lo then p_lo
                else date_trunc('hour', p_lo, 'UTC') + interval '1 hour' end as ceil_lo,
           date_trunc('hour', p_hi, 'UTC') as floor_hi
  )
  select greatest(b.floor_hi, b.ceil_lo), p_hi,
         (select count(*) from private.posts p
          where p.city_id = p_city_id and p.created_at >= greatest(b.floor_hi, b.ceil_lo) and p.created_at < p_hi)
  from b where greatest(b.floor_hi, b.ceil_lo) < p_hi
  union all
  select h.hour, h.hour + interval '1 hour', h.n::bigint
  from b, private.city_post_hours h
  where h.city_id = p_city_id and h.hour >= b.ceil_lo and h.hour < b.floor_hi and h.n > 0
  union all
  select p_lo, least(p_hi, b.ceil_lo),
         (select count(*) from private.posts p
          where p.city_id = p_city_id and p.created_at >= p_lo and p.created_at < least(p_hi, b.ceil_lo))
  from b where p_lo < least(p_hi, b.ceil_lo)
$$;

-- plpgsql, as the other helpers here that read tables: a SQL function with a FROM is not inlined
-- where it is called as a value, and is then parsed and planned again on every call.
create or replace function private.post_count(p_city_id bigint, p_lo timestamptz, p_hi timestamptz) returns bigint
  language plpgsql stable
as $$
begin
  return (select coalesce(sum(w.n), 0)::bigint from private.post_window_parts(p_city_id, p_lo, p_hi) w);
end
$$;

-- Where the newest-first page at p_offset starts: the posts of [p_lo, part_hi)
-- after skipping `skip` of them. No row: the offset is past the end.
create or replace function private.post_page_start(p_city_id bigint, p_lo timestamptz, p_hi timestamptz, p_offset bigint)
  returns table (part_hi timestamptz, skip bigint)
  language sql stable
as $$
  select c.part_hi, p_offset - c.before
  from (
    select w.part_hi, w.n, coalesce(sum(w.n) over (order by w.part_lo desc rows between unbounded preceding and 1 preceding), 0) as before
    from private.post_window_parts(p_city_id, p_lo, p_hi) w
    where w.n > 0
  ) c
  where c.before <= p_offset and p_offset < c.before + c.n
$$;

-- Posts (GET posts) in the order of their ids.
create or replace function private.posts_json(p_ids bigint[], p_city private.cities) returns json
  language plpgsql stable
as $$
begin
  return (
  select coalesce(json_agg(json_build_object(
           'id', p.id::text,
           'text', p.content,
           'created_at', private.iso_utc(p.created_at),
           'bar', private.bar_summary_json(b, p_city))
         order by u.n), '[]'::json)
  from unnest(p_ids) with ordinality u(id, n)
  join private.posts p on p.id = u.id
  join private.bars b on b.id = p.bar_id);
end
$$;

-- Newest first. A group is at most a few hundred bars: its posts are counted and
-- paged directly; the whole city's total and page start come from city_post_hours
-- (an index range within one hour, not an OFFSET over everything newer).
create or replace function api.posts(
  p_state text,
  p_city text,
  p_start_date text default null,      -- default 30 days ago
  p_end_date text default null,        -- default today (inclusive)
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
  v_group_id bigint;
  v_start timestamptz;
  v_skip bigint;
  v_total bigint;
begin
  select * into v_city from private.find_city(p_state, p_city);
  if not found then return null; end if;
  v_today := (p_now at time zone v_city.time_zone)::date;
  v_lo := coalesce(private.date_bound(p_start_date, v_city.time_zone, false), private.local_day_start(v_today - 30, v_city.time_zone));
  v_hi := coalesce(private.date_bound(p_end_date, v_city.time_zone, true), private.local_day_start(v_today + 1, v_city.time_zone));
  if v_hi <= v_lo then
    raise exception using errcode = 'PT400', message = case when p_end_date is null
      then 'end_date must not be before start_date (end_date defaults to today)'
      else 'end_date must not be before start_date' end;
  end if;
  if p_group_slug is not null then
    select g.id into v_group_id from private.groups g where g.city_id = v_city.id and g.slug = p_group_slug;
  end if;

  if p_group_slug is not null then
    -- a group is at most a few hundred bars: count and page its posts directly
    return (
      with matching as (
        select p.id, p.created_at from private.posts p
        where p.bar_id = any (array(select bg.bar_id from private.bar_groups bg where bg.group_id = v_group_id))
          and p.city_id = v_city.id and p.created_at >= v_lo and p.created_at < v_hi
      )
      select json_build_object(
        'posts', private.posts_json(array(
          select m.id from matching m order by m.created_at desc, m.id desc
          limit p_per_page offset (p_page - 1)::bigint * p_per_page), v_city),
        'pagination', private.pagination_json(p_page, p_per_page, (select count(*) from matching)))
    );
  end if;

  -- The whole city: the total from city_post_hours, and the page found by
  -- skipping whole hours (an index range scan within one hour, not an OFFSET
  -- over everything newer).
  select s.part_hi, s.skip into v_start, v_skip
  from private.post_page_start(v_city.id, v_lo, v_hi, (p_page - 1)::bigint * p_per_page) s;
  v_total := private.post_count(v_city.id, v_lo, v_hi);  -- a variable: pagination_json is then inlined
  return json_build_object(
    'posts', private.posts_json(array(
      select p.id from private.posts p
      where v_start is not null and p.city_id = v_city.id and p.created_at >= v_lo and p.created_at < v_start
      order by p.created_at desc, p.id desc
      limit p_per_page offset v_skip), v_city),
    'pagination', private.pagination_json(p_page, p_per_page, v_total));
end
$$;

revoke all on function api.posts(text, text, text, text, text, integer, integer, timestamptz) from public;
grant execute on function api.posts(text, text, text, text, text, integer, integer, timestamptz) to bar_partner;
