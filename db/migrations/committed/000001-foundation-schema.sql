--! Previous: -
--! Hash: sha1:25e97212455a4f9c2c685357cd430c4da624e341
--! Message: foundation schema

--! split: 001-schema.sql
-- Foundation: extensions, schemas, roles, and the private bar-data tables.
--
-- Schemas by audience:
--   private  tables of bar data; nobody but the owner touches them directly
--   api      the functions the partner server calls (SECURITY DEFINER, EXECUTE only)
--   admin    operator-facing tables, views and functions (credentials, usage, alerts)
--
-- Roles (cluster-wide, so created idempotently):
--   bar_partner   the partner HTTP server: may only EXECUTE api functions
--   bar_operator  the operator GraphQL endpoint: admin schema, read-only bar data
--   the owner     whoever runs the migrations (DATABASE_URL's user) owns every object

create extension if not exists pg_trgm;
create extension if not exists cube;
create extension if not exists earthdistance;

do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'bar_partner') then
    create role bar_partner nologin;
  end if;
exception when duplicate_object or unique_violation then null; -- a concurrent migration created it
end $$;

do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'bar_operator') then
    create role bar_operator nologin;
  end if;
exception when duplicate_object or unique_violation then null;
end $$;

-- The migrating user must be able to SET ROLE to these (it is on a superuser;
-- on a managed service the owner is granted membership here).
do $$
begin
  execute format('grant bar_partner to %I', current_user);
  execute format('grant bar_operator to %I', current_user);
exception when others then null; -- superusers (or already-members) need nothing
end $$;

create schema private;
create schema api;
create schema admin;

grant usage on schema public to bar_partner, bar_operator; -- extension operators (cube, trgm)
revoke all on schema private from public;
revoke all on schema api from public;
revoke all on schema admin from public;
grant usage on schema api to bar_partner;
grant usage on schema admin to bar_operator;
grant usage on schema private to bar_operator;

-- No function is executable by PUBLIC by default: every grant is explicit.
alter default privileges revoke execute on functions from public;

-------------------------------------------------------------------------------
-- Helpers used by constraints and generated columns
-------------------------------------------------------------------------------

create function private.is_time_zone(tz text) returns boolean
  language plpgsql immutable strict parallel safe
as $$
begin
  perform now() at time zone tz;
  return true;
exception when invalid_parameter_value then
  return false;
end $$;

-- ll_to_earth() calls earth() and cube() unqualified; pinning search_path keeps
-- the generated column working under pg_dump/restore and an empty search_path.
create function private.earth_point(latitude double precision, longitude double precision)
  returns public.earth
  language sql immutable strict parallel safe
  set search_path = public, pg_temp
as $$ select ll_to_earth(latitude, longitude) $$;

create function private.is_http_url(url text) returns boolean
  language sql immutable strict parallel safe
as $$ select url ~ '^https?://[^\s/?#]+[^\s]*$' $$;

-------------------------------------------------------------------------------
-- Places
-------------------------------------------------------------------------------

create table private.cities (
  id          bigint generated always as identity primary key,
  name        text not null check (name <> '' and name = btrim(name)),
  state       text not null check (state ~ '^[A-Z]{2}$'),
  time_zone   text not null check (private.is_time_zone(time_zone)),
  latitude    double precision not null check (latitude between -90 and 90),
  longitude   double precision not null check (longitude between -180 and 180),
  population  integer check (population >= 0),
  geo         public.earth generated always as (private.earth_point(latitude, longitude)) stored
);
-- Path lookups are case-insensitive: bars_by_city/tx/austin is TX/Austin.
create unique index cities_state_name_key on private.cities (upper(state), lower(name));
create index cities_name_trgm on private.cities using gin (lower(name) gin_trgm_ops);
create index cities_geo on private.cities using gist (geo);

create table private.categories (
  id    bigint generated always as identity primary key,
  name  text not null check (name <> ''),
  slug  text not null unique check (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$')
);

create table private.bars (
  id                    bigint generated always as identity primary key,
  city_id               bigint not null references private.cities,
  name                  text not null check (name <> ''),
  address               text not null check (address <> ''),
  zip_code              text check (zip_code ~ '^[0-9]{5}(-[0-9]{4})?$'),
  latitude              double precision not null check (latitude between -90 and 90),
  longitude             double precision not null check (longitude between -180 and 180),
  phone                 text,
  website               text check (private.is_http_url(website)),
  google_rating         numeric(2,1) check (google_rating between 0 and 5),
  google_ratings_total  integer not null default 0 check (google_ratings_total >= 0),
  price_level           smallint check (price_level between 1 and 4),
  description           text,
  profile_picture_url   text check (private.is_http_url(profile_picture_url)),
  created_at            timestamptz not null default now(),
  updated_at            timestamptz not null default now(),
  geo                   public.earth generated always as (private.earth_point(latitude, longitude)) stored,
  location              point generated always as (point(longitude, latitude)) stored,
  unique (id, city_id)  -- target of the (bar, city) foreign keys on events and posts
);
create index bars_city_name on private.bars (city_id, name, id);
create index bars_name_id on private.bars (name, id);
create index bars_geo on private.bars using gist (geo);          -- radius + nearest-first (KNN)
create index bars_location on private.bars using gist (location); -- bounding box
create index bars_name_trgm on private.bars using gin (lower(name) gin_trgm_ops);
create index bars_name_lower on private.bars (lower(name) text_pattern_ops); -- exact + prefix

create table private.bar_categories (
  bar_id       bigint not null references private.bars on delete cascade,
  category_id  bigint not null references private.categories,
  is_primary   boolean not null default false,
  position     smallint not null default 0,
  primary key (bar_id, category_id)
);
create unique index bar_categories_one_primary on private.bar_categories (bar_id) where is_primary;
create index bar_categories_category on private.bar_categories (category_id, bar_id);

-- Groups are what group_slug filters: curated sets of bars within one city
-- (districts, crawls, collections).
create table private.groups (
  id       bigint generated always as identity primary key,
  city_id  bigint not null references private.cities,
  slug     text not null check (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'),
  name     text not null check (name <> ''),
  unique (city_id, slug)
);

create table private.bar_groups (
  group_id  bigint not null references private.groups on delete cascade,
  bar_id    bigint not null references private.bars on delete cascade,
  primary key (group_id, bar_id)
);
create index bar_groups_bar on private.bar_groups (bar_id);

-- Opening hours in the bar's local wall-clock time. day_of_week is ISO
-- (1 = Monday .. 7 = Sunday). closes < opens closes after midnight; the slot
-- belongs to the day it opens. A day without rows is closed.
create table private.opening_hours (
  bar_id       bigint not null references private.bars on delete cascade,
  day_of_week  smallint not null check (day_of_week between 1 and 7),
  opens        time(0) not null check (opens < '24:00' and date_trunc('minute', opens) = opens),
  closes       time(0) not null check (closes < '24:00' and date_trunc('minute', closes) = closes),
  primary key (bar_id, day_of_week, opens),
  check (opens <> closes)
);

create table private.photos (
  id        bigint generated always as identity primary key,
  bar_id    bigint not null references private.bars on delete cascade,
  url       text not null check (private.is_http_url(url)),
  position  smallint not null default 0
);
create index photos_bar on private.photos (bar_id, position, id);

-- Live occupancy. current_intensity is a percentage of the bar's typical peak;
-- weekly_profile holds 7 x 24 typical intensities, Monday 00:00 first, local time.
create table private.occupancy (
  bar_id             bigint primary key references private.bars on delete cascade,
  current_intensity  smallint not null check (current_intensity between 0 and 100),
  updated_at         timestamptz not null default now(),
  weekly_profile     smallint[] not null check (
    cardinality(weekly_profile) = 168
    and array_ndims(weekly_profile) = 1
    and 0 <= all (weekly_profile) and 100 >= all (weekly_profile)
  )
);

-------------------------------------------------------------------------------
-- Events, users, posts
-------------------------------------------------------------------------------

create table private.events (
  id              bigint generated always as identity primary key,
  bar_id          bigint not null,
  city_id         bigint not null,
  title           text not null check (title <> ''),
  description     text,
  classification  text not null check (classification in
                    ('live_music', 'dj', 'trivia', 'karaoke', 'happy_hour', 'sports', 'comedy', 'special')),
  start_at        timestamptz not null,
  end_at          timestamptz not null,
  created_at      timestamptz not null default now(),
  check (end_at > start_at),
  foreign key (bar_id, city_id) references private.bars (id, city_id) on delete cascade
);
create index events_city_start on private.events (city_id, start_at, id);
create index events_bar_start on private.events (bar_id, start_at, id);

create table private.users (
  id          bigint generated always as identity primary key,
  username    text not null unique check (username ~ '^[A-Za-z0-9_.]{2,40}$'),
  created_at  timestamptz not null default now()
);

create table private.posts (
  id          bigint generated always as identity primary key,
  bar_id      bigint not null,
  city_id     bigint not null,
  user_id     bigint not null references private.users,
  content     text not null check (content <> ''),
  created_at  timestamptz not null default now(),
  foreign key (bar_id, city_id) references private.bars (id, city_id) on delete cascade
);
create index posts_city_created on private.posts (city_id, created_at desc, id desc);
create index posts_bar_created on private.posts (bar_id, created_at desc, id desc);
create index posts_user on private.posts (user_id);

create table private.post_media (
  id        bigint generated always as identity primary key,
  post_id   bigint not null references private.posts on delete cascade,
  url       text not null check (private.is_http_url(url)),
  position  smallint not null default 0
);
create index post_media_post on private.post_media (post_id, position, id);

-- The operator role reads bar data (read-only) through the GraphQL endpoint.
grant select on all tables in schema private to bar_operator;
