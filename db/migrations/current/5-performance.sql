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
