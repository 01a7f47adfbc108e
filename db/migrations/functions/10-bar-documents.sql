-- Precomputed bar documents (repeatable file; table in committed migration 000006).
--
-- The bar object of GET bars / bars_by_city (list form) and GET bars/:id (detail
-- form) share their first sixteen keys (id .. photos). Those, and the detail's
-- description and price_level, are static: private.bar_document_parts is their
-- ONE source, and private.bar_documents stores its output as the exact text
-- json_build_object produces. At read time private.bar_list_row and
-- private.bar_detail_row splice in the live parts:
--   list    head || ', "occupancy" : {current_intensity, status}' || '}'
--   detail  head || ', "occupancy" : {current_intensity, status, hourly_data}'
--                || detail_mid || ', "events" : [...]' || '}'
-- as text, byte for byte what the builder's expressions give (json_agg /
-- json_build_object emit a json value's text unchanged, so a caller that needs json
-- may cast it; the api functions return the text).
--
-- Kept exact in the same transaction by statement-level triggers with transition
-- tables on bars, bar_categories, categories, photos, opening_hours and cities.
-- A bulk load may set `private.defer_bar_documents = on` (transaction-local) and
-- call private.bar_documents_rebuild() once at the end (the seed does).

-- The static parts of these bars' documents (inlined into the caller's query:
-- one primary-key probe per table and bar).
create or replace function private.bar_document_parts(p_bar_id bigint)
  returns table (bar_id bigint, time_zone text, head text, detail_mid text)
  language sql stable
as $$
  select b.id, c.time_zone,
    left(json_build_object(
      'id', b.id::text,
      'name', b.name,
      'address', b.address,
      'city', c.name,
      'state', c.state,
      'zip_code', b.zip_code,
      'latitude', b.latitude,
      'longitude', b.longitude,
      'phone', b.phone,
      'website', b.website,
      'google_rating', b.google_rating,
      'google_ratings_total', b.google_ratings_total,
      'primary_category', (
        select json_build_object('name', k.name, 'slug', k.slug)
        from private.bar_categories bc join private.categories k on k.id = bc.category_id
        where bc.bar_id = b.id and bc.is_primary),
      'categories', (
        select coalesce(json_agg(json_build_object('name', k.name, 'slug', k.slug) order by bc.is_primary desc, bc.position, k.name, k.id), '[]'::json)
        from private.bar_categories bc join private.categories k on k.id = bc.category_id
        where bc.bar_id = b.id),
      'hours', coalesce((select l.hours from private.bar_live l where l.bar_id = b.id), (
        select private.hours_object(coalesce(array_agg(h.day_of_week), '{}'), coalesce(array_agg(h.opens), '{}'), coalesce(array_agg(h.closes), '{}'))
        from private.opening_hours h where h.bar_id = b.id)),
      'profile_picture_url', b.profile_picture_url,
      'photos', (
        select coalesce(json_agg(json_build_object('url', p.url) order by p.position, p.id), '[]'::json)
        from private.photos p where p.bar_id = b.id)
    )::text, -1),
    ', ' || substr(m.t, 2, length(m.t) - 2)
  from private.bars b
  join private.cities c on c.id = b.city_id
  cross join lateral (select json_build_object('description', b.description, 'price_level', b.price_level)::text as t) m
  where b.id = p_bar_id
$$;

-- Makes the documents of these bars match the base tables (deleted bars lose theirs).
create or replace function private.bar_documents_refresh(p_bar_ids bigint[]) returns void
  language plpgsql volatile
  set extra_float_digits = 1  -- the text of latitude/longitude as a default session prints it
as $$
begin
  delete from private.bar_documents d
  using (select distinct u.id from unnest(p_bar_ids) u(id)) u
  where d.bar_id = u.id and not exists (select from private.bars b where b.id = u.id);
  insert into private.bar_documents as d (bar_id, time_zone, head, detail_mid)
  select p.bar_id, p.time_zone, p.head, p.detail_mid
  from (select distinct u.id from unnest(p_bar_ids) u(id)) u
  cross join lateral private.bar_document_parts(u.id) p
  on conflict (bar_id) do update
    set time_zone = excluded.time_zone, head = excluded.head, detail_mid = excluded.detail_mid
    where (d.time_zone, d.head, d.detail_mid) is distinct from (excluded.time_zone, excluded.head, excluded.detail_mid);
end
$$;

-- Every document from scratch, set-based (seed, backfill, TRUNCATE of a source table).
create or replace function private.bar_documents_rebuild() returns void
  language plpgsql volatile
  set extra_float_digits = 1
as $$
begin
  truncate private.bar_documents;
  insert into private.bar_documents (bar_id, time_zone, head, detail_mid)
  select p.bar_id, p.time_zone, p.head, p.detail_mid
  from private.bars b cross join lateral private.bar_document_parts(b.id) p;
  insert into private.bar_documents_meta as m (builder)
  values (md5((select prosrc from pg_proc where oid = 'private.bar_document_parts(bigint)'::regprocedure)))
  on conflict (one) do update set builder = excluded.builder;
end
$$;

create or replace function private.bar_documents_sync() returns trigger
  language plpgsql volatile
as $$
begin
  if current_setting('private.defer_bar_documents', true) = 'on' then
    return null;
  end if;
  if tg_op = 'TRUNCATE' then
    if tg_table_name = 'bars' then
      truncate private.bar_documents;
    else
      perform private.bar_documents_rebuild();
    end if;
    return null;
  end if;
  if tg_table_name = 'bars' then
    if tg_op = 'INSERT' then
      perform private.bar_documents_refresh(array(select id from new_rows));
    elsif tg_op = 'DELETE' then
      delete from private.bar_documents d using old_rows o where d.bar_id = o.id;
    else  -- only bars whose document fields changed (an update of other columns costs a join)
      perform private.bar_documents_refresh(array(
        select coalesce(n.id, o.id) from new_rows n full join old_rows o on o.id = n.id
        where n.id is null or o.id is null
           or (n.name, n.address, n.city_id, n.zip_code, n.latitude, n.longitude, n.phone, n.website,
               n.google_rating, n.google_ratings_total, n.profile_picture_url, n.description, n.price_level)
              is distinct from
              (o.name, o.address, o.city_id, o.zip_code, o.latitude, o.longitude, o.phone, o.website,
               o.google_rating, o.google_ratings_total, o.profile_picture_url, o.description, o.price_level)));
    end if;
  elsif tg_table_name in ('bar_categories', 'photos', 'opening_hours') then
    if tg_op = 'INSERT' then
      perform private.bar_documents_refresh(array(select bar_id from new_rows));
    elsif tg_op = 'DELETE' then
      perform private.bar_documents_refresh(array(select bar_id from old_rows));
    else
      perform private.bar_documents_refresh(array(select bar_id from new_rows union select bar_id from old_rows));
    end if;
  elsif tg_table_name = 'categories' then
    if tg_op = 'UPDATE' then
      perform private.bar_documents_refresh(array(
        select bc.bar_id from private.bar_categories bc
        where bc.category_id in (select id from new_rows union select id from old_rows)));
    end if;  -- INSERT: no bar has it yet; DELETE: only when no bar has it (foreign key)
  elsif tg_table_name = 'cities' then
    if tg_op = 'UPDATE' then
      perform private.bar_documents_refresh(array(
        select b.id from private.bars b
        where b.city_id in (
          select n.id from new_rows n join old_rows o on o.id = n.id
          where (n.name, n.state, n.time_zone) is distinct from (o.name, o.state, o.time_zone))));
    end if;  -- INSERT: no bar yet; DELETE: only without bars (foreign key)
  end if;
  return null;
end
$$;

-- Transition tables need one trigger per event. Named sync_* so they fire after
-- bar_live_sync_* (same event, name order): the documents read bar_live.hours.
do $$
declare
  t text;
begin
  foreach t in array array['bars', 'bar_categories', 'categories', 'photos', 'opening_hours', 'cities'] loop
    execute format('create or replace trigger sync_bar_documents_ins after insert on private.%I referencing new table as new_rows for each statement execute function private.bar_documents_sync()', t);
    execute format('create or replace trigger sync_bar_documents_upd after update on private.%I referencing old table as old_rows new table as new_rows for each statement execute function private.bar_documents_sync()', t);
    execute format('create or replace trigger sync_bar_documents_del after delete on private.%I referencing old table as old_rows for each statement execute function private.bar_documents_sync()', t);
    execute format('create or replace trigger sync_bar_documents_trunc after truncate on private.%I for each statement execute function private.bar_documents_sync()', t);
  end loop;
end $$;

-- Backfill: every document again when the builder changed (or none was built),
-- or when the documents are out of step with the bars. Cheap when in step.
do $$
begin
  if (select builder from private.bar_documents_meta) is distinct from
       md5((select prosrc from pg_proc where oid = 'private.bar_document_parts(bigint)'::regprocedure))
     or (select count(*) from private.bar_documents) <> (select count(*) from private.bars) then
    perform private.bar_documents_rebuild();
    analyze private.bar_documents;
  end if;
end $$;

-------------------------------------------------------------------------------
-- The next-events fragment of each bar's detail form (table: current/50-serving.sql)
-------------------------------------------------------------------------------
-- One row per bar that has events at all: its next 10 events (end_at after
-- valid_from) as the exact text the detail form's json_agg gives. For any instant
-- t in [valid_from, valid_until) the next 10 events at t are the same list:
-- events ending before t are among those ending before valid_until, which ends
-- the earliest listed one, so none of them is listed, and the ones listed are the
-- first 10 of a superset. A reader outside that window builds the list itself
-- (private.bar_detail_row), so a stale fragment costs time, never a wrong answer;
-- private.bar_next_events_refresh_expired() renews them (the worker's periodic job
-- or `select` by hand). A bar without a row has no events: '[]' at every instant.
-- Kept exact by statement-level triggers on events (bars' deletes cascade to them).

-- The next 10 events of one bar after p_now (the one definition of that list).
create or replace function private.bar_next_events_build(p_bar_id bigint, p_now timestamptz)
  returns table (body text, valid_until timestamptz)
  language sql stable
as $$
  select coalesce(json_agg(private.event_short_json(e) order by e.start_at, e.id), '[]'::json)::text, min(e.end_at)
  from (
    select e.* from private.events e
    where e.bar_id = p_bar_id and e.end_at > p_now
    order by e.start_at, e.id
    limit 10
  ) e
$$;

-- Makes these bars' fragments match the events table as of now().
create or replace function private.bar_next_events_refresh(p_bar_ids bigint[]) returns void
  language sql volatile
as $$
  delete from private.bar_next_events n
  using (select distinct u.id from unnest(p_bar_ids) u(id)) u
  where n.bar_id = u.id and not exists (select from private.events e where e.bar_id = u.id);
  insert into private.bar_next_events as n (bar_id, body, valid_from, valid_until)
  select u.id, f.body, now(), f.valid_until
  from (select distinct u.id from unnest(p_bar_ids) u(id)) u
  cross join lateral private.bar_next_events_build(u.id, now()) f
  where exists (select from private.events e where e.bar_id = u.id)
  on conflict (bar_id) do update
    set body = excluded.body, valid_from = excluded.valid_from, valid_until = excluded.valid_until;
$$;

-- Every fragment from scratch (seed, backfill), set-based: the same lists as
-- private.bar_next_events_build (the seed test compares them), one sort of the
-- upcoming events instead of a probe per bar.
create or replace function private.bar_next_events_rebuild() returns void
  language sql volatile
as $$
  truncate private.bar_next_events;
  insert into private.bar_next_events (bar_id, body, valid_from, valid_until)
  select b.bar_id, coalesce(n.body, '[]'), now(), n.valid_until
  from (select distinct e.bar_id from private.events e) b
  left join (
    select x.bar_id, json_agg(private.event_short_json(x.ev) order by x.start_at, x.id)::text as body, min(x.end_at) as valid_until
    from (
      select e as ev, e.bar_id, e.start_at, e.id, e.end_at, row_number() over (partition by e.bar_id order by e.start_at, e.id) as k
      from private.events e where e.end_at > now()
    ) x
    where x.k <= 10
    group by x.bar_id
  ) n on n.bar_id = b.bar_id;
$$;

-- Renews the fragments whose first listed event has ended; returns how many.
create or replace function private.bar_next_events_refresh_expired() returns integer
  language plpgsql volatile
as $$
declare
  v_ids bigint[] := array(select n.bar_id from private.bar_next_events n where n.valid_until <= now());
begin
  perform private.bar_next_events_refresh(v_ids);
  return cardinality(v_ids);
end
$$;

create or replace function private.bar_next_events_sync() returns trigger
  language plpgsql volatile
as $$
begin
  if current_setting('private.defer_bar_documents', true) = 'on' then
    return null;  -- a bulk load calls private.bar_documents_rebuild() at its end
  end if;
  if tg_op = 'TRUNCATE' then
    truncate private.bar_next_events;
  elsif tg_op = 'INSERT' then
    perform private.bar_next_events_refresh(array(select bar_id from new_rows));
  elsif tg_op = 'DELETE' then
    perform private.bar_next_events_refresh(array(select bar_id from old_rows));
  else
    perform private.bar_next_events_refresh(array(select bar_id from new_rows union select bar_id from old_rows));
  end if;
  return null;
end
$$;

create or replace trigger sync_bar_next_events_ins after insert on private.events
  referencing new table as new_rows for each statement execute function private.bar_next_events_sync();
create or replace trigger sync_bar_next_events_upd after update on private.events
  referencing old table as old_rows new table as new_rows for each statement execute function private.bar_next_events_sync();
create or replace trigger sync_bar_next_events_del after delete on private.events
  referencing old table as old_rows for each statement execute function private.bar_next_events_sync();
create or replace trigger sync_bar_next_events_trunc after truncate on private.events
  for each statement execute function private.bar_next_events_sync();

-- Backfill (first application, or after a load that bypassed the triggers). Cheap when in step.
do $$
begin
  if not exists (select from private.bar_next_events) and exists (select from private.events) then
    perform private.bar_next_events_rebuild();
    analyze private.bar_next_events;
  end if;
end $$;

-------------------------------------------------------------------------------
-- hourly_data per day of the week, stored with the profile (occupancy.hourly_days)
-------------------------------------------------------------------------------
-- The conditions are the triggers' WHEN clauses, so the frequent updates of
-- current_intensity alone, and a bulk load (private.defer_bar_live on) that supplies
-- the texts itself (the seed computes them once per distinct profile: 1M bars, a few
-- hundred profiles; the seed test compares them with a recomputation), call no
-- function per row.
create or replace function private.occupancy_hourly_days() returns trigger
  language plpgsql
as $$
begin
  new.hourly_days := private.hourly_days_json(new.weekly_profile);
  return new;
end
$$;

drop trigger if exists occupancy_hourly_days on private.occupancy;
create or replace trigger occupancy_hourly_days_ins before insert on private.occupancy
  for each row
  when (new.hourly_days is null or current_setting('private.defer_bar_live', true) is distinct from 'on')
  execute function private.occupancy_hourly_days();
create or replace trigger occupancy_hourly_days_upd before update on private.occupancy
  for each row
  when (new.weekly_profile is distinct from old.weekly_profile or new.hourly_days is null)
  execute function private.occupancy_hourly_days();

-- Backfill (the column's first application): one pass over the rows that lack it.
update private.occupancy set hourly_days = private.hourly_days_json(weekly_profile) where hourly_days is null;

-- The next events of one bar after p_now, for a reader outside its stored window
-- (plpgsql: its plan is cached, and the readers' plans do not carry it).
create or replace function private.bar_next_events_live(p_bar_id bigint, p_now timestamptz) returns text
  language plpgsql stable
as $$
begin
  return (select f.body from private.bar_next_events_build(p_bar_id, p_now) f);
end
$$;

-------------------------------------------------------------------------------
-- Bar objects as row sources (inlined into the caller's query, LATERAL)
-------------------------------------------------------------------------------
-- Concatenations of stored texts and a few formatted numbers: no json_agg, no
-- json_build_object per request. Open now comes from bar_live.open_week at the
-- bar's local time, computed once per bar in an OFFSET 0 subquery (pulled up, the
-- time zone conversion would be repeated in every use, and the helpers that take
-- its results as arguments would not be inlined).

-- Both forms are text, not json: a json value would be parsed (validated) again on
-- every call, which was 10 % of a 50-bar radius page and a tenth to a quarter of
-- api.bar (api.bars and api.bar return text; bars_by_city casts each row to json).
-- v1.3 and before returned table (body json), which a replace cannot change.
do $$
declare
  v_fn text;
begin
  foreach v_fn in array array['private.bar_list_row(bigint, timestamptz)', 'private.bar_detail_row(bigint, timestamptz)'] loop
    if (select p.prorettype from pg_proc p where p.oid = to_regprocedure(v_fn)) = 'json'::regtype then
      execute format('drop function %s', v_fn);
    end if;
  end loop;
end
$$;

create or replace function private.bar_list_row(p_bar_id bigint, p_now timestamptz) returns table (body text)
  language sql stable
as $$
  select d.head || ', "occupancy" : ' || private.occupancy_json_head(l.current_intensity, x.open) || '}}'
  from private.bar_documents d
  left join private.bar_live l on l.bar_id = d.bar_id
  cross join lateral (
    select coalesce(l.open_week @> private.minute_of_week(p_now at time zone d.time_zone), false) as open
    offset 0
  ) x
  where d.bar_id = p_bar_id
$$;

-- The detail form: the list form's keys, hourly occupancy for the local day,
-- description and price_level, and the next 10 upcoming events.
create or replace function private.bar_detail_row(p_bar_id bigint, p_now timestamptz) returns table (body text)
  language sql stable
as $$
  select (d.head || ', "occupancy" : ' || private.occupancy_json_head(l.current_intensity, x.open)
          || ', "hourly_data" : '
          || coalesce(o.hourly_days[x.day], private.hourly_json_text(o.weekly_profile, x.day * 24 - 23)) || '}'
          || d.detail_mid
          || ', "events" : '
          || case
               when n.bar_id is null then '[]'
               when n.valid_from <= p_now and (n.valid_until is null or p_now < n.valid_until) then n.body
               else private.bar_next_events_live(d.bar_id, p_now)
             end
          || '}')
  from private.bar_documents d
  left join private.bar_live l on l.bar_id = d.bar_id
  left join private.occupancy o on o.bar_id = d.bar_id
  left join private.bar_next_events n on n.bar_id = d.bar_id
  cross join lateral (
    select extract(isodow from t.local)::int as day,
           coalesce(l.open_week @> private.minute_of_week(t.local), false) as open
    from (select p_now at time zone d.time_zone as local) t
    offset 0
  ) x
  where d.bar_id = p_bar_id
$$;
