--! Previous: sha1:bfcbc6fccc6b0f3b70ebda97bb3b5b1f5c0ea341
--! Hash: sha1:31707c04c82b637028267b2c4eee5b364b8f5c08
--! Message: v1.1: filter indexes on bar_live, city trigram index for search

--! split: 10-bar-filters.sql
-- Indexes of the v1.1 filters' collect path (functions/21-bars.sql): when few
-- bars of a region match, they are found by these instead of a pass over the region.
create index if not exists bar_live_google_rating on private.bar_live (google_rating);
create index if not exists bar_live_price_level on private.bar_live (price_level);
create index if not exists bar_live_current_intensity on private.bar_live (current_intensity);
-- "open at a local minute of the week", probed per city with the city's own minute:
-- city_id = $1 and open_week @> $2 (btree_gist for the bigint)
create index if not exists bar_live_city_open_week on private.bar_live using gist (city_id, open_week);

--! split: 20-search.sql
-- Search (issue 10), work in progress on the structure of committed migration
-- 000006 (functions: db/migrations/functions/27-search.sql). Idempotent.

-- The trigram tier of cities scores only city keys ("<name>" and "<name>, <st>",
-- a few hundred rows): their own small trigram index, so a city typo does not
-- rank against a million bars' names.
create index if not exists search_terms_city_trgm on private.search_terms
  using gin (suffix public.gin_trgm_ops) where kind = 2 and tier = 2;

-- api.search reads the trigram tier's names and cities itself (functions/27-search.sql).
drop function if exists private.search_fuzzy(smallint[], text, public.earth, integer);
