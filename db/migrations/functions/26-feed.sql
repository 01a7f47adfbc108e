-- GET feed/:state/:city (repeatable file; see db/CONVENTIONS.md). Post totals and
-- page starts come from private.city_post_hours (25-posts.sql).

-- Posts newest first, paged by p_page; events are the upcoming ones (ending
-- after now) by start time, always their first page.
create or replace function api.feed(
  p_state text,
  p_city text,
  p_page integer default 1,
  p_per_page integer default 20,
  p_now timestamptz default now()
) returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off  -- millisecond queries; a JIT compile alone costs 100+ ms
  -- Generic plans are the right index walks here (posts_city_created, events_city_start), but they
  -- are costed above the custom ones (an unknown LIMIT and OFFSET): left to choose, PostgreSQL
  -- planned the page statement again on every call (1.4 ms of 3.2 at 1M bars).
  set plan_cache_mode = force_generic_plan
as $$
declare
  v_city private.cities;
  v_start timestamptz;
  v_skip bigint;
  v_posts_total bigint;
  v_events_total bigint;
begin
  select * into v_city from private.find_city(p_state, p_city);
  if not found then return null; end if;
  if p_page = 1 then  -- the newest posts: no page start to find (it walks the city's post hours)
    v_start := 'infinity';
    v_skip := 0;
  else
    select s.part_hi, s.skip into v_start, v_skip
    from private.post_page_start(v_city.id, '-infinity', 'infinity', (p_page - 1)::bigint * p_per_page) s;
  end if;
  -- The totals as variables: passed as calls, they kept pagination_json from being inlined (a
  -- costly argument used twice), and it was then planned on every call.
  v_posts_total := private.post_count(v_city.id, '-infinity', 'infinity');
  -- events ending after now: those starting after now (city_event_hours, 24-events.sql), and those
  -- running now (started within the longest event's duration before now)
  v_events_total := private.event_count(v_city.id, p_now, 'infinity')
    + (select count(*) from private.events e
       where e.city_id = v_city.id and e.start_at < p_now and e.end_at > p_now
         and e.start_at > p_now - (select max(x.end_at - x.start_at) from private.events x));

  return json_build_object(
    'city', private.city_json(v_city),
    'posts', (
      select coalesce(json_agg(json_build_object(
               'id', p.id::text,
               'content', p.content,
               'created_at', private.iso_utc(p.created_at),
               'user', json_build_object('id', u.id::text, 'username', u.username),
               'bar', json_build_object('id', b.id::text, 'name', b.name),
               'media', (select coalesce(json_agg(json_build_object('url', m.url) order by m.position, m.id), '[]'::json)
                         from private.post_media m where m.post_id = p.id))
             order by p.created_at desc, p.id desc), '[]'::json)
      from (
        select p.* from private.posts p
        where v_start is not null and p.city_id = v_city.id and p.created_at < v_start
        order by p.created_at desc, p.id desc
        limit p_per_page offset v_skip
      ) p
      join private.users u on u.id = p.user_id
      join private.bars b on b.id = p.bar_id),
    'events', (
      select coalesce(json_agg(private.event_with_bar_json(e, b) order by e.start_at, e.id), '[]'::json)
      from (
        -- an event ending after now started after now minus the longest event (index events_duration)
        select e.* from private.events e
        where e.city_id = v_city.id and e.end_at > p_now
          and e.start_at > p_now - (select max(x.end_at - x.start_at) from private.events x)
        order by e.start_at, e.id
        limit p_per_page
      ) e
      join private.bars b on b.id = e.bar_id),
    'posts_pagination', private.pagination_json(p_page, p_per_page, v_posts_total),
    'events_pagination', private.pagination_json(1, p_per_page, v_events_total));
end
$$;

revoke all on function api.feed(text, text, integer, integer, timestamptz) from public;
grant execute on function api.feed(text, text, integer, integer, timestamptz) to bar_partner;
