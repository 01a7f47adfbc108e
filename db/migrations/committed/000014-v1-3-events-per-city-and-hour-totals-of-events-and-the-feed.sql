--! Previous: sha1:748b406414ee99bd240d47248f1cc52c2da0c5df
--! Hash: sha1:4e139192e3b949983ca81bc5e7353e378be4c132
--! Message: v1.3 events per city and hour (totals of events and the feed)

--! split: 21-event-hours.sql
-- Events per city and UTC hour of their start (issue 34): the totals of GET events and of the
-- feed's events_pagination come from whole hours here plus exact counts of the partial hours at
-- the ends, as the posts' totals come from city_post_hours. Kept by statement triggers
-- (functions/24-events.sql).
create table if not exists private.city_event_hours (
  city_id  bigint not null,
  hour     timestamptz not null,  -- start of a UTC hour
  n        integer not null,
  primary key (city_id, hour)
);

-- Backfill when out of step with the events (a fresh table, or events loaded before its triggers).
do $$
begin
  if (select coalesce(sum(n), 0) from private.city_event_hours) <> (select count(*) from private.events) then
    truncate private.city_event_hours;
    insert into private.city_event_hours (city_id, hour, n)
    select city_id, date_trunc('hour', start_at, 'UTC'), count(*) from private.events group by 1, 2
    order by 1, 2;  -- a city's hours on neighbouring pages: a total reads a few pages, not one per hour
    analyze private.city_event_hours;
  end if;
end $$;
