-- Bulk export and incremental sync (repeatable file; tables in committed migration 000006).
--
-- 1. updated_at kept exact
--    bars    a BEFORE UPDATE row trigger sets updated_at = now() when an exported
--            column changes (cheap: no query); statement-level AFTER triggers with
--            transition tables move it for changes to bar_categories, photos,
--            opening_hours, categories (name/slug: the bars using them) and cities
--            (name/state: the city's bars). Occupancy moves nothing.
--    events  a BEFORE UPDATE row trigger, and the statement-level triggers of bars
--            and cities for the BarSummary the event embeds.
--    deleted bars and events leave a tombstone (statement-level AFTER DELETE).
--    Inserts take the column default now(): the seed stays set-based and fast.
--    updated_at is now(), the writing transaction's start time.
--
-- 2. The export itself: api.export_bars / api.export_events OPEN a cursor (name
--    given by the caller) over one static statement per filter combination and
--    return it; the server FETCHes it in batches inside one REPEATABLE READ READ
--    ONLY transaction. Privileges are checked when the cursor is opened (inside
--    the SECURITY DEFINER function), so bar_partner needs EXECUTE only.
--
-- 3. The watermark (api.export_watermark, called BEFORE the export's transaction
--    takes its snapshot, in its own statement): the oldest xact_start of any open
--    transaction in this database, or the clock if none is older, minus 1 s.
--    A change C missing from the export was not committed when the snapshot was
--    taken. Either C's transaction was already open when the watermark was read:
--    then its updated_at (= its now() = its xact_start) >= the watermark; or it
--    started after: then its updated_at > the clock reading >= the watermark.
--    Either way the next export (updated_at >= watermark) has C. The 1 s margin
--    covers a transaction that has started but not yet published its xact_start.
--    Reading every backend's xact_start needs the function owner to be a
--    superuser or a member of pg_read_all_stats (otherwise other roles' rows read
--    NULL and the watermark would be the clock: documented in docs/EXPORT.md).
--    Long transactions (another export) hold the watermark back: the next export
--    then repeats some objects (consumers upsert by id), it never loses one.

-------------------------------------------------------------------------------
-- Triggers
-------------------------------------------------------------------------------

create or replace function private.export_bars_touch_row() returns trigger
  language plpgsql
as $$
begin
  if new.updated_at is not distinct from old.updated_at
     and (new.city_id, new.name, new.address, new.zip_code, new.latitude, new.longitude, new.phone,
          new.website, new.google_rating, new.google_ratings_total, new.price_level, new.description,
          new.profile_picture_url)
       is distinct from
         (old.city_id, old.name, old.address, old.zip_code, old.latitude, old.longitude, old.phone,
          old.website, old.google_rating, old.google_ratings_total, old.price_level, old.description,
          old.profile_picture_url) then
    new.updated_at := now();
  end if;
  return new;
end
$$;

create or replace function private.export_events_touch_row() returns trigger
  language plpgsql
as $$
begin
  if new.updated_at is not distinct from old.updated_at
     and (new.bar_id, new.city_id, new.title, new.description, new.classification, new.start_at, new.end_at,
          new.created_at)
       is distinct from
         (old.bar_id, old.city_id, old.title, old.description, old.classification, old.start_at, old.end_at,
          old.created_at) then
    new.updated_at := now();
  end if;
  return new;
end
$$;

create or replace trigger export_touch before update on private.bars
  for each row execute function private.export_bars_touch_row();
create or replace trigger export_touch before update on private.events
  for each row execute function private.export_events_touch_row();

-- TRUNCATE of a partner-visible table (bars, events; a bar's events go with it) writes a tombstone
-- for every row, like DELETE does, so an incremental export (updated_since) tells its consumer to
-- drop them. Recorded rather than refused: the seed's --reset truncates these tables on purpose.
create or replace function private.export_truncate_tombstones() returns trigger
  language plpgsql volatile
as $$
begin
  if tg_table_name = 'bars' then
    insert into private.tombstones as t (kind, id, city_id, deleted_at)
    select 'bar', b.id, b.city_id, now() from private.bars b
    on conflict (kind, id) do update set city_id = excluded.city_id, deleted_at = excluded.deleted_at;
  elsif tg_table_name = 'events' then
    insert into private.tombstones as t (kind, id, city_id, deleted_at)
    select 'event', e.id, e.city_id, now() from private.events e
    on conflict (kind, id) do update set city_id = excluded.city_id, deleted_at = excluded.deleted_at;
  end if;
  return null;
end
$$;

create or replace trigger export_truncate before truncate on private.bars
  for each statement execute function private.export_truncate_tombstones();
create or replace trigger export_truncate before truncate on private.events
  for each statement execute function private.export_truncate_tombstones();

-- Moves updated_at of these bars (and nothing when it is already this transaction's).
create or replace function private.export_touch_bars(p_bar_ids bigint[]) returns void
  language sql volatile
as $$
  update private.bars b set updated_at = now()
  where b.id in (select distinct u.id from unnest(p_bar_ids) u(id)) and b.updated_at <> now()
$$;

create or replace function private.export_touch_events_of_bars(p_bar_ids bigint[]) returns void
  language sql volatile
as $$
  update private.events e set updated_at = now()
  where e.bar_id in (select distinct u.id from unnest(p_bar_ids) u(id)) and e.updated_at <> now()
$$;

create or replace function private.export_sync() returns trigger
  language plpgsql volatile
as $$
begin
  -- A bulk load (the seed) sets updated_at itself and defers the derived data:
  -- no per-statement touches (tombstones are still written).
  if current_setting('private.defer_bar_documents', true) = 'on' and tg_op <> 'DELETE' then
    return null;
  end if;
  if tg_table_name in ('bar_categories', 'photos', 'opening_hours') then
    if tg_op = 'INSERT' then
      perform private.export_touch_bars(array(select bar_id from new_rows));
    elsif tg_op = 'DELETE' then
      perform private.export_touch_bars(array(select bar_id from old_rows));  -- a deleted bar: no row left
    else
      perform private.export_touch_bars(array(select bar_id from new_rows union select bar_id from old_rows));
    end if;
  elsif tg_table_name = 'categories' then  -- UPDATE only (INSERT: no bar has it; DELETE: none may)
    perform private.export_touch_bars(array(
      select bc.bar_id from private.bar_categories bc
      where bc.category_id in (
        select n.id from new_rows n join old_rows o on o.id = n.id
        where (n.name, n.slug) is distinct from (o.name, o.slug))));
  elsif tg_table_name = 'cities' then      -- UPDATE only
    perform private.export_touch_bars(array(
      select b.id from private.bars b
      where b.city_id in (
        select n.id from new_rows n join old_rows o on o.id = n.id
        where (n.name, n.state) is distinct from (o.name, o.state))));
    -- events embed their bar's city name and state
    update private.events e set updated_at = now()
    where e.city_id in (
        select n.id from new_rows n join old_rows o on o.id = n.id
        where (n.name, n.state) is distinct from (o.name, o.state))
      and e.updated_at <> now();
  elsif tg_table_name = 'bars' then
    if tg_op = 'UPDATE' then               -- the events' BarSummary
      perform private.export_touch_events_of_bars(array(
        select n.id from new_rows n join old_rows o on o.id = n.id
        where (n.name, n.address, n.city_id, n.latitude, n.longitude, n.profile_picture_url)
          is distinct from (o.name, o.address, o.city_id, o.latitude, o.longitude, o.profile_picture_url)));
    else                                   -- DELETE
      insert into private.tombstones as t (kind, id, city_id, deleted_at)
      select 'bar', o.id, o.city_id, now() from old_rows o
      on conflict (kind, id) do update set city_id = excluded.city_id, deleted_at = excluded.deleted_at;
    end if;
  elsif tg_table_name = 'events' then      -- DELETE
    insert into private.tombstones as t (kind, id, city_id, deleted_at)
    select 'event', o.id, o.city_id, now() from old_rows o
    on conflict (kind, id) do update set city_id = excluded.city_id, deleted_at = excluded.deleted_at;
  end if;
  return null;
end
$$;

do $$
declare
  t text;
begin
  foreach t in array array['bar_categories', 'photos', 'opening_hours'] loop
    execute format('create or replace trigger export_sync_ins after insert on private.%I referencing new table as new_rows for each statement execute function private.export_sync()', t);
    execute format('create or replace trigger export_sync_upd after update on private.%I referencing old table as old_rows new table as new_rows for each statement execute function private.export_sync()', t);
    execute format('create or replace trigger export_sync_del after delete on private.%I referencing old table as old_rows for each statement execute function private.export_sync()', t);
  end loop;
  foreach t in array array['categories', 'cities', 'bars'] loop
    execute format('create or replace trigger export_sync_upd after update on private.%I referencing old table as old_rows new table as new_rows for each statement execute function private.export_sync()', t);
  end loop;
  foreach t in array array['bars', 'events'] loop
    execute format('create or replace trigger export_sync_del after delete on private.%I referencing old table as old_rows for each statement execute function private.export_sync()', t);
  end loop;
end $$;

-------------------------------------------------------------------------------
-- Lines of the export
-------------------------------------------------------------------------------

-- A timestamp to the microsecond (watermarks and updated_at compare exactly).
create or replace function private.iso_utc_us(ts timestamptz) returns text
  language sql stable parallel safe
as $$ select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') $$;

-- {"type":"bar","bar":{detail form of GET bars/:id without "events", plus "updated_at"}}
-- The stored document of 10-bar-documents.sql with the live occupancy spliced in,
-- byte for byte what private.bar_detail_row's json_build_object / json_agg give
-- (test/api/export.test.ts compares them), but built as text: the 24 hourly
-- values go through one format() call instead of a json_agg subquery per bar
-- (1M bars: ~185 s -> ~120 s of database time on the loaded bench machine).
create or replace function private.export_bar_line(p_bar_id bigint, p_updated_at timestamptz, p_now timestamptz)
  returns table (line text)
  language sql stable
as $$
  select '{"type":"bar","bar":' || d.head || ', "occupancy" : {"current_intensity" : '
         || coalesce((case when x.open then l.current_intensity::int else 0 end)::text, 'null')
         || ', "status" : ' || coalesce(to_json(private.occupancy_status(l.current_intensity, x.open))::text, 'null')
         || ', "hourly_data" : '
         || format('[{"hour" : 0, "intensity" : %s}, {"hour" : 1, "intensity" : %s}, {"hour" : 2, "intensity" : %s}, {"hour" : 3, "intensity" : %s}, {"hour" : 4, "intensity" : %s}, {"hour" : 5, "intensity" : %s}, {"hour" : 6, "intensity" : %s}, {"hour" : 7, "intensity" : %s}, {"hour" : 8, "intensity" : %s}, {"hour" : 9, "intensity" : %s}, {"hour" : 10, "intensity" : %s}, {"hour" : 11, "intensity" : %s}, {"hour" : 12, "intensity" : %s}, {"hour" : 13, "intensity" : %s}, {"hour" : 14, "intensity" : %s}, {"hour" : 15, "intensity" : %s}, {"hour" : 16, "intensity" : %s}, {"hour" : 17, "intensity" : %s}, {"hour" : 18, "intensity" : %s}, {"hour" : 19, "intensity" : %s}, {"hour" : 20, "intensity" : %s}, {"hour" : 21, "intensity" : %s}, {"hour" : 22, "intensity" : %s}, {"hour" : 23, "intensity" : %s}]', variadic coalesce(
              array_replace(o.weekly_profile[x.base + 1 : x.base + 24]::text[], null, 'null'),
              array_fill('null'::text, array[24])))
         || '}' || d.detail_mid
         || ', "updated_at" : "' || private.iso_utc_us(p_updated_at) || '"}}'
  from private.bar_documents d
  left join private.bar_live l on l.bar_id = d.bar_id
  left join private.occupancy o on o.bar_id = d.bar_id
  cross join lateral (
    select (extract(isodow from p_now at time zone d.time_zone)::int - 1) * 24 as base,
           coalesce(l.open_week @> private.minute_of_week(p_now at time zone d.time_zone), false) as open
  ) x
  where d.bar_id = p_bar_id
$$;

-- {"type":"event","event":{full form of GET events, plus "updated_at"}}
create or replace function private.export_event_line(e private.events, b private.bars, c private.cities)
  returns text
  language sql stable
as $$
  select '{"type":"event","event":' || json_build_object(
           'id', e.id::text,
           'title', e.title,
           'description', e.description,
           'classification', e.classification,
           'start_at', private.iso_utc(e.start_at),
           'end_at', private.iso_utc(e.end_at),
           'created_at', private.iso_utc(e.created_at),
           'bar', private.bar_summary_json(b, c),
           'updated_at', private.iso_utc_us(e.updated_at))::text || '}'
$$;

create or replace function private.export_deleted_line(p_kind text, p_id bigint, p_deleted_at timestamptz)
  returns text
  language sql stable
as $$
  select '{"type":"deleted","kind":"' || p_kind || '","id":"' || p_id || '","deleted_at":"'
         || private.iso_utc_us(p_deleted_at) || '"}'
$$;

-------------------------------------------------------------------------------
-- api
-------------------------------------------------------------------------------

-- The watermark of an export that is about to start (see 3. above). Call it in
-- its own statement before the export's transaction takes its snapshot.
create or replace function api.export_watermark() returns text
  language plpgsql volatile security definer
  set search_path = private, public, pg_temp
as $$
begin
  return private.iso_utc_us((
    select least(clock_timestamp(), min(a.xact_start)) - interval '1 second'
    from pg_catalog.pg_stat_activity a
    where a.datname = current_database() and a.xact_start is not null));
end
$$;

-- Opens cursor p_cursor over the export's lines (one NDJSON line each, without
-- the end line) and returns it; NULL when the city is not found. p_state alone
-- narrows to a state (an unknown state is an empty export).
-- Order: by id (a full export), by (updated_at, id) with p_updated_since, then the
-- tombstones deleted at or after p_updated_since.
create or replace function api.export_bars(
  p_cursor text,
  p_state text default null,
  p_city text default null,
  p_updated_since timestamptz default null,
  p_now timestamptz default now()
) returns refcursor
  language plpgsql volatile security definer
  set search_path = private, public, pg_temp
  set jit = off
as $$
declare
  c refcursor := p_cursor;
  v_city private.cities;
begin
  if p_city is not null then
    select * into v_city from private.find_city(p_state, p_city);
    if not found then return null; end if;
    if p_updated_since is null then
      open c no scroll for
        select r.line from private.bars b cross join lateral private.export_bar_line(b.id, b.updated_at, p_now) r
        where b.city_id = v_city.id order by b.id;
    else
      open c no scroll for
        select * from (
          select r.line from (
            select b.id, b.updated_at from private.bars b
            where b.city_id = v_city.id and b.updated_at >= p_updated_since) b
          cross join lateral private.export_bar_line(b.id, b.updated_at, p_now) r
          order by b.updated_at, b.id) s
        union all
        select * from (
          select private.export_deleted_line(t.kind, t.id, t.deleted_at) from private.tombstones t
          where t.kind = 'bar' and t.deleted_at >= p_updated_since and t.city_id = v_city.id
          order by t.deleted_at, t.id) d;
    end if;
  elsif p_state is not null then
    if p_updated_since is null then
      open c no scroll for
        select r.line from private.bars b cross join lateral private.export_bar_line(b.id, b.updated_at, p_now) r
        where b.city_id in (select ci.id from private.cities ci where upper(ci.state) = upper(p_state))
        order by b.id;
    else
      open c no scroll for
        select * from (
          select r.line from (
            select b.id, b.updated_at from private.bars b
            where b.city_id in (select ci.id from private.cities ci where upper(ci.state) = upper(p_state))
              and b.updated_at >= p_updated_since) b
          cross join lateral private.export_bar_line(b.id, b.updated_at, p_now) r
          order by b.updated_at, b.id) s
        union all
        select * from (
          select private.export_deleted_line(t.kind, t.id, t.deleted_at) from private.tombstones t
          where t.kind = 'bar' and t.deleted_at >= p_updated_since
            and t.city_id in (select ci.id from private.cities ci where upper(ci.state) = upper(p_state))
          order by t.deleted_at, t.id) d;
    end if;
  else
    if p_updated_since is null then
      open c no scroll for
        select r.line from private.bars b cross join lateral private.export_bar_line(b.id, b.updated_at, p_now) r
        order by b.id;
    else
      open c no scroll for
        select * from (
          select r.line from (
            select b.id, b.updated_at from private.bars b
            where b.updated_at >= p_updated_since) b
          cross join lateral private.export_bar_line(b.id, b.updated_at, p_now) r
          order by b.updated_at, b.id) s
        union all
        select * from (
          select private.export_deleted_line(t.kind, t.id, t.deleted_at) from private.tombstones t
          where t.kind = 'bar' and t.deleted_at >= p_updated_since
          order by t.deleted_at, t.id) d;
    end if;
  end if;
  return c;
end
$$;

-- Events: start_date / end_date as in GET events (a date is the event's city's
-- local day; the end date is inclusive), but unbounded when absent.
create or replace function api.export_events(
  p_cursor text,
  p_state text default null,
  p_city text default null,
  p_start_date text default null,
  p_end_date text default null,
  p_updated_since timestamptz default null
) returns refcursor
  language plpgsql volatile security definer
  set search_path = private, public, pg_temp
  set jit = off
as $$
declare
  c refcursor := p_cursor;
  v_city private.cities;
  v_since timestamptz := coalesce(p_updated_since, '-infinity');
begin
  -- Whole local days in any one zone: comparing them in UTC is comparing the dates.
  if private.date_bound(p_end_date, 'UTC', true) <= private.date_bound(p_start_date, 'UTC', false) then
    raise exception using errcode = 'PT400', message = 'end_date must not be before start_date';
  end if;
  if p_city is not null then
    select * into v_city from private.find_city(p_state, p_city);
    if not found then return null; end if;
    open c no scroll for
      select * from (
        select (select private.export_event_line(e, b, v_city) from private.bars b where b.id = e.bar_id)
        from private.events e
        where e.city_id = v_city.id and e.updated_at >= v_since
          and e.start_at >= coalesce(private.date_bound(p_start_date, v_city.time_zone, false), '-infinity')
          and e.start_at < coalesce(private.date_bound(p_end_date, v_city.time_zone, true), 'infinity')
        order by e.updated_at, e.id) s
      union all
      select * from (
        select private.export_deleted_line(t.kind, t.id, t.deleted_at) from private.tombstones t
        where p_updated_since is not null and t.kind = 'event' and t.deleted_at >= v_since and t.city_id = v_city.id
        order by t.deleted_at, t.id) d;
  else
    open c no scroll for
      -- Driven by the (updated_at, id) index of events alone (bar and city are per-row
      -- probes), so the first batch comes at once instead of after a sort of every event.
      -- (Every function called while the cursor is FETCHed must be inlined: FETCH runs
      -- outside this SECURITY DEFINER function, as bar_partner.)
      select * from (
        select (select private.export_event_line(e, b, ci) from private.bars b where b.id = e.bar_id)
        from private.events e join private.cities ci on ci.id = e.city_id
        where e.updated_at >= v_since
          and (p_state is null or upper(ci.state) = upper(p_state))
          and e.start_at >= coalesce(private.date_bound(p_start_date, ci.time_zone, false), '-infinity')
          and e.start_at < coalesce(private.date_bound(p_end_date, ci.time_zone, true), 'infinity')
        order by e.updated_at, e.id) s
      union all
      select * from (
        select private.export_deleted_line(t.kind, t.id, t.deleted_at) from private.tombstones t
        where p_updated_since is not null and t.kind = 'event' and t.deleted_at >= v_since
          and (p_state is null or t.city_id in (select ci.id from private.cities ci where upper(ci.state) = upper(p_state)))
        order by t.deleted_at, t.id) d;
  end if;
  return c;
end
$$;

revoke all on function api.export_watermark() from public;
revoke all on function api.export_bars(text, text, text, timestamptz, timestamptz) from public;
revoke all on function api.export_events(text, text, text, text, text, timestamptz) from public;
grant execute on function api.export_watermark() to bar_partner;
grant execute on function api.export_bars(text, text, text, timestamptz, timestamptz) to bar_partner;
grant execute on function api.export_events(text, text, text, text, text, timestamptz) to bar_partner;
