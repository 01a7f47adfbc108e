-- Indexes of the v1.1 filters' collect path (functions/21-bars.sql): when few
-- bars of a region match, they are found by these instead of a pass over the region.
create index if not exists bar_live_google_rating on private.bar_live (google_rating);
create index if not exists bar_live_price_level on private.bar_live (price_level);
create index if not exists bar_live_current_intensity on private.bar_live (current_intensity);
-- "open at a local minute of the week", probed per city with the city's own minute:
-- city_id = $1 and open_week @> $2 (btree_gist for the bigint)
create index if not exists bar_live_city_open_week on private.bar_live using gist (city_id, open_week);
