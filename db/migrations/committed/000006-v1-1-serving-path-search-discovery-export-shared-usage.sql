--! Previous: sha1:0704d915c033d5b8ebc44a530f5a475dd19cc098
--! Hash: sha1:6c4c7b91fa8a6d208158fd60fbf0fece0034d256
--! Message: v1.1: serving path, search, discovery, export, shared usage

--! split: 10-serving-path.sql
-- Serving path: derived tables read by GET bars, bars/:id and bars_by_city.
-- Tables only (idempotent); the functions that fill and read them, their
-- triggers and the backfill live in db/migrations/functions/10-bar-documents.sql
-- and 23-bars-by-city.sql.

-- Precomputed bar documents: the static part of each bar's list and detail JSON,
-- as the exact text json_build_object produces, so a response is the stored text
-- with the live parts (occupancy, hourly data, upcoming events) spliced in.
--   head        '{"id" : "1", "name" : ..., "photos" : [...]'  (no closing brace)
--   detail_mid  ', "description" : ..., "price_level" : ...'
--   time_zone   the city's, for "open now" and the local day of the live parts
-- No foreign key (TRUNCATE of the bar data works as before; triggers keep it exact).
create table if not exists private.bar_documents (
  bar_id      bigint primary key,
  time_zone   text not null,
  head        text not null,
  detail_mid  text not null
);

-- Which builder the documents were made by (md5 of its source): the function file
-- rebuilds every document when the builder changes.
create table if not exists private.bar_documents_meta (
  one      boolean primary key default true check (one),
  builder  text not null
);

-- bars_by_city events_today: one json fragment per city and local day, built on
-- first read and valid while its version equals the city's version, which every
-- change to the city's events (or the names of their bars, or the city's time
-- zone) increments. Days before yesterday are removed when a new day is stored.
create table if not exists private.city_events_version (
  city_id  bigint primary key,
  version  bigint not null
);

create table if not exists private.city_events_today (
  city_id  bigint not null,
  day      date not null,
  version  bigint not null,
  body     json not null,
  primary key (city_id, day)
);
-- Stored uncompressed: a big city's fragment (~300 KB) is read on every request,
-- and decompressing it cost ~10 ms.
alter table private.city_events_today alter column body set storage external;

-- Filters (decisions.md "Filters"): bar_live also carries price_level and
-- google_rating (kept by bar_live_sync, functions/11-bar-live.sql), so a city's
-- filtered page and total are one walk of bar_live_city_name, index-only.
alter table private.bar_live add column if not exists price_level smallint;
alter table private.bar_live add column if not exists google_rating numeric(2,1);
update private.bar_live l set price_level = b.price_level, google_rating = b.google_rating
from private.bars b
where b.id = l.bar_id and (l.price_level, l.google_rating) is distinct from (b.price_level, b.google_rating);
create index if not exists bar_live_city_name on private.bar_live (city_id, name, bar_id)
  include (open_week, current_intensity, price_level, google_rating);

--! split: 20-search.sql
-- Search at scale (issue 10): accent-insensitive matching and a term table that
-- serves every relevance tier by index walks. Functions, triggers and the
-- backfill of existing data: db/migrations/functions/05-city-lookup.sql (text
-- folding, find_city) and 27-search.sql (api.search, maintenance, rebuild).
-- Idempotent: current/ is re-run in development.

create extension if not exists unaccent with schema public;   -- contrib; ships with the embedded server
create extension if not exists btree_gist with schema public; -- contrib; (kind, bucket) beside geo in one GiST

-- One row per searchable entity (bar or city) and word-start suffix of its
-- folded name (private.search_fold: lower case, accents and apostrophes removed,
-- white space collapsed). "The Tap Room" gives "the tap room" (tier 2: the whole
-- name), "tap room" and "room" (tier 3: from a later word on). A city also gives
-- its "<name>, <st>" key as a tier-2 row. Exact name = tier-2 row equal to q;
-- name prefix = tier-2 row starting with q; word = tier-3 row starting with q.
-- Kept exact by statement-level triggers on bars and cities (27-search.sql).
create table if not exists private.search_terms (
  kind        smallint not null,               -- 1 bar, 2 city
  id          bigint   not null,               -- bar or city id
  tier        smallint not null,               -- 2 from the first word, 3 from a later word
  suffix      text collate "C" not null,       -- folded name from that word on (byte order: prefix = range)
  popularity  bigint   not null,               -- bar: google_ratings_total; city: population
  geo         public.earth not null            -- the bar's / city centre's position
);
alter table private.search_terms set (autovacuum_vacuum_insert_scale_factor = 0.05); -- index-only scans need the visibility map

-- Most popular first within (kind, first 1/2/3 letters, tier): the walk for short
-- and common q (the, bar, pub, one or two letters); longer q filter on the included suffix.
create index if not exists search_terms_p1 on private.search_terms (kind, left(suffix, 1), tier, popularity desc, id) include (suffix);
create index if not exists search_terms_p2 on private.search_terms (kind, left(suffix, 2), tier, popularity desc, id) include (suffix);
create index if not exists search_terms_p3 on private.search_terms (kind, left(suffix, 3), tier, popularity desc, id) include (suffix);
-- Exact match, counting, and "all matches" of a rare q: one range of this index (index-only).
create index if not exists search_terms_range on private.search_terms (kind, tier, suffix) include (popularity, id, geo);
-- Nearest first within (kind, tier, first three letters): KNN over geo.
drop index if exists private.search_terms_geo; -- an earlier draft (with INCLUDE columns: no index-only KNN anyway)
create index if not exists search_terms_near on private.search_terms using gist (kind, tier, left(suffix, 3), geo);
-- Maintenance (deletes and updates by entity).
create index if not exists search_terms_entity on private.search_terms (id, kind);

-- The distinct folded names (bars' names, cities' "<name>" and "<name>, <st>")
-- with how many entities carry each: the fuzzy tier searches this small lexicon
-- by trigram similarity, then expands the best names to their entities.
create table if not exists private.search_names (
  name_key  text collate "C" primary key,
  entities  integer not null check (entities > 0)
);
create index if not exists search_names_trgm on private.search_names using gin (name_key public.gin_trgm_ops);

grant select on private.search_terms, private.search_names to bar_operator;

-- One candidate of api.search: entity, relevance tier (1 exact, 2 prefix, 3 word,
-- 4 fuzzy), trigram score (tier 4), order distance (chord metres) and popularity.
do $$
begin
  if to_regtype('private.search_hit') is null then
    create type private.search_hit as (kind smallint, id bigint, tier smallint, score real, dist double precision, popularity bigint);
  end if;
end $$;

--! split: 30-discovery.sql
-- Discovery (GET categories, GET cities, GET groups/:state/:city): derived
-- counts. Idempotent (current/ is re-run in development).

-- cities' q is an accent-insensitive prefix (search uses the same extension).
create extension if not exists unaccent with schema public;

-- Bars per category, kept exact by the statement-level triggers of
-- functions/30-discovery.sql (counting 1.8M bar_categories rows per request
-- costs ~200 ms at 1M bars; this table is 22 rows).
create table if not exists private.category_bar_counts (
  category_id  bigint primary key,
  n            integer not null
);

-- Backfill / re-sync (exact; cheap enough to re-run with current/).
insert into private.category_bar_counts as k (category_id, n)
select category_id, count(*)::int from private.bar_categories group by 1
on conflict (category_id) do update set n = excluded.n where k.n <> excluded.n;
delete from private.category_bar_counts k
where not exists (select from private.bar_categories bc where bc.category_id = k.category_id);

--! split: 40-export.sql
-- Bulk export and incremental sync (decisions.md "Bulk export and incremental sync").
-- Tables, columns and indexes only (idempotent); the trigger functions, their
-- triggers and the export functions live in db/migrations/functions/40-export.sql.
--
-- updated_at of a bar moves whenever one of its exported fields changes: its own
-- columns, its categories (and those categories' names), photos, opening hours,
-- its city's name and state. Occupancy is live data and does not move it.
-- updated_at of an event moves with its own columns and with the BarSummary it
-- embeds (its bar's name, address, position, picture; the city's name/state).
-- Deleted bars and events leave a tombstone, reported by updated_since exports.

-- bars.updated_at exists since the foundation schema (default now()).
-- events.updated_at: existing events take the migration's time as a constant
-- default, which PostgreSQL stores once in the catalog (no table rewrite, no row
-- update: instant on millions of events, no long lock); new rows then take now().
do $$
begin
  if not exists (select from pg_attribute
                 where attrelid = 'private.events'::regclass and attname = 'updated_at' and not attisdropped) then
    execute format('alter table private.events add column updated_at timestamptz not null default %L', now());
  end if;
end $$;
alter table private.events alter column updated_at set default now();

create table if not exists private.tombstones (
  kind        text not null check (kind in ('bar', 'event')),
  id          bigint not null,
  city_id     bigint,          -- the city the object was in (city-filtered exports report it)
  deleted_at  timestamptz not null default now(),
  primary key (kind, id)
);

-- The incremental sync reads (updated_at, id) ranges.
create index if not exists bars_updated_at_id on private.bars (updated_at, id);
create index if not exists events_updated_at_id on private.events (updated_at, id);
create index if not exists tombstones_kind_deleted_at on private.tombstones (kind, deleted_at, id);

grant select on private.tombstones to bar_operator;

--! split: 50-usage-shared.sql
-- Usage counted in Redis (in the rate-limit script, one hash per key and UTC day),
-- flushed to admin.daily_usage by any server instance, idempotently.
--
-- The Redis hash holds absolute counts for the day plus a version ('#v', bumped by
-- every hit, 429 and refund). A flush sends them; a flush whose version is not newer
-- than the stored one changes nothing, so any instance may flush any key-day any
-- number of times, concurrently, in any order. The stored absolute counts per
-- endpoint are kept here; the difference to the previous ones is added to
-- admin.daily_usage (which also receives the in-process counts of instances that
-- run without Redis or while it is unavailable, through api.record_usage).
create table if not exists admin.daily_usage_shared (
  day          date   not null,
  api_key_id   uuid   not null references admin.api_keys on delete cascade,
  endpoint     text   not null,
  requests     bigint not null default 0,
  rate_limited bigint not null default 0,
  primary key (day, api_key_id, endpoint)
);

create table if not exists admin.daily_usage_shared_versions (
  day        date   not null,
  api_key_id uuid   not null references admin.api_keys on delete cascade,
  version    bigint not null,
  primary key (day, api_key_id)
);

comment on table admin.daily_usage_shared is
  'Absolute per-day usage counts last flushed from Redis (see api.record_shared_usage); admin.daily_usage holds the totals.';
