--! Previous: sha1:bfcbc6fccc6b0f3b70ebda97bb3b5b1f5c0ea341
--! Hash: sha1:a97ec04c672a4b5d20b6fa87becfa2270a62aba6
--! Message: v1.1: filter indexes on bar_live, city trigram index for search

--! split: 10-bar-filters.sql
-- Indexes of the v1.1 filters' collect path (functions/21-bars.sql): when few
-- bars of a large region match, the rating, the price levels or the intensity
-- range of the asked statuses find them instead of a pass over the region.
-- ("Open at a minute" has none: a GiST index of open_week keeps each bar's
-- bounding range, Monday evening to Sunday night, and rechecks nearly every row.)
create index if not exists bar_live_google_rating on private.bar_live (google_rating);
create index if not exists bar_live_price_level on private.bar_live (price_level);
create index if not exists bar_live_current_intensity on private.bar_live (current_intensity);

--! split: 20-search.sql
-- Search (issue 10): the structure of committed migration 000006
-- (functions: db/migrations/functions/27-search.sql).

-- The trigram tier of cities scores only city keys ("<name>" and "<name>, <st>",
-- a few hundred rows): their own small trigram index, so a city typo does not
-- rank against a million bars' names.
create index if not exists search_terms_city_trgm on private.search_terms
  using gin (suffix public.gin_trgm_ops) where kind = 2 and tier = 2;

-- api.search reads the trigram tier's names and cities itself (functions/27-search.sql).
drop function if exists private.search_fuzzy(smallint[], text, public.earth, integer);
