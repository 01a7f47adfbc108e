-- GET search (issue 10): the search structure's maintenance and api.search.
-- Tables, indexes and the private.search_hit type: db/migrations/current/20-search.sql.
-- Folding (private.search_fold): 05-city-lookup.sql.
--
-- Relevance tiers (decisions.md "Ordering"), over folded text (case, accents and
-- apostrophes ignored):
--   1 exact name      the folded name (a city: "<name>" or "<name>, <st>") equals q
--   2 name prefix     the folded name starts with q
--   3 word            a later word of the name starts with q (q may span several words)
--   4 trigram         pg_trgm similarity(q, name) >= 0.3 or word_similarity >= 0.6,
--                     by similarity; candidates: the 200 most similar distinct names
-- Within a tier (and equal similarity): nearer first with a position, else more
-- popular first (bar: google_ratings_total, city: population); then bars before
-- cities, then id. At most the 1,000 best matches are served (decisions.md v1.1).
--
-- How each tier is served (private.search_tier): the tier's matches are counted up
-- to 20,000 in one range of search_terms_range (index-only). Fewer: all of them are
-- read from that range and sorted. More: the best are read in order by an index
-- walk that stops at the needed count: search_terms_p1/p2/p3 (most popular first
-- within the first 1/2/3 letters) or, with a position, a KNN walk of
-- search_terms_near (nearest first within the tier and first three letters).

-------------------------------------------------------------------------------
-- Structure rows and maintenance
-------------------------------------------------------------------------------

-- The search_terms rows of one entity: one per word-start suffix of its folded
-- name (the first is tier 2, later ones tier 3); a city adds "<name>, <st>" (tier 2).
create or replace function private.search_entity_rows(
  p_kind smallint, p_id bigint, p_name text, p_state text, p_popularity bigint, p_geo public.earth
) returns setof private.search_terms
  language sql immutable parallel safe
as $$
  select p_kind, p_id, case when w.pos = 1 then 2 else 3 end::smallint,
         array_to_string(f.words[w.pos:], ' '), p_popularity, p_geo
  from (select string_to_array(private.search_fold(p_name), ' ') as words) f
  cross join lateral generate_subscripts(f.words, 1) as w(pos)
  union all
  select p_kind, p_id, 2::smallint, private.search_fold(p_name) || ', ' || lower(p_state), p_popularity, p_geo
  where p_state is not null and private.search_fold(p_name) <> ''
$$;

-- The lexicon keys of one entity (the fuzzy tier's names).
create or replace function private.search_entity_names(p_name text, p_state text) returns setof text
  language sql immutable parallel safe
as $$
  select k from (values (private.search_fold(p_name)),
                        (case when p_state is not null then private.search_fold(p_name) || ', ' || lower(p_state) end)) v(k)
  where k is not null and k not in ('', ', ' || lower(p_state))
$$;

-- Adds / removes lexicon counts for a set of names (one per entity and key).
create or replace function private.search_names_add(p_keys text[]) returns void
  language sql
as $$
  insert into private.search_names (name_key, entities)
  select k, count(*)::integer from unnest(p_keys) k where k <> '' group by k
  on conflict (name_key) do update set entities = private.search_names.entities + excluded.entities
$$;

create or replace function private.search_names_remove(p_keys text[]) returns void
  language sql
as $$
  with d as (select k, count(*)::integer as c from unnest(p_keys) k where k <> '' group by k),
  gone as (delete from private.search_names n using d where n.name_key = d.k and n.entities <= d.c)
  update private.search_names n set entities = n.entities - d.c
  from d where n.name_key = d.k and n.entities > d.c
$$;

-- Set-based maintenance: statement-level triggers with transition tables (a
-- bulk load such as the seed pays a few set-based statements, not a call per row).
create or replace function private.search_bars_sync() returns trigger
  language plpgsql
as $$
begin
  if current_setting('private.defer_search', true) = 'on' then
    return null; -- a bulk load (the seed) calls private.search_rebuild() once at its end
  end if;
  if tg_op = 'INSERT' then
    insert into private.search_terms
    select r.* from new_rows b
    cross join lateral private.search_entity_rows(1::smallint, b.id, b.name, null, b.google_ratings_total, b.geo) r;
    perform private.search_names_add(array(select private.search_fold(b.name) from new_rows b));
  elsif tg_op = 'DELETE' then
    delete from private.search_terms t using old_rows o where t.id = o.id and t.kind = 1;
    perform private.search_names_remove(array(select private.search_fold(o.name) from old_rows o));
  else
    -- only the bars whose name, popularity or position changed
    delete from private.search_terms t using old_rows o join new_rows n on n.id = o.id
    where t.id = o.id and t.kind = 1
      and (o.name, o.google_ratings_total, o.geo) is distinct from (n.name, n.google_ratings_total, n.geo);
    perform private.search_names_remove(array(
      select private.search_fold(o.name) from old_rows o join new_rows n on n.id = o.id where o.name is distinct from n.name));
    insert into private.search_terms
    select r.* from new_rows n join old_rows o on o.id = n.id
    cross join lateral private.search_entity_rows(1::smallint, n.id, n.name, null, n.google_ratings_total, n.geo) r
    where (o.name, o.google_ratings_total, o.geo) is distinct from (n.name, n.google_ratings_total, n.geo);
    perform private.search_names_add(array(
      select private.search_fold(n.name) from new_rows n join old_rows o on o.id = n.id where o.name is distinct from n.name));
  end if;
  return null;
end
$$;

create or replace function private.search_cities_sync() returns trigger
  language plpgsql
as $$
begin
  if current_setting('private.defer_search', true) = 'on' then
    return null;
  end if;
  if tg_op = 'INSERT' then
    insert into private.search_terms
    select r.* from new_rows c
    cross join lateral private.search_entity_rows(2::smallint, c.id, c.name, c.state, coalesce(c.population, 0)::bigint, c.geo) r;
    perform private.search_names_add(array(
      select k from new_rows c cross join lateral private.search_entity_names(c.name, c.state) k));
  elsif tg_op = 'DELETE' then
    delete from private.search_terms t using old_rows o where t.id = o.id and t.kind = 2;
    perform private.search_names_remove(array(
      select k from old_rows o cross join lateral private.search_entity_names(o.name, o.state) k));
  else
    delete from private.search_terms t using old_rows o join new_rows n on n.id = o.id
    where t.id = o.id and t.kind = 2
      and (o.name, o.state, o.population, o.geo) is distinct from (n.name, n.state, n.population, n.geo);
    perform private.search_names_remove(array(
      select k from old_rows o join new_rows n on n.id = o.id
      cross join lateral private.search_entity_names(o.name, o.state) k
      where (o.name, o.state) is distinct from (n.name, n.state)));
    insert into private.search_terms
    select r.* from new_rows n join old_rows o on o.id = n.id
    cross join lateral private.search_entity_rows(2::smallint, n.id, n.name, n.state, coalesce(n.population, 0)::bigint, n.geo) r
    where (o.name, o.state, o.population, o.geo) is distinct from (n.name, n.state, n.population, n.geo);
    perform private.search_names_add(array(
      select k from new_rows n join old_rows o on o.id = n.id
      cross join lateral private.search_entity_names(n.name, n.state) k
      where (o.name, o.state) is distinct from (n.name, n.state)));
  end if;
  return null;
end
$$;

-- The whole structure recomputed from bars and cities (set-based): the backfill
-- of an existing database, TRUNCATE of bars or cities, the seed (after its load,
-- with the per-statement triggers deferred) and the tests' reference. For a big
-- load the indexes of search_terms are dropped and rebuilt from their own
-- definitions (current/20-search.sql): one sort per index instead of 3 million
-- index insertions.
create or replace function private.search_rebuild() returns void
  language plpgsql
  set search_path = private, public, pg_temp
as $$
declare
  v_bulk boolean := (select count(*) from (select from private.bars limit 100000) x) >= 100000;
  v_indexes text[];
  v_def text;
begin
  truncate private.search_terms, private.search_names;
  if v_bulk then
    select coalesce(array_agg(pg_get_indexdef(i.indexrelid)), '{}') into v_indexes
    from pg_index i where i.indrelid = 'private.search_terms'::regclass;
    foreach v_def in array v_indexes loop
      execute format('drop index private.%I', substring(v_def from '^CREATE (?:UNIQUE )?INDEX (\S+) ON'));
    end loop;
    perform set_config('maintenance_work_mem', '512MB', true);
  end if;
  insert into private.search_terms
  select r.* from private.bars b
  cross join lateral private.search_entity_rows(1::smallint, b.id, b.name, null, b.google_ratings_total, b.geo) r;
  insert into private.search_terms
  select r.* from private.cities c
  cross join lateral private.search_entity_rows(2::smallint, c.id, c.name, c.state, coalesce(c.population, 0)::bigint, c.geo) r;
  insert into private.search_names (name_key, entities)
  select k, count(*)::integer from (
    select private.search_fold(b.name) as k from private.bars b
    union all
    select k from private.cities c cross join lateral private.search_entity_names(c.name, c.state) k
  ) s where k <> '' group by k;
  if v_bulk then
    foreach v_def in array v_indexes loop
      execute v_def;
    end loop;
    analyze private.search_terms;
    analyze private.search_names;
  end if;
end
$$;

create or replace function private.search_truncate_sync() returns trigger
  language plpgsql
as $$
begin
  if current_setting('private.defer_search', true) = 'on' then
    truncate private.search_terms, private.search_names;
    return null;
  end if;
  perform private.search_rebuild();
  return null;
end
$$;

create or replace trigger search_bars_insert after insert on private.bars
  referencing new table as new_rows for each statement execute function private.search_bars_sync();
create or replace trigger search_bars_update after update on private.bars
  referencing old table as old_rows new table as new_rows for each statement execute function private.search_bars_sync();
create or replace trigger search_bars_delete after delete on private.bars
  referencing old table as old_rows for each statement execute function private.search_bars_sync();
create or replace trigger search_bars_truncate after truncate on private.bars
  for each statement execute function private.search_truncate_sync();
create or replace trigger search_cities_insert after insert on private.cities
  referencing new table as new_rows for each statement execute function private.search_cities_sync();
create or replace trigger search_cities_update after update on private.cities
  referencing old table as old_rows new table as new_rows for each statement execute function private.search_cities_sync();
create or replace trigger search_cities_delete after delete on private.cities
  referencing old table as old_rows for each statement execute function private.search_cities_sync();
create or replace trigger search_cities_truncate after truncate on private.cities
  for each statement execute function private.search_truncate_sync();

-- Backfill of a database that had bars or cities before the structure existed
-- (a no-op once built, and on an empty database).
do $$
begin
  if not exists (select from private.search_terms)
     and (exists (select from private.bars) or exists (select from private.cities)) then
    perform private.search_rebuild();
  end if;
end $$;

-------------------------------------------------------------------------------
-- Query
-------------------------------------------------------------------------------

-- Index walks of one tier with many matches (see private.search_tier). Sorting
-- is disabled so the planner takes the walk that stops after p_limit rows even
-- where its estimates (generic plans) would rather sort a whole range.
create or replace function private.search_tier_popular(
  p_kind smallint, p_tier smallint, p_q text, p_limit integer
) returns setof private.search_hit
  language plpgsql stable
  set search_path = private, public, pg_temp
  set enable_sort = off
as $$
declare
  v_excl text := case when p_tier = 2 then p_q else '' end;
  v_b3 text := left(p_q, 3);
  v_n integer := length(p_q);
begin
  if v_n = 1 then
    return query
      select t.kind, t.id, p_tier, null::real, null::float8, t.popularity from private.search_terms t
      where t.kind = p_kind and left(t.suffix, 1) = p_q and t.tier = p_tier and t.suffix <> v_excl
      order by t.popularity desc, t.id limit p_limit;
  elsif v_n = 2 then
    return query
      select t.kind, t.id, p_tier, null::real, null::float8, t.popularity from private.search_terms t
      where t.kind = p_kind and left(t.suffix, 2) = p_q and t.tier = p_tier and t.suffix <> v_excl
      order by t.popularity desc, t.id limit p_limit;
  else
    return query
      select t.kind, t.id, p_tier, null::real, null::float8, t.popularity from private.search_terms t
      where t.kind = p_kind and left(t.suffix, 3) = v_b3 and t.tier = p_tier
        and left(t.suffix, v_n) = p_q and t.suffix <> v_excl
      order by t.popularity desc, t.id limit p_limit;
  end if;
end
$$;

create or replace function private.search_tier_near(
  p_kind smallint, p_tier smallint, p_q text, p_center public.earth, p_limit integer
) returns setof private.search_hit
  language plpgsql stable
  set search_path = private, public, pg_temp
  set enable_sort = off
as $$
declare
  v_excl text := case when p_tier = 2 then p_q else '' end;
  v_hi text := p_q || chr(1114111);
  v_n integer := length(p_q);
begin
  if v_n >= 3 then
    return query
      select t.kind, t.id, p_tier, null::real, t.geo <-> p_center, t.popularity from private.search_terms t
      where t.kind = p_kind and left(t.suffix, 3) = left(p_q, 3) and t.tier = p_tier
        and left(t.suffix, v_n) = p_q and t.suffix <> v_excl
      order by t.geo <-> p_center limit p_limit;
  else
    return query
      select t.kind, t.id, p_tier, null::real, t.geo <-> p_center, t.popularity from private.search_terms t
      where t.kind = p_kind and left(t.suffix, 3) >= p_q and left(t.suffix, 3) < v_hi and t.tier = p_tier
        and left(t.suffix, v_n) = p_q and t.suffix <> v_excl
      order by t.geo <-> p_center limit p_limit;
  end if;
end
$$;

-- The best p_limit matches of one tier (2 prefix or 3 word; 1 exact is an
-- equality lookup in api.search) of one kind, in the tier's order. p_q is folded.
create or replace function private.search_tier(
  p_kind smallint, p_tier smallint, p_q text, p_center public.earth, p_limit integer
) returns setof private.search_hit
  language plpgsql stable
  set search_path = private, public, pg_temp
as $$
declare
  v_hi text := p_q || chr(1114111);          -- every string starting with p_q is in [p_q, v_hi) (collation "C")
  v_excl text := case when p_tier = 2 then p_q else '' end; -- tier 2 leaves the exact name to tier 1
  v_b3 text := left(p_q, 3);
  v_n integer := length(p_q);
  v_count integer;
  c_all constant integer := 20000;           -- up to this many matches: read them all and sort
begin
  select count(*) into v_count from (
    select from private.search_terms t
    where t.kind = p_kind and t.tier = p_tier and t.suffix >= p_q and t.suffix < v_hi and t.suffix <> v_excl
    limit c_all) x;
  if v_count = 0 then
    return;
  elsif v_count < c_all then
    if p_center is null then
      return query
        select t.kind, t.id, p_tier, null::real, null::float8, t.popularity from private.search_terms t
        where t.kind = p_kind and t.tier = p_tier and t.suffix >= p_q and t.suffix < v_hi and t.suffix <> v_excl
        order by t.popularity desc, t.id limit p_limit;
    else
      return query
        select t.kind, t.id, p_tier, null::real, t.geo <-> p_center, t.popularity from private.search_terms t
        where t.kind = p_kind and t.tier = p_tier and t.suffix >= p_q and t.suffix < v_hi and t.suffix <> v_excl
        order by t.geo <-> p_center, t.popularity desc, t.id limit p_limit;
    end if;
  elsif p_center is null then
    return query select * from private.search_tier_popular(p_kind, p_tier, p_q, p_limit);
  else
    return query select * from private.search_tier_near(p_kind, p_tier, p_q, p_center, p_limit);
  end if;
end
$$;

-- The trigram tier of the given kinds: the 200 distinct names most similar to
-- p_q (pg_trgm thresholds) that do not already match by prefix or word,
-- expanded to their entities, best p_limit first.
drop function if exists private.search_fuzzy(smallint, text, public.earth, integer);
create or replace function private.search_fuzzy(
  p_kinds smallint[], p_q text, p_center public.earth, p_limit integer
) returns setof private.search_hit
  language sql stable
  set search_path = private, public, pg_temp
as $$
  with names as (
    select n.name_key, greatest(similarity(p_q, n.name_key), word_similarity(p_q, n.name_key)) as score
    from private.search_names n
    where (n.name_key % p_q or p_q <% n.name_key)
      -- names that match by prefix or word are in tiers 1-3: the budget is for the others
      and not starts_with(n.name_key, p_q) and strpos(n.name_key, ' ' || p_q) = 0
    order by 2 desc, 1
    limit 200
  )
  select t.kind, t.id, 4::smallint, n.score,
         case when p_center is not null then t.geo <-> p_center end, t.popularity
  from names n
  join private.search_terms t on t.kind = any (p_kinds) and t.tier = 2 and t.suffix = n.name_key
  order by n.score desc, case when p_center is not null then t.geo <-> p_center end, t.popularity desc, t.id
  limit p_limit
$$;

drop function if exists api.search(text, double precision, double precision, integer, integer);

create or replace function api.search(
  p_q text,
  p_latitude double precision default null,
  p_longitude double precision default null,
  p_page integer default 1,
  p_per_page integer default 20,
  p_type text default null
) returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off
as $$
declare
  c_cap constant integer := 1000;
  v_q text := private.search_fold(p_q);
  v_center public.earth;
  v_kinds smallint[];
  v_kind smallint;
  v_hits private.search_hit[] := '{}';
  v_top private.search_hit[];
  v_found integer;
  v_total integer;
begin
  if p_page is null or p_page < 1 or p_per_page is null or p_per_page < 1 or p_per_page > 100 then
    raise exception 'page must be >= 1 and per_page 1-100' using errcode = 'PT400';
  end if;
  if (p_page - 1)::bigint * p_per_page >= c_cap then
    raise exception 'search results end at the 1,000th match; narrow q (or use GET bars filters)' using errcode = 'PT400';
  end if;
  if p_type is not null and p_type not in ('bar', 'city') then
    raise exception 'type must be one of bar, city' using errcode = 'PT400';
  end if;
  if p_latitude is not null and p_longitude is not null then
    v_center := private.earth_point(p_latitude, p_longitude);
  end if;
  v_kinds := case p_type when 'bar' then '{1}' when 'city' then '{2}' else '{1,2}' end;

  if coalesce(v_q, '') <> '' then
    -- tier 1: exact name
    foreach v_kind in array v_kinds loop
      v_hits := v_hits || array(
        select row(t.kind, t.id, 1, null, t.geo <-> v_center, t.popularity)::private.search_hit
        from private.search_terms t
        where t.kind = v_kind and t.tier = 2 and t.suffix = v_q
        order by t.geo <-> v_center, t.popularity desc, t.id
        limit c_cap + 1);
    end loop;
    -- tiers 2 and 3: enough of each to fill the cap after removing entities of a better tier
    foreach v_kind in array v_kinds loop
      v_hits := v_hits || array(select h from private.search_tier(v_kind, 2::smallint, v_q, v_center,
                                                                   c_cap + 1 + cardinality(v_hits)) h);
    end loop;
    v_found := cardinality(v_hits);
    foreach v_kind in array v_kinds loop
      v_hits := v_hits || array(select h from private.search_tier(v_kind, 3::smallint, v_q, v_center,
                                                                   c_cap + 1 + v_found + 64) h);
    end loop;
    select count(distinct (h.kind, h.id)) into v_found from unnest(v_hits) h;
    -- tier 4 only when the better tiers leave room below the cap
    if v_found <= c_cap then
      v_hits := v_hits || array(select h from private.search_fuzzy(v_kinds, v_q, v_center, c_cap + 1 + cardinality(v_hits)) h);
    end if;
  end if;

  -- each entity once, at its best tier; the best c_cap + 1 in relevance order
  v_top := array(
    select h from (
      select distinct on (h.kind, h.id) h.*
      from unnest(v_hits) h
      order by h.kind, h.id, h.tier, h.score desc nulls last
    ) h
    order by h.tier, h.score desc nulls last, h.dist, h.popularity desc, h.kind, h.id
    limit c_cap + 1);
  v_total := least(cardinality(v_top), c_cap);

  return json_build_object(
    'results', (
      select coalesce(json_agg(r.body order by r.n), '[]'::json)
      from (
        select p.n, case when p.kind = 1 then (
                 select json_build_object(
                   'type', 'bar', 'id', b.id::text, 'name', b.name, 'address', b.address, 'state', c.state,
                   'location', private.geojson_point(b.latitude, b.longitude), 'price_level', b.price_level,
                   'distance', round((earth_distance(v_center, b.geo) / 1609.344)::numeric, 2)::double precision,
                   'image_url', b.profile_picture_url)
                 from private.bars b join private.cities c on c.id = b.city_id where b.id = p.id)
               else (
                 select json_build_object(
                   'type', 'city', 'id', c.id::text, 'name', c.name || ', ' || c.state, 'address', null, 'state', c.state,
                   'location', private.geojson_point(c.latitude, c.longitude), 'price_level', null,
                   'distance', round((earth_distance(v_center, c.geo) / 1609.344)::numeric, 2)::double precision,
                   'image_url', null)
                 from private.cities c where c.id = p.id)
               end as body
        from unnest(v_top[(p_page - 1) * p_per_page + 1 : least(p_page * p_per_page, c_cap)])
               with ordinality as p(kind, id, tier, score, dist, popularity, n)
      ) r),
    'pagination', private.pagination_json(p_page, p_per_page, v_total),
    'total_count_capped', cardinality(v_top) > c_cap);
end
$$;

grant execute on function api.search(text, double precision, double precision, integer, integer, text) to bar_partner;
