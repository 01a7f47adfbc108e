--! Previous: sha1:4e139192e3b949983ca81bc5e7353e378be4c132
--! Hash: sha1:6310e60e43a3f8183702015ee8feb84962975bbf
--! Message: v1.3 city hour totals: n in the primary key index (index-only sums)

--! split: 01-hour-totals-covering.sql
-- A city's total of posts (feed, GET posts) and of events (feed, GET events) sums its rows of
-- city_post_hours / city_event_hours. Those rows are written an hour at a time for every city, so
-- one city's hours lie on as many heap pages as it has hours (887 pages for New York City's posts
-- at 1M bars). With n in the primary key's index (INCLUDE), the sum is an index-only scan of a few
-- index pages. An update of n is then no longer a HOT update: one more index entry per changed
-- hour, on a table of a few hundred thousand small rows. Small tables (19 and 25 MB at 1M bars):
-- each primary key is rebuilt in this migration's transaction, about 0.3 s during which new posts
-- and events (whose triggers write these tables) wait.
do $$
begin
  if (select i.indnatts from pg_index i where i.indexrelid = 'private.city_post_hours_pkey'::regclass) = 2 then
    alter table private.city_post_hours drop constraint city_post_hours_pkey,
      add constraint city_post_hours_pkey primary key (city_id, hour) include (n);
  end if;
  if (select i.indnatts from pg_index i where i.indexrelid = 'private.city_event_hours_pkey'::regclass) = 2 then
    alter table private.city_event_hours drop constraint city_event_hours_pkey,
      add constraint city_event_hours_pkey primary key (city_id, hour) include (n);
  end if;
end $$;
