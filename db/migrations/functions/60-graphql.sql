-- The partner GraphQL endpoint (repeatable file; see db/CONVENTIONS.md).
--
-- The GraphQL schema serves the REST functions' own JSON (api.bar, api.bars,
-- api.bars_by_city, api.events, api.posts, api.feed, api.search, api.categories,
-- api.cities, api.groups): ranking, filters, time zones and caps have one source.
-- What REST has no endpoint for is here, built from the same helpers.

-- Bar.posts: one bar's posts, newest first (the order of GET posts), in GET posts' item shape.
create or replace function api.graphql_bar_posts(p_bar_id text, p_limit integer, p_offset integer)
  returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off
as $$
declare
  v_bar private.bars;
  v_city private.cities;
begin
  select * into v_bar from private.bars b where b.id = private.bar_id_or_null(p_bar_id);
  if not found then return null; end if;
  select * into v_city from private.cities c where c.id = v_bar.city_id;
  return json_build_object(
    'posts', private.posts_json(array(
      select p.id from private.posts p where p.bar_id = v_bar.id
      order by p.created_at desc, p.id desc
      limit least(greatest(p_limit, 0), 100) offset greatest(p_offset, 0)), v_city),
    'total_count', (select count(*) from private.posts p where p.bar_id = v_bar.id));
end
$$;

revoke all on function api.graphql_bar_posts(text, integer, integer) from public;
-- The full form of events (GET events' items) by id, for an event reached through a short form
-- (a bar's detail, events today, the feed): [event or nothing] in the order of p_ids.
create or replace function api.graphql_events(p_ids text[]) returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off
as $$
begin
  return (
    select coalesce(json_agg(private.events_page_json(array[e.id], c) -> 0 order by u.n), '[]'::json)
    from unnest(p_ids[1:100]) with ordinality u(id, n)
    join private.events e on e.id = private.bar_id_or_null(u.id)  -- (any numeric id text, else null)
    join private.bars b on b.id = e.bar_id
    join private.cities c on c.id = b.city_id);
end
$$;

revoke all on function api.graphql_events(text[]) from public;

-- City.eventsToday and City.busiestBars: what GET bars_by_city's page carries besides its bars
-- (functions/23-bars-by-city.sql), from the same helpers, without a page of bars.
create or replace function api.graphql_city_highlights(
  p_state text,
  p_city text,
  p_now timestamptz default now(),
  p_events_today_limit integer default null  -- null: all of them
) returns json
  language plpgsql volatile security definer  -- volatile: stores the events_today fragment
  set search_path = private, public, pg_temp
  set jit = off
as $$
declare
  v_city private.cities;
  v_local timestamp;
  v_events json[];
begin
  select * into v_city from private.find_city(p_state, p_city);
  if not found then return null; end if;
  v_local := p_now at time zone v_city.time_zone;
  v_events := private.city_events_today(v_city, v_local::date);
  return json_build_object(
    'city', private.city_json(v_city),
    'events_today', private.events_today_json(v_events, p_events_today_limit),
    'events_today_total', cardinality(v_events),
    'busiest_bars', private.city_busiest_bars(v_city.id, private.minute_of_week(v_local)));
end
$$;

revoke all on function api.graphql_city_highlights(text, text, timestamptz, integer) from public;

-- The role the GraphQL endpoint runs as (created in the graphql migration) may execute only what
-- the schema serves, whatever their signatures are. (Before that migration has run there is
-- no role to grant to: the endpoint then answers nothing, the rest of the API is unaffected.)
do $$
declare
  f regprocedure;
begin
  if not exists (select 1 from pg_roles where rolname = 'bar_partner_graphql') then return; end if;
  for f in
    select p.oid::regprocedure from pg_proc p
    where p.pronamespace = 'api'::regnamespace
      and p.proname in ('bar', 'bars', 'bars_by_city', 'events', 'posts', 'feed', 'search',
                        'categories', 'cities', 'groups', 'graphql_bar_posts', 'graphql_events',
                        'graphql_city_highlights')
  loop
    execute format('grant execute on function %s to bar_partner_graphql', f);
  end loop;
end $$;
