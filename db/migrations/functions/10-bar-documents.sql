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
-- and cast to json (json keeps text verbatim: json_agg / json_build_object emit
-- it unchanged, so responses are byte for byte what the builder's expressions give).
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
-- Bar objects as row sources (inlined into the caller's query, LATERAL)
-------------------------------------------------------------------------------
-- Open now comes from bar_live.open_week at the bar's local time.

create or replace function private.bar_list_row(p_bar_id bigint, p_now timestamptz) returns table (body json)
  language sql stable
as $$
  select (d.head || ', "occupancy" : ' || json_build_object(
            'current_intensity', case when x.open then l.current_intensity::int else 0 end,
            'status', private.occupancy_status(l.current_intensity, x.open))::text || '}')::json
  from private.bar_documents d
  left join private.bar_live l on l.bar_id = d.bar_id
  cross join lateral (
    select coalesce(l.open_week @> private.minute_of_week(p_now at time zone d.time_zone), false) as open
  ) x
  where d.bar_id = p_bar_id
$$;

-- The detail form: the list form's keys, hourly occupancy for the local day,
-- description and price_level, and the next 10 upcoming events.
create or replace function private.bar_detail_row(p_bar_id bigint, p_now timestamptz) returns table (body json)
  language sql stable
as $$
  select (d.head || ', "occupancy" : ' || json_build_object(
            'current_intensity', case when x.open then l.current_intensity::int else 0 end,
            'status', private.occupancy_status(l.current_intensity, x.open),
            'hourly_data', (
              select json_agg(json_build_object(
                       'hour', hr,
                       'intensity', o.weekly_profile[(extract(isodow from x.local)::int - 1) * 24 + hr + 1]::int)
                     order by hr)
              from generate_series(0, 23) hr))::text
          || d.detail_mid
          || ', "events" : ' || (
            select coalesce(json_agg(private.event_short_json(e) order by e.start_at, e.id), '[]'::json)
            from (
              select e.* from private.events e
              where e.bar_id = d.bar_id and e.end_at > p_now
              order by e.start_at, e.id
              limit 10
            ) e)::text
          || '}')::json
  from private.bar_documents d
  left join private.bar_live l on l.bar_id = d.bar_id
  left join private.occupancy o on o.bar_id = d.bar_id
  cross join lateral (
    select p_now at time zone d.time_zone as local,
           coalesce(l.open_week @> private.minute_of_week(p_now at time zone d.time_zone), false) as open
  ) x
  where d.bar_id = p_bar_id
$$;
