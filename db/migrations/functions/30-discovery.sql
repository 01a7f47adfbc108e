-- Discovery (decisions.md v1.1): GET categories, GET cities,
-- GET groups/:state/:city. Repeatable file (see db/CONVENTIONS.md); the
-- derived table private.category_bar_counts is in committed migration 000006.

-- ---------------------------------------------------------------- category_bar_counts maintenance

create or replace function private.category_bar_counts_sync() returns trigger
  language plpgsql
as $$
begin
  if tg_op = 'TRUNCATE' then
    truncate private.category_bar_counts;
    return null;
  end if;
  if tg_op in ('UPDATE', 'DELETE') then
    update private.category_bar_counts k set n = k.n - d.n
    from (select category_id, count(*)::int as n from old_rows group by 1) d where k.category_id = d.category_id;
  end if;
  if tg_op in ('UPDATE', 'INSERT') then
    insert into private.category_bar_counts as k (category_id, n)
    select category_id, count(*)::int from new_rows group by 1
    on conflict (category_id) do update set n = k.n + excluded.n;
  end if;
  return null;
end
$$;

create or replace trigger category_bar_counts_insert after insert on private.bar_categories
  referencing new table as new_rows for each statement execute function private.category_bar_counts_sync();
create or replace trigger category_bar_counts_update after update on private.bar_categories
  referencing old table as old_rows new table as new_rows
  for each statement execute function private.category_bar_counts_sync();
create or replace trigger category_bar_counts_delete after delete on private.bar_categories
  referencing old table as old_rows for each statement execute function private.category_bar_counts_sync();
create or replace trigger category_bar_counts_truncate after truncate on private.bar_categories
  for each statement execute function private.category_bar_counts_sync();

-- cities' q folds like search (private.search_fold, 05-city-lookup.sql): case, accents,
-- apostrophes and runs of white space. (Replaces an own helper of the first version.)
drop function if exists private.discovery_fold(text);

-- ---------------------------------------------------------------- GET categories

create or replace function api.categories()
  returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off
as $$
begin
  return (
    select json_build_object('categories', coalesce(json_agg(json_build_object(
      'name', c.name, 'slug', c.slug, 'bar_count', coalesce(k.n, 0)) order by c.name, c.slug), '[]'))
    from private.categories c
    left join private.category_bar_counts k on k.category_id = c.id);
end
$$;

revoke all on function api.categories() from public;
grant execute on function api.categories() to bar_partner;

-- ---------------------------------------------------------------- GET cities

-- Most bars first, then name. A few hundred cities: one pass over cities and
-- city_bar_counts; `q` matches the folded name's prefix.
create or replace function api.cities(p_state text, p_q text, p_page integer, p_per_page integer)
  returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off
as $$
declare
  v_prefix text := case when p_q is null then null else private.like_prefix(private.search_fold(p_q)) end;
  v_total bigint;
  v_items json;
begin
  select count(*) into v_total
  from private.cities c
  where (p_state is null or c.state = upper(p_state))
    and (v_prefix is null or private.search_fold(c.name) like v_prefix);

  select coalesce(json_agg(r.j order by r.bar_count desc, r.name, r.id), '[]') into v_items
  from (
    select c.id, c.name, coalesce(k.n, 0) as bar_count,
           json_build_object('name', c.name, 'state', c.state, 'time_zone', c.time_zone,
             'latitude', c.latitude, 'longitude', c.longitude, 'bar_count', coalesce(k.n, 0)) as j
    from private.cities c
    left join private.city_bar_counts k on k.city_id = c.id
    where (p_state is null or c.state = upper(p_state))
      and (v_prefix is null or private.search_fold(c.name) like v_prefix)
    order by coalesce(k.n, 0) desc, c.name, c.id
    offset (p_page - 1)::bigint * p_per_page
    limit p_per_page) r;

  return json_build_object('cities', v_items, 'pagination', private.pagination_json(p_page, p_per_page, v_total));
end
$$;

revoke all on function api.cities(text, text, integer, integer) from public;
grant execute on function api.cities(text, text, integer, integer) to bar_partner;

-- ---------------------------------------------------------------- GET groups/:state/:city

-- NULL for an unknown city (404).
create or replace function api.groups(p_state text, p_city text)
  returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off
as $$
declare
  v_city private.cities;
begin
  select * into v_city from private.find_city(p_state, p_city);
  if v_city.id is null then
    return null;
  end if;
  return json_build_object(
    'city', private.city_json(v_city),
    'groups', (
      select coalesce(json_agg(json_build_object('name', g.name, 'slug', g.slug, 'bar_count',
        (select count(*) from private.bar_groups bg where bg.group_id = g.id)) order by g.name, g.slug), '[]')
      from private.groups g where g.city_id = v_city.id));
end
$$;

revoke all on function api.groups(text, text) from public;
grant execute on function api.groups(text, text) to bar_partner;
