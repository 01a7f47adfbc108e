--! Previous: sha1:e23e7dad94631aad0744b318c0d60f83023afefc
--! Hash: sha1:748b406414ee99bd240d47248f1cc52c2da0c5df
--! Message: v1.3 events today as an array (events_today_limit)

--! split: 20-events-today.sql
-- bars_by_city's events_today_limit (v1.3, issue 34): a city's events today are kept as an
-- array of events, so a page slices the first N and counts them (events_today_total) without
-- parsing a ~300 KB json text. The table is a cache (functions/23-bars-by-city.sql): emptied
-- here, rebuilt by the next read of each city.
truncate private.city_events_today;
alter table private.city_events_today drop column if exists body;
alter table private.city_events_today add column if not exists items json[] not null;
-- Stored uncompressed, as the text was: a big city's array is read on every request.
alter table private.city_events_today alter column items set storage external;
