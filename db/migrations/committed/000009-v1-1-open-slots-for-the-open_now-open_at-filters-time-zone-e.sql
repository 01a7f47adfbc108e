--! Previous: sha1:a97ec04c672a4b5d20b6fa87becfa2270a62aba6
--! Hash: sha1:79da31bc6232f189b41f7e12ce4de6574a9b571f
--! Message: v1.1: open slots for the open_now/open_at filters, time zone extents, the search word lexicon

--! split: 10-open-slots.sql
-- "Open at an instant" for the v1.1 filters' collect path (issue 12;
-- functions/21-bars.sql). A bar is open at an instant when one of its weekly
-- open slots (bar_live.open_week, minutes of the local week) holds the local
-- minute of its city's time zone. A GiST index of the open_week multirange keeps
-- only each bar's bounding range and rechecks nearly every row, so the slots are
-- rows here, keyed by time zone: slot = [zone * 10080 + opens, zone * 10080 +
-- closes). One stabbing probe per time zone (its key at the instant's local
-- minute) then finds the bars open at that instant, wherever they are.
-- Kept exact by bar_live's triggers (functions/11-bar-live.sql).

-- Time zones of the cities, numbered for the slot keys (never renumbered), with
-- the extent of their bars (bounding boxes that grow with every bar placed in
-- the zone and never shrink): a request's region probes only the zones it meets.
create table if not exists private.time_zones (
  id integer generated always as identity primary key,
  name text not null unique
);
alter table private.time_zones add column if not exists location_extent box;       -- of bars.location (lon, lat)
alter table private.time_zones add column if not exists geo_extent public.cube;     -- of bars.geo (earth)

create table if not exists private.bar_open_slots (
  bar_id bigint not null,
  slot int8range not null
);

-- Backfill (an existing database; a no-op once the table has rows or there are no bars).
insert into private.time_zones (name)
select distinct c.time_zone from private.cities c
where not exists (select from private.time_zones z where z.name = c.time_zone)
order by 1;

insert into private.bar_open_slots (bar_id, slot)
select l.bar_id, int8range(z.id::bigint * 10080 + lower(r), z.id::bigint * 10080 + upper(r))
from private.bar_live l
join private.cities c on c.id = l.city_id
join private.time_zones z on z.name = c.time_zone
cross join lateral unnest(l.open_week) r
where not exists (select from private.bar_open_slots);

update private.time_zones z
set location_extent = e.location_extent, geo_extent = e.geo_extent
from (
  select c.time_zone,
         box(point(min(b.longitude), min(b.latitude)), point(max(b.longitude), max(b.latitude))) as location_extent,
         public.cube(array[min(public.cube_ll_coord(b.geo, 1)), min(public.cube_ll_coord(b.geo, 2)), min(public.cube_ll_coord(b.geo, 3))],
                     array[max(public.cube_ur_coord(b.geo, 1)), max(public.cube_ur_coord(b.geo, 2)), max(public.cube_ur_coord(b.geo, 3))]) as geo_extent
  from private.bars b join private.cities c on c.id = b.city_id
  group by c.time_zone
) e
where e.time_zone = z.name and z.location_extent is null;

-- (after the backfill: one build, not a million inserts)
create index if not exists bar_open_slots_slot on private.bar_open_slots using gist (slot);
create index if not exists bar_open_slots_bar_id on private.bar_open_slots (bar_id);

grant select on private.time_zones, private.bar_open_slots to bar_operator;

--! split: 20-search-lexicon.sql
-- Search (issue 10): the trigram tier's word lexicon. Idempotent: current/ is
-- re-run in development. Functions (maintenance, rebuild, the tier's probes):
-- db/migrations/functions/27-search.sql.
--
-- The trigram tier scored bar names found by a GIN trigram scan of every
-- distinct name (search_names, hundreds of thousands of rows at 1M bars): the
-- posting lists of common trigrams ("the", "bar") are long and a GIN scan
-- cannot stop early (4-13 ms a call). Names are built from far fewer words (767
-- at 1M bars), so the tier now finds the words similar to each word of q (a
-- small GIN index), and the names that carry them through a btree.

-- One row per word position of every lexicon key (search_names): the word (a run
-- of letters and digits, as pg_trgm reads words), the word after it ('' at the
-- end) and the key. "the rusty anchor" gives (the, rusty), (rusty, anchor),
-- (anchor, ''). Probes: the names carrying a word (word = w), or two adjacent
-- words (word = a and next_word = b).
create table if not exists private.search_name_words (
  word       text collate "C" not null,
  next_word  text collate "C" not null,
  name_key   text collate "C" not null
);
alter table private.search_name_words set (autovacuum_vacuum_insert_scale_factor = 0.05); -- index-only scans need the visibility map
create index if not exists search_name_words_pair on private.search_name_words (word, next_word, name_key);

-- The distinct words, with how many rows of search_name_words carry each (so a
-- word's last carrier removes it); trigram-indexed: the words similar to a word of q.
create table if not exists private.search_words (
  word   text collate "C" primary key,
  names  integer not null check (names > 0)
);
-- (no pending list: a GIN scan reads all of it, and nothing but VACUUM empties it)
create index if not exists search_words_trgm on private.search_words using gin (word public.gin_trgm_ops)
  with (fastupdate = off);
alter index private.search_words_trgm set (fastupdate = off);

grant select on private.search_name_words, private.search_words to bar_operator;

-- The names' own trigram index is no longer read (the tier's probes go through
-- the words); it only cost every name insertion (the seed's rebuild most).
drop index if exists private.search_names_trgm;

-- Backfill of a database that has names already (a no-op once filled, and when
-- there are no names). The words as pg_trgm splits them: private.search_key_words
-- in 27-search.sql computes the same.
insert into private.search_name_words (word, next_word, name_key)
select w.a[i], coalesce(w.a[i + 1], ''), w.name_key
from (select n.name_key, array_remove(regexp_split_to_array(n.name_key collate "default", '[^[:alnum:]]+'), '') as a
      from private.search_names n) w
cross join lateral generate_subscripts(w.a, 1) as i
where not exists (select from private.search_name_words limit 1);

insert into private.search_words (word, names)
select s.word, count(*)::integer from private.search_name_words s
where not exists (select from private.search_words limit 1)
group by s.word;

select pg_catalog.gin_clean_pending_list('private.search_words_trgm'::regclass); -- (an index that had fastupdate on)
