-- bar_live maintenance (repeatable file; the table is in committed 000002).
-- One row per bar: city, name, current intensity, the weekly open minutes and the
-- `hours` object, kept exact by statement-level triggers on bars, occupancy and
-- opening_hours (created in 000002). Current source of the trigger function;
-- changes: TRUNCATE of opening_hours also clears the stored `hours` objects
-- (they were left as before; readers fall back to opening_hours when null);
-- price_level and google_rating are kept too (the v1.1 filters).

create or replace function private.bar_live_sync() returns trigger
  language plpgsql
as $$
begin
  if tg_table_name = 'bars' then
    if tg_op = 'TRUNCATE' then
      truncate private.bar_live, private.city_bar_counts;
      return null;
    end if;
    if tg_op in ('UPDATE', 'DELETE') then
      update private.city_bar_counts k set n = k.n - d.n
      from (select city_id, count(*)::int as n from old_rows group by 1) d where k.city_id = d.city_id;
    end if;
    if tg_op in ('UPDATE', 'INSERT') then
      insert into private.city_bar_counts as k (city_id, n)
      select city_id, count(*)::int from new_rows group by 1
      on conflict (city_id) do update set n = k.n + excluded.n;
    end if;
    if tg_op = 'DELETE' then
      delete from private.bar_live l using old_rows o where l.bar_id = o.id;
    else  -- INSERT, UPDATE
      insert into private.bar_live as l (bar_id, city_id, name, price_level, google_rating)
      select n.id, n.city_id, n.name, n.price_level, n.google_rating from new_rows n
      on conflict (bar_id) do update
        set city_id = excluded.city_id, name = excluded.name,
            price_level = excluded.price_level, google_rating = excluded.google_rating
        where (l.city_id, l.name, l.price_level, l.google_rating)
              is distinct from (excluded.city_id, excluded.name, excluded.price_level, excluded.google_rating);
      if tg_op = 'INSERT' then  -- rows of a bar that existed before (a re-used id)
        update private.bar_live l set current_intensity = o.current_intensity
        from private.occupancy o, new_rows n where o.bar_id = n.id and l.bar_id = n.id;
        if exists (select from private.opening_hours h join new_rows n on n.id = h.bar_id) then
          perform private.bar_live_set_week(array(select id from new_rows));
        end if;
      end if;
    end if;
  elsif tg_table_name = 'occupancy' then
    if tg_op = 'TRUNCATE' then
      update private.bar_live set current_intensity = null where current_intensity is not null;
    elsif tg_op = 'DELETE' then
      update private.bar_live l set current_intensity = null from old_rows o
      where l.bar_id = o.bar_id and not exists (select from private.occupancy x where x.bar_id = o.bar_id);
    else
      if tg_op = 'UPDATE' then  -- a row moved to another bar
        update private.bar_live l set current_intensity = null from old_rows o
        where l.bar_id = o.bar_id and not exists (select from private.occupancy x where x.bar_id = o.bar_id);
      end if;
      update private.bar_live l set current_intensity = n.current_intensity from new_rows n
      where l.bar_id = n.bar_id and l.current_intensity is distinct from n.current_intensity;
    end if;
  else  -- opening_hours
    if tg_op = 'TRUNCATE' then
      update private.bar_live set open_week = '{}', hours = null where not isempty(open_week) or hours is not null;
    elsif tg_op = 'INSERT' then
      perform private.bar_live_set_week(array(select bar_id from new_rows));
    elsif tg_op = 'DELETE' then
      perform private.bar_live_set_week(array(select bar_id from old_rows));
    else
      perform private.bar_live_set_week(array(select bar_id from new_rows union select bar_id from old_rows));
    end if;
  end if;
  return null;
end
$$;
