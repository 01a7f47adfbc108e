-- GET search (issue 10), part 1 of 2: the search structure's upkeep (the term
-- table search_terms, the name lexicon and their triggers, the rebuild and the
-- backfill). The query side (api.search and its tiers) is 28-search.sql, applied
-- after this file. Tables, indexes and the private.search_hit type: committed
-- migration 000006 and 000008; the trigram tier's word lexicon: committed
-- migration 000009. Folding (private.search_fold): 05-city-lookup.sql.
--
-- Relevance tiers, as the rows written here serve them (decisions.md "Ordering";
-- the full description of how a request is served heads 28-search.sql):
--   1 exact name      the folded name (a city: "<name>" or "<name>, <st>") equals q
--   2 name prefix     the folded name starts with q
--   3 word            a later word of the name starts with q (q may span several words)
--   4 trigram         pg_trgm similarity over the lexicon's names

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

-- The words of a lexicon key as pg_trgm reads words (runs of letters and
-- digits), in order: "joes bar & grill" -> {joes, bar, grill}. Not strict (null
-- gives null all the same): a strict function over a non-strict call
-- (array_remove) is not inlined, and was planned again on every search.
create or replace function private.search_key_words(p_key text) returns text[]
  language sql immutable parallel safe
as $$
  select array_remove(regexp_split_to_array(p_key collate "default", '[^[:alnum:]]+'), '')
$$;

-- The search_name_words rows of one key: each word with the word after it.
create or replace function private.search_key_word_rows(p_key text) returns table (word text, next_word text)
  language sql immutable parallel safe  -- (not strict: inlined into the statements that use it)
as $$
  select w.a[i], coalesce(w.a[i + 1], '') from (select private.search_key_words(p_key) as a) w
  cross join lateral generate_subscripts(w.a, 1) as i
$$;

-- Adds / removes lexicon counts for a set of names (one per entity and key). A
-- key that appears (its count is only this statement's) adds its word rows
-- (search_name_words) and word counts (search_words); a key whose last entity
-- goes removes them.
create or replace function private.search_names_add(p_keys text[]) returns void
  language sql
as $$
  with d as (select k, count(*)::integer as c from unnest(p_keys) k where k <> '' group by k),
  upsert as (
    insert into private.search_names as n (name_key, entities) select d.k, d.c from d
    on conflict (name_key) do update set entities = n.entities + excluded.entities
    returning n.name_key, n.entities),
  fresh as (select u.name_key as k from upsert u join d on d.k = u.name_key where u.entities = d.c),
  w as (select f.k, r.word, r.next_word from fresh f cross join lateral private.search_key_word_rows(f.k) r),
  ins as (insert into private.search_name_words (word, next_word, name_key) select w.word, w.next_word, w.k from w)
  insert into private.search_words (word, names)
  select w.word, count(*)::integer from w group by w.word
  on conflict (word) do update set names = private.search_words.names + excluded.names
$$;

create or replace function private.search_names_remove(p_keys text[]) returns void
  language sql
as $$
  with d as (select k, count(*)::integer as c from unnest(p_keys) k where k <> '' group by k),
  gone as (delete from private.search_names n using d where n.name_key = d.k and n.entities <= d.c returning n.name_key),
  fewer as (update private.search_names n set entities = n.entities - d.c from d where n.name_key = d.k and n.entities > d.c),
  w as (select g.name_key as k, r.word, r.next_word from gone g cross join lateral private.search_key_word_rows(g.name_key) r),
  del as (delete from private.search_name_words s using w
          where s.word = w.word and s.next_word = w.next_word and s.name_key = w.k),
  c as (select w.word, count(*)::integer as c from w group by w.word),
  last as (delete from private.search_words x using c where x.word = c.word and x.names <= c.c)
  update private.search_words x set names = x.names - c.c from c where x.word = c.word and x.names > c.c
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
-- load the indexes of search_terms and search_name_words are dropped and rebuilt
-- from their own definitions (committed 000006, committed migration 000009):
-- one sort per index instead of millions of index insertions. The lexicon
-- (search_names) is the tier-2 rows of search_terms counted (the folded names,
-- and a city's "<name>, <st>"), so names are folded once.
create or replace function private.search_rebuild() returns void
  language plpgsql
  set search_path = private, public, pg_temp
as $$
declare
  v_bulk boolean := (select count(*) from (select from private.bars limit 100000) x) >= 100000;
  v_indexes text[];
  v_def text;
begin
  truncate private.search_terms, private.search_names, private.search_name_words, private.search_words;
  if v_bulk then
    select coalesce(array_agg(pg_get_indexdef(i.indexrelid)), '{}') into v_indexes
    from pg_index i where i.indrelid in ('private.search_terms'::regclass, 'private.search_name_words'::regclass);
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
  -- (search_entity_names' keys are exactly these rows)
  insert into private.search_names (name_key, entities)
  select t.suffix, count(*)::integer from private.search_terms t where t.tier = 2 group by t.suffix;
  insert into private.search_name_words (word, next_word, name_key)
  select r.word, r.next_word, n.name_key from private.search_names n
  cross join lateral private.search_key_word_rows(n.name_key) r;
  insert into private.search_words (word, names)
  select s.word, count(*)::integer from private.search_name_words s group by s.word;
  if v_bulk then
    foreach v_def in array v_indexes loop
      execute v_def;
    end loop;
    analyze private.search_terms;
    analyze private.search_names;
    analyze private.search_name_words;
    analyze private.search_words;
  end if;
end
$$;

create or replace function private.search_truncate_sync() returns trigger
  language plpgsql
as $$
begin
  if current_setting('private.defer_search', true) = 'on' then
    truncate private.search_terms, private.search_names, private.search_name_words, private.search_words;
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
