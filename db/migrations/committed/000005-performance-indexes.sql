--! Previous: sha1:2db9208ed96a9efda93d0c8f389d7ff8424bb0ff
--! Hash: sha1:0704d915c033d5b8ebc44a530f5a475dd19cc098
--! Message: performance indexes

--! split: 5-performance.sql
-- Indexes chosen by measurement at 1,000,000 bars (docs/PERFORMANCE.md, bench/).
-- The derived tables (bar_live, city_post_hours) live in 2-partner-api.sql,
-- next to the functions that read them.

-- Feed and bar detail: "ending after now" starts after now minus the longest
-- event; max(end_at - start_at) is one step down this index.
create index if not exists events_duration on private.events ((end_at - start_at));

-- events?classification=: the count and the page are a range of one index.
create index if not exists events_city_class_start on private.events (city_id, classification, start_at, id);

-- feed events_pagination: upcoming events of a city (end_at > now), counted from the index.
create index if not exists events_city_end on private.events (city_id, end_at);
