--! Previous: sha1:6310e60e43a3f8183702015ee8feb84962975bbf
--! Hash: sha1:9a4fee6bdc7527f0e0a832f6ea3caf1dbe76bba2
--! Message: v1.3 bars_location_near: GET bars within a radius bound by a walk of the plane

--! split: 01-bars-location-near.sql
-- GET bars nearest first within a radius (private.bars_page_nearest, 21-bars-paths.sql) finds its
-- page through this index instead of a KNN walk of bars_geo: the page's bound from a nearest-first
-- walk of the plane (latitude, longitude), then the bars inside the bound's latitude/longitude box
-- by their distance. SP-GiST's quadtree walk is cheap where bars_geo's cube walk computed a
-- distance to every entry of ~50 overlapping pages; id and geo included, so both steps are
-- index-only. 5 s to build at 1M bars (writes to bars wait meanwhile), about 80 MB.
create index if not exists bars_location_near on private.bars using spgist (location) include (id, geo);
