-- Text folding for search and city paths, and the city lookup of every city
-- endpoint (bars_by_city, events, posts, feed, groups ...). Repeatable file.

-- Folded form of a name or query: lower case, accents removed (contrib unaccent,
-- with its dictionary named so the result does not depend on search_path),
-- apostrophes (' and ’) removed, runs of white space as one space, trimmed.
-- "Cañon City" -> "canon city", "O'Reilly’s  Pub" -> "oreillys pub", "Ōsaka" -> "osaka".
-- Stable, as unaccent is: so the planner inlines it (an immutable wrapper over a stable call is
-- parsed and planned again on every call instead). No index or generated column uses it.
-- api.search, pgbench with prepared statements at 1M bars: +2 to +13 % TPS (docs/performance/2026-12-02-v1.3.md).
create or replace function private.search_fold(p_text text) returns text
  language sql stable strict parallel safe
as $$
  select btrim(regexp_replace(
    replace(lower(public.unaccent('public.unaccent'::regdictionary, p_text)), '''', ''),
    '\s+', ' ', 'g'))
$$;

-- A city by its path segments: state case-insensitively, city case- and
-- accent-insensitively (CO/canon%20city is "Cañon City, CO"). The usual case,
-- the name as written up to case, is one probe of cities_state_name_key; only
-- when that finds nothing are the state's cities (a few dozen rows) folded and
-- compared (Append stops at the first row, so the fold runs only then). When two
-- cities of a state fold to the same name, the lowest id wins.
create or replace function private.find_city(p_state text, p_city text) returns setof private.cities
  language sql stable parallel safe
as $$
  select * from (
    select c.* from private.cities c
    where upper(c.state) = upper(p_state) and lower(c.name) = lower(p_city)
    union all
    (select c.* from private.cities c
     where upper(c.state) = upper(p_state)
       and private.search_fold(c.name) = private.search_fold(p_city)
     order by c.id
     limit 1)
  ) found
  limit 1
$$;
