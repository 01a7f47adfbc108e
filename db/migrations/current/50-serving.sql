-- Serving path, round 2 (issue 23): the next-events fragment of each bar's detail
-- JSON, stored as the exact text json_agg produces (functions/10-bar-documents.sql).
-- One row per bar that has events at all; `body` is its next 10 events as of
-- `valid_from`, and stays the answer for every instant in [valid_from, valid_until)
-- (valid_until: the earliest end of the listed events; null when none is listed).
create table if not exists private.bar_next_events (
  bar_id bigint primary key,
  body text not null,
  valid_from timestamptz not null,
  valid_until timestamptz
);
-- the fragments whose first event has ended (private.bar_next_events_refresh_expired)
create index if not exists bar_next_events_valid_until on private.bar_next_events (valid_until) where valid_until is not null;

-- hourly_data of each ISO day of the week (1 = Monday) as the exact text the detail
-- form shows: kept by a BEFORE trigger on occupancy (functions/10-bar-documents.sql).
-- A plain nullable column: adding it does not rewrite the table.
alter table private.occupancy add column if not exists hourly_days text[];
