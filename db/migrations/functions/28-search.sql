-- GET search (issue 10), part 2 of 2: the query side, api.search and its tiers.
-- The term table and lexicon it reads are kept by 27-search-terms.sql (applied first).
-- Tables, indexes and the private.search_hit type: committed migration 000006
-- and 000008; the trigram tier's word lexicon: committed migration 000009.
-- Folding (private.search_fold): 05-city-lookup.sql.
--
-- Relevance tiers (decisions.md "Ordering"), over folded text (case, accents and
-- apostrophes ignored):
--   1 exact name      the folded name (a city: "<name>" or "<name>, <st>") equals q
--   2 name prefix     the folded name starts with q
--   3 word            a later word of the name starts with q (q may span several words)
--   4 trigram         pg_trgm similarity(q, name) >= 0.3 or word_similarity >= 0.6,
--                     by similarity; candidates: every city key, and the 200 most
--                     similar distinct bar names found through the words of the
--                     names by bounded probes (private.search_fuzzy_names)
-- Within a tier (and equal similarity): nearer first with a position, else more
-- popular first (bar: google_ratings_total, city: population); then bars before
-- cities, then id. At most the 1,000 best matches are served (decisions.md v1.1).
--
-- How a request is served (api.search): total_count counts the entities of
-- tiers 1-3 up to 1,001 in q's ranges of search_terms_range (index-only); a
-- frequent word ends that at its first range holding 1,001 entities (the usual
-- case of a short or common q: one statement, no arrays). The
-- trigram tier runs only when that leaves room below the cap (private.search_fuzzy_names and
-- bounded probes of the lexicon). The page is then read tier by tier, each only as
-- far as the page reaches (page 1 of 20: about 20 rows, not 1,000):
-- private.search_tier (index walks that stop at the needed count, or one range of
-- search_terms_range for a q with few matches; a range found broad is walked
-- without counting it again).

-------------------------------------------------------------------------------
-- Query
-------------------------------------------------------------------------------

-- Index walks of one tier with many matches (see private.search_tier), in the
-- tier's order, stopping at p_limit matches. For q of 1-3 letters every row of
-- the walked bucket (kind, tier, first letters) matches. A longer q filters the
-- rows of its 3-letter bucket: the walk reads at most p_scan of them (then
-- search_tier reads q's whole range instead: q is a small part of its bucket).
-- Sorting is disabled so the planner takes the walk that stops early even where
-- its estimates (generic plans) would rather sort a whole range.
drop function if exists private.search_tier_popular(smallint, smallint, text, integer);
create or replace function private.search_tier_popular(
  p_kind smallint, p_tier smallint, p_q text, p_limit integer, p_scan integer
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
  elsif v_n = 3 then
    return query
      select t.kind, t.id, p_tier, null::real, null::float8, t.popularity from private.search_terms t
      where t.kind = p_kind and left(t.suffix, 3) = v_b3 and t.tier = p_tier and t.suffix <> v_excl
      order by t.popularity desc, t.id limit p_limit;
  else
    return query
      select w.kind, w.id, p_tier, null::real, null::float8, w.popularity from (
        select t.kind, t.id, t.suffix, t.popularity from private.search_terms t
        where t.kind = p_kind and left(t.suffix, 3) = v_b3 and t.tier = p_tier
        order by t.popularity desc, t.id limit p_scan) w
      where left(w.suffix, v_n) = p_q and w.suffix <> v_excl
      order by w.popularity desc, w.id limit p_limit;
  end if;
end
$$;

drop function if exists private.search_tier_near(smallint, smallint, text, public.earth, integer);
create or replace function private.search_tier_near(
  p_kind smallint, p_tier smallint, p_q text, p_center public.earth, p_limit integer, p_scan integer
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
  if v_n = 3 then
    return query
      select t.kind, t.id, p_tier, null::real, t.geo <-> p_center, t.popularity from private.search_terms t
      where t.kind = p_kind and left(t.suffix, 3) = p_q and t.tier = p_tier and t.suffix <> v_excl
      order by t.geo <-> p_center limit p_limit;
  elsif v_n > 3 then
    return query
      select w.kind, w.id, p_tier, null::real, w.dist, w.popularity from (
        select t.kind, t.id, t.suffix, t.geo <-> p_center as dist, t.popularity from private.search_terms t
        where t.kind = p_kind and left(t.suffix, 3) = left(p_q, 3) and t.tier = p_tier
        order by t.geo <-> p_center limit p_scan) w
      where left(w.suffix, v_n) = p_q and w.suffix <> v_excl
      order by w.dist, w.popularity desc, w.id limit p_limit;
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
-- q of 1-3 letters without a position: one walk (its bucket is the matches).
-- Otherwise the matches are counted up to 2,000 (or p_limit) in q's range of
-- search_terms_range (index-only): fewer are all read from that range and
-- sorted (B-tree leaves in order: cheaper than a GiST walk's scattered pages);
-- more are read by a walk that stops at p_limit (most popular first, or with a
-- position a KNN walk of search_terms_near), bounded for a q longer than three
-- letters; when the bound ends the walk first, from the range after all.
-- p_broad (api.search found more than a thousand rows in q's range of this kind and
-- tier): without a position, the popularity walk first, over at most c_all rows of
-- q's bucket, with no count. It fills the page whenever q is at least p_limit / c_all
-- of its bucket (a frequent word); else the count decides as above. Either way the
-- page is the same: the first p_limit matches by popularity, then id.
drop function if exists private.search_tier(smallint, smallint, text, public.earth, integer);
create or replace function private.search_tier(
  p_kind smallint, p_tier smallint, p_q text, p_center public.earth, p_limit integer, p_broad boolean default false
) returns setof private.search_hit
  language plpgsql stable
  set search_path = private, public, pg_temp
as $$
declare
  v_hi text := p_q || chr(1114111);          -- every string starting with p_q is in [p_q, v_hi) (collation "C")
  v_excl text := case when p_tier = 2 then p_q else '' end; -- tier 2 leaves the exact name to tier 1
  v_n integer := length(p_q);
  v_count integer;
  v_walk private.search_hit[];
  c_all constant integer := 2000;            -- up to this many matches: read them all from the range and sort
  c_scan constant integer := 20000;          -- bucket rows of a popularity walk (index-only, ~8 ms)
  c_scan_near constant integer := 4000;      -- bucket rows of a KNN walk (~10 ms)
begin
  if p_limit < 1 then
    return;
  end if;
  if v_n <= 3 and p_center is null then
    return query select * from private.search_tier_popular(p_kind, p_tier, p_q, p_limit, null);
    return;
  end if;
  if p_broad and p_center is null then
    v_walk := array(select h from private.search_tier_popular(p_kind, p_tier, p_q, p_limit, c_all) h);
    if cardinality(v_walk) = p_limit then
      return query select * from unnest(v_walk);
      return;
    end if;
  end if;
  select count(*) into v_count from (
    select from private.search_terms t
    where t.kind = p_kind and t.tier = p_tier and t.suffix >= p_q and t.suffix < v_hi and t.suffix <> v_excl
    limit greatest(p_limit, c_all)) x;
  if v_count = 0 then
    return;
  elsif v_count = greatest(p_limit, c_all) then
    if p_center is null then
      v_walk := array(select h from private.search_tier_popular(p_kind, p_tier, p_q, p_limit, c_scan) h);
    elsif v_n <= 3 or p_limit <= c_scan_near / 8 then
      -- (for a deep page a longer q would have to be an eighth of its bucket: its range is read instead)
      v_walk := array(select h from private.search_tier_near(p_kind, p_tier, p_q, p_center, p_limit, c_scan_near) h);
    end if;
    if cardinality(v_walk) = p_limit then
      return query select * from unnest(v_walk);
      return;
    end if;
  end if;
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
end
$$;

-- The trigram tier (4): names similar to q that do not match by prefix or word
-- (those are in tiers 1-3): similarity >= 0.3 or word_similarity >= 0.6, by score
-- greatest(similarity, word_similarity), which is word_similarity (never below
-- similarity: the whole name is one of its extents).
--
-- Cities (a few hundred keys): every qualifying key (search_fuzzy_cities).
-- Bars: the 200 best-scoring qualifying names of the lexicon (search_names),
-- expanded to their entities (p_need: how many entities api.search still needs).
-- A GIN trigram scan of every name cannot stop early and reads the long posting
-- lists of common trigrams (4-13 ms at 1M bars), and scoring a name costs ~4 us,
-- so candidate names come through their words (committed migration 000009):
--   similar words: for each of q's first 8 words (pg_trgm's words: letters and
--     digits), the 6 words of the lexicon most similar to it (similarity >= 0.3;
--     search_words, hundreds of rows, GIN). A carrier holds 60% of q's
--     trigrams alone (word_similarity(q, word) >= 0.6); a word is rare in at most
--     300 name positions (search_words.names), frequent otherwise.
--   probes of search_name_words, in this order, each skipping names that match
--     by prefix or word and yielding at most 100 names:
--     1 a carrier: its names (of the first 1,000 rows);
--     2 two frequent similar words a, b whose trigrams could reach 60% of q's
--       together (the 16 that share most): the names in which b follows a;
--     3 a rare similar word: its names that contain another similar word;
--     4 two frequent similar words short of 60% together (the 8 that share
--       most): the names in which b follows a and that contain a third similar
--       word (of the first 300 rows);
--     at most 500 candidates in all, each scored (word_similarity).
--   similarity >= 0.3 below that (weaker matches, "canon" -> "canyon club"): only
--     when the candidates leave room (fewer than 200 names and p_need entities),
--     among the 100 names nearest q in key order (50 each side: the same
--     beginning, a later word changed), by the lexicon's primary key.
-- So a name with word_similarity >= 0.6 is found (within those budgets) when
-- the words of it that share q's trigrams are similar words, and one of them is
-- a carrier or rare, or two frequent ones are next to each other; a weaker
-- match elsewhere in the lexicon is not found (docs/API-NOTES.md, Search).
create or replace function private.search_fuzzy_names(p_q text, p_names integer, p_need bigint)
  returns table (name_key text, score real, entities integer)
  language plpgsql stable
  set search_path = private, public, pg_temp
  set pg_trgm.similarity_threshold = 0.3  -- local to this function
  set enable_seqscan = off                -- the lexicon through its GIN index (a scan would score every word)
  set enable_bitmapscan = on              -- (GIN; off for the probes, below: local to this function)
  set jit = off                           -- (as api.search; the disabled scans' costs would call for JIT)
as $$
declare
  c_words constant integer := 8;       -- words of q looked up
  c_similar constant integer := 6;     -- lexicon words per word of q
  c_rare constant integer := 300;      -- a word in at most this many name positions is rare
  c_probe constant integer := 100;     -- names per probe
  c_scan constant integer := 1000;     -- rows a probe reads (names matching by prefix or word are skipped)
  c_scan_other constant integer := 300; -- rows a probe reads when its names need another similar word
  c_strong constant integer := 16;     -- pairs that could reach 60% of q's trigrams alone
  c_weak constant integer := 8;        -- pairs that need another similar word
  c_budget constant integer := 500;    -- candidates in all
  c_near constant integer := 50;
  c_last constant text := chr(1114111);
  v_qt text[] := show_trgm(p_q);
  v_tau real := 0.6 * cardinality(show_trgm(p_q));  -- q's trigrams a name must share for word_similarity >= 0.6
  v_words text[];
  v_names integer[];
  v_shared integer[];                  -- q's trigrams in the word
  v_carriers boolean[];
  v_pa text[];                         -- the probes, in order: names with word a followed by a word in
  v_plo text[];                        -- [lo, hi] (one word b, or any), that match re (null: all)
  v_phi text[];
  v_pre text[];
  v_keys text[] := '{}';
  v_scores real[] := '{}';
  v_entities integer[] := '{}';
begin
  -- similar words, with q's trigrams they hold and whether they hold 60% of q alone
  select coalesce(array_agg(x.word order by x.word), '{}'), coalesce(array_agg(x.names order by x.word), '{}'),
         coalesce(array_agg(z.shared order by x.word), '{}'), coalesce(array_agg(z.carrier order by x.word), '{}')
    into v_words, v_names, v_shared, v_carriers
  from (
    select distinct w.word, w.names
    from unnest((private.search_key_words(p_q))[1:c_words]) t(tok)
    cross join lateral (
      select x.word, x.names from private.search_words x
      where x.word % (t.tok collate "C")  -- similarity >= 0.3 (GIN; the index's collation)
      order by similarity(t.tok, x.word) desc, x.word
      limit c_similar) w
  ) x
  cross join lateral (
    select (select count(*) from unnest(show_trgm(x.word)) g where g = any(v_qt))::integer as shared,
           word_similarity(p_q, x.word) >= 0.6 as carrier
    offset 0) z;

  if cardinality(v_words) > 0 then
    select coalesce(array_agg(p.a order by p.pri, p.shared desc, p.a, p.lo), '{}'),
           coalesce(array_agg(p.lo order by p.pri, p.shared desc, p.a, p.lo), '{}'),
           coalesce(array_agg(p.hi order by p.pri, p.shared desc, p.a, p.lo), '{}'),
           coalesce(array_agg(p.re order by p.pri, p.shared desc, p.a, p.lo), '{}')
      into v_pa, v_plo, v_phi, v_pre
    from (
      -- carriers: their names
      select u.w as a, '' as lo, c_last as hi, null::text as re, 1 as pri, u.s as shared
      from unnest(v_words, v_shared, v_carriers) u(w, s, c)
      where u.c
      union all
      -- rare words: their names with another similar word
      select u.w, '', c_last, o.re, 3, u.s
      from unnest(v_words, v_names, v_shared, v_carriers) u(w, n, s, c)
      cross join lateral (select '\m(' || string_agg(x, '|') || ')\M' as re from unnest(v_words) x where x <> u.w) o
      where u.n <= c_rare and not u.c and o.re is not null
      union all
      -- two frequent similar words, b right after a: the names, or (weak pairs) those with a third one
      select p.a, p.b, p.b, case when not p.strong then p.re end, case when p.strong then 2 else 4 end, p.shared
      from (
        select a.w as a, b.w as b, a.s + b.s as shared, a.s + b.s >= v_tau as strong,
               (select '\m(' || string_agg(x, '|') || ')\M' from unnest(v_words) x where x <> a.w and x <> b.w) as re,
               row_number() over (partition by a.s + b.s >= v_tau order by a.s + b.s desc, a.w, b.w) as r
        from unnest(v_words, v_names, v_shared) a(w, n, s)
        join unnest(v_words, v_names, v_shared) b(w, n, s) on b.w <> a.w
        where a.n > c_rare and b.n > c_rare) p
      where p.r <= case when p.strong then c_strong else c_weak end
        and (p.strong or p.re is not null)
    ) p;

    -- the probes walk search_name_words in order and stop at their limits (a bitmap scan reads a whole range)
    perform set_config('enable_bitmapscan', 'off', true);
    select coalesce(array_agg(c.name_key), '{}'), coalesce(array_agg(c.score), '{}'), coalesce(array_agg(n.entities), '{}')
      into v_keys, v_scores, v_entities
    from (
      select c.name_key, w.score from (
        select distinct c.name_key from (
          select s.name_key from unnest(v_pa, v_plo, v_phi, v_pre) p(a, lo, hi, re)
          cross join lateral (
            select s.name_key from (
              select s.name_key from private.search_name_words s
              where s.word = p.a and s.next_word >= p.lo and s.next_word <= p.hi
              limit case when p.re is null then c_scan else c_scan_other end) s
            where not starts_with(s.name_key, p_q) and strpos(s.name_key, ' ' || p_q) = 0
              and (p.re is null or s.name_key ~ p.re)
            limit c_probe) s
          limit c_budget) c
      ) c
      cross join lateral (select word_similarity(p_q, c.name_key) as score offset 0) w
      where w.score >= 0.6 or (w.score >= 0.3 and similarity(p_q, c.name_key) >= 0.3)
      order by w.score desc, c.name_key
      limit p_names) c
    join private.search_names n on n.name_key = c.name_key;
  end if;

  if cardinality(v_keys) >= p_names or (select sum(u.e) from unnest(v_entities) u(e)) >= p_need then
    return query
      select u.k, u.s, u.e from unnest(v_keys, v_scores, v_entities) u(k, s, e)
      order by u.s desc, u.k;
    return;
  end if;
  return query
    select x.k, x.s, x.e from (
      select u.k, u.s, u.e from unnest(v_keys, v_scores, v_entities) u(k, s, e)
      union
      select c.name_key, word_similarity(p_q, c.name_key), c.entities
      from (
        (select n.name_key, n.entities from private.search_names n
         where n.name_key >= p_q order by n.name_key limit c_near)
        union all
        (select n.name_key, n.entities from private.search_names n
         where n.name_key < p_q order by n.name_key desc limit c_near)
      ) c
      where similarity(p_q, c.name_key) >= 0.3
        and not starts_with(c.name_key, p_q) and strpos(c.name_key, ' ' || p_q) = 0
    ) x(k, s, e)
    order by x.s desc, x.k
    limit p_names;
end
$$;

-- Cities: every qualifying key, through their own trigram index
-- (search_terms_city_trgm, committed 000008); index scans are disabled so
-- the planner does not filter all the city rows of search_terms_range instead.
create or replace function private.search_fuzzy_cities(p_q text, p_center public.earth, p_limit integer)
  returns setof private.search_hit
  language plpgsql stable
  set search_path = private, public, pg_temp
  set pg_trgm.word_similarity_threshold = 0.3
  set enable_indexscan = off
  set enable_indexonlyscan = off
as $$
begin
  return query
    select t.kind, t.id, 4::smallint, s.score,
           case when p_center is not null then t.geo <-> p_center end, t.popularity
    from private.search_terms t
    cross join lateral (select similarity(p_q, t.suffix) as sim, word_similarity(p_q, t.suffix) as wsim) w
    cross join lateral (select greatest(w.sim, w.wsim) as score) s
    where t.kind = 2 and t.tier = 2
      and p_q <% t.suffix  -- word_similarity >= 0.3, implied by either condition
      and (w.sim >= 0.3 or w.wsim >= 0.6)
      and not starts_with(t.suffix, p_q) and strpos(t.suffix, ' ' || p_q) = 0
    order by s.score desc, case when p_center is not null then t.geo <-> p_center end, t.popularity desc, t.id
    limit p_limit;
end
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
  set max_parallel_workers_per_gather = 0  -- a parallel sort of a few hundred rows costs 15 ms of worker start
  set plan_cache_mode = force_generic_plan  -- each statement planned once per connection (its custom plans
                                            -- were no better, and replanning a dozen statements cost 5+ ms a call)
as $$
declare
  c_cap constant integer := 1000;
  c_count3 constant integer := 4 * (c_cap + 1); -- tier-3 rows read to count c_cap + 1 entities
  v_q text := private.search_fold(p_q);
  v_hi text;
  v_center public.earth;
  v_kinds smallint[];
  v_kind smallint;
  v_tier smallint;
  v_broad integer[] := '{}';                -- kind * 4 + tier of the ranges found broad (above c_cap rows)
  v_end integer;                            -- the page's last position
  v_keys bigint[] := '{}';                  -- matched entities (id * 2 + kind - 1), for total_count
  v_more bigint[];
  v_hits private.search_hit[] := '{}';      -- candidates for the page
  v_fuzzy private.search_hit[] := '{}';     -- cities' tier 4
  v_fnames text[] := '{}';                  -- bars' tier-4 names, best first, their scores and entities
  v_fscores real[] := '{}';
  v_fentities integer[] := '{}';
  v_fbars integer := 0;                     -- their bars (up to the cap)
  v_fmin real;                              -- the lowest score the page reaches
  v_found13 integer;                        -- entities of tiers 1-3 (up to the cap)
  v_top private.search_hit[];
  v_rows integer;
  v_found integer := 0;
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
  v_end := least(p_page * p_per_page, c_cap);  -- (p_page is at most 1,000 here)
  if p_latitude is not null and p_longitude is not null then
    v_center := private.earth_point(p_latitude, p_longitude);
  end if;
  v_kinds := case p_type when 'bar' then '{1}' when 'city' then '{2}' else '{1,2}' end;

  if coalesce(v_q, '') <> '' then
    v_hi := v_q || chr(1114111);  -- every string starting with v_q is in [v_q, v_hi) (collation "C")
    -- tier 1: exact name (each entity once)
    foreach v_kind in array v_kinds loop
      v_hits := v_hits || array(
        select row(t.kind, t.id, 1, null, t.geo <-> v_center, t.popularity)::private.search_hit
        from private.search_terms t
        where t.kind = v_kind and t.tier = 2 and t.suffix = v_q
        order by t.geo <-> v_center, t.popularity desc, t.id
        limit c_cap + 1);
    end loop;

    -- total_count: the entities of tiers 1-3, up to c_cap + 1, from q's ranges of
    -- search_terms_range (index-only, B-tree leaves in order: cheap, unlike reading
    -- a thousand rows nearest first from the GiST index)
    v_keys := array(select h.id * 2 + h.kind - 1 from unnest(v_hits) h);
    -- a broad q first (a frequent word): one of its ranges alone holds more than c_cap
    -- entities among its first c_cap + 1 rows, counted as they are read (no arrays); those
    -- ranges are named to private.search_tier (p_broad), which then walks without a count
    <<broad>>
    foreach v_kind in array v_kinds loop
      foreach v_tier in array '{2,3}'::smallint[] loop
        exit broad when cardinality(v_keys) > c_cap;
        select count(distinct x.id), count(*) into v_found, v_rows from (
          select t.id from private.search_terms t
          where t.kind = v_kind and t.tier = v_tier and t.suffix >= v_q and t.suffix < v_hi
          limit c_cap + 1) x;
        if v_rows > c_cap then
          v_broad := v_broad || (v_kind * 4 + v_tier);
        end if;
        exit broad when v_found > c_cap;
      end loop;
    end loop;
    if cardinality(v_keys) <= c_cap and v_found <= c_cap then
      foreach v_kind in array v_kinds loop
        v_keys := v_keys || array(
          select t.id * 2 + t.kind - 1 from private.search_terms t
          where t.kind = v_kind and t.tier = 2 and t.suffix >= v_q and t.suffix < v_hi and t.suffix <> v_q
          limit case v_kind when 2 then 2 else 1 end * (c_cap + 1));  -- a city has two tier-2 keys
      end loop;
      select count(distinct k) into v_found from unnest(v_keys) k;
      if v_found <= c_cap then
        foreach v_kind in array v_kinds loop
          exit when v_found > c_cap;
          -- an entity mostly has one row in q's tier-3 range: c_cap + 1 rows usually settle the
          -- cap; else 4 rows an entity, and only then the whole range
          v_more := array(
            select t.id * 2 + t.kind - 1 from private.search_terms t
            where t.kind = v_kind and t.tier = 3 and t.suffix >= v_q and t.suffix < v_hi
            limit c_cap + 1);
          if cardinality(v_more) = c_cap + 1 then
            select count(distinct k) into v_found from unnest(v_keys || v_more) k;
            if v_found <= c_cap then
              v_more := array(
                select t.id * 2 + t.kind - 1 from private.search_terms t
                where t.kind = v_kind and t.tier = 3 and t.suffix >= v_q and t.suffix < v_hi
                limit c_count3);
              if cardinality(v_more) = c_count3 then
                select count(distinct k) into v_found from unnest(v_keys || v_more) k;
                if v_found <= c_cap then
                  v_more := array(
                    select t.id * 2 + t.kind - 1 from private.search_terms t
                    where t.kind = v_kind and t.tier = 3 and t.suffix >= v_q and t.suffix < v_hi);
                end if;
              end if;
            end if;
          end if;
          v_keys := v_keys || v_more;
        end loop;
        if v_found <= c_cap then
          select count(distinct k) into v_found from unnest(v_keys) k;
        end if;
        -- tier 4 only when the better tiers leave room below the cap
        v_found13 := v_found;
        if v_found <= c_cap then
          if 2 = any (v_kinds) then
            v_fuzzy := array(select h from private.search_fuzzy_cities(v_q, v_center, c_cap + 1 - v_found) h);
          end if;
          if 1 = any (v_kinds) then
            select coalesce(array_agg(k.name_key order by k.score desc, k.name_key), '{}'),
                   coalesce(array_agg(k.score order by k.score desc, k.name_key), '{}'),
                   coalesce(array_agg(k.entities order by k.score desc, k.name_key), '{}')
              into v_fnames, v_fscores, v_fentities
            from private.search_fuzzy_names(v_q, 200, c_cap + 1 - v_found) k;
            -- their bars, counted: the names' entities less the cities among them (a
            -- city's key can be a bar's name; one index probe a name, not a read of
            -- every bar); a bar's tier-4 name never matches by prefix or word, so
            -- these bars are not in tiers 1-3
            if cardinality(v_fnames) > 0 then
              v_fbars := (select sum(e) from unnest(v_fentities) e)
                         - (select count(*) from unnest(v_fnames) k(name_key)
                            join private.search_terms t on t.kind = 2 and t.tier = 2 and t.suffix = k.name_key);
              v_fbars := least(v_fbars, c_cap + 1 - v_found);
            end if;
          end if;
          select count(distinct k) + v_fbars into v_found
          from (select unnest(v_keys) as k union all select h.id * 2 + h.kind - 1 from unnest(v_fuzzy) h) x;
        end if;
      end if;
    elsif cardinality(v_keys) > c_cap then
      v_found := cardinality(v_keys);
    end if;

    -- the page: the best v_end entities, tier by tier, each tier read only as far as
    -- the page can reach (a better tier's entities may repeat in it; a city has two
    -- tier-2 keys, and an entity several tier-3 rows)
    if cardinality(v_hits) < v_end then
      v_rows := cardinality(v_hits);
      foreach v_kind in array v_kinds loop
        v_hits := v_hits || array(select h from private.search_tier(v_kind, 2::smallint, v_q, v_center,
                                                                     case v_kind when 2 then 2 else 1 end * (v_end + v_rows),
                                                                     v_kind * 4 + 2 = any (v_broad)) h);
      end loop;
      select count(*) into v_rows from (select distinct h.kind, h.id from unnest(v_hits) h) d;
      if v_rows < v_end then
        v_rows := cardinality(v_hits);
        foreach v_kind in array v_kinds loop
          v_hits := v_hits || array(select h from private.search_tier(v_kind, 3::smallint, v_q, v_center,
                                                                       v_end + v_rows + 64, v_kind * 4 + 3 = any (v_broad)) h);
        end loop;
      end if;
    end if;
    -- tier 4, when the page reaches it: cities (a few), the best bars of the names
    v_hits := v_hits || v_fuzzy;
    if v_found13 < v_end and v_fbars > 0 then
      -- only the names the page reaches: by score until their entities cover it, and
      -- every name tied with the last (their bars are ordered together)
      select min(x.s) into v_fmin from (
        select u.s, sum(u.e) over (order by u.s desc, u.k rows unbounded preceding) - u.e as before
        from unnest(v_fnames, v_fscores, v_fentities) u(k, s, e)) x
      where x.before < v_end - v_found13;
      v_top := array(
        select row(t.kind, t.id, 4, k.score, t.geo <-> v_center, t.popularity)::private.search_hit
        from unnest(v_fnames, v_fscores) k(name_key, score)
        join private.search_terms t on t.kind = 1 and t.tier = 2 and t.suffix = k.name_key
        where k.score >= v_fmin
        order by k.score desc, t.geo <-> v_center, t.popularity desc, t.id
        limit v_end - v_found13);
      if cardinality(v_top) < least(v_end - v_found13, v_fbars) then
        -- (cities among the names' entities: the bars of every name)
        v_top := array(
          select row(t.kind, t.id, 4, k.score, t.geo <-> v_center, t.popularity)::private.search_hit
          from unnest(v_fnames, v_fscores) k(name_key, score)
          join private.search_terms t on t.kind = 1 and t.tier = 2 and t.suffix = k.name_key
          order by k.score desc, t.geo <-> v_center, t.popularity desc, t.id
          limit v_end - v_found13);
      end if;
      v_hits := v_hits || v_top;
    end if;
  end if;

  -- each entity once, at its best tier (a score only in tier 4, the best of its
  -- keys); the page in relevance order
  v_total := least(v_found, c_cap);
  v_top := array(
    select row(h.kind, h.id, h.tier, h.score, h.dist, h.popularity)::private.search_hit
    from (
      select h.kind, h.id, min(h.tier) as tier, case when min(h.tier) = 4 then max(h.score) end as score,
             min(h.dist) as dist, max(h.popularity) as popularity
      from unnest(v_hits) h
      group by h.kind, h.id
    ) h
    order by h.tier, h.score desc nulls last, h.dist, h.popularity desc, h.kind, h.id
    limit v_end - (p_page - 1) * p_per_page offset (p_page - 1) * p_per_page);

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
        from unnest(v_top) with ordinality as p(kind, id, tier, score, dist, popularity, n)
      ) r),
    'pagination', private.pagination_json(p_page, p_per_page, v_total),
    'total_count_capped', v_found > c_cap);
end
$$;

grant execute on function api.search(text, double precision, double precision, integer, integer, text) to bar_partner;
