-- Deprecated calls (decisions.md v1.3 "Deprecations and the changelog"; repeatable file, see
-- db/CONVENTIONS.md; table in current/31-deprecations.sql). plpgsql, so this file still applies
-- where the table is not there yet (function files are applied whether or not current/ is).

-- A batch counted in memory by a partner server:
-- [{"day": "2026-11-25", "key_id": "...", "what": "GET /bars parameter radius", "calls": 3,
--   "last_call_at": "2026-11-25T10:00:00.000Z"}, ...]. Adds to the day's counts (instances add up).
create or replace function api.record_deprecated_calls(batch jsonb) returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  insert into admin.deprecated_calls as c (day, subscriber_id, api_key_id, what, calls, last_call_at)
  select (r->>'day')::date, k.subscriber_id, k.id, r->>'what', sum((r->>'calls')::bigint),
         max((r->>'last_call_at')::timestamptz)
    from jsonb_array_elements(batch) r
    join admin.api_keys k on k.id = (r->>'key_id')::uuid
   group by 1, 2, 3, 4
  on conflict (day, api_key_id, what)
    do update set calls = c.calls + excluded.calls, last_call_at = greatest(c.last_call_at, excluded.last_call_at);
end $$;

-- GET usage's deprecated_calls: the subscriber's calls of each deprecation in the 14 UTC days up
-- to p_now's day (today and the 13 before), all keys together, most recent call first.
create or replace function api.deprecated_calls(p_subscriber_id uuid, p_now timestamptz) returns json
  language plpgsql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (select coalesce(json_agg(json_build_object('what', t.what, 'calls_last_14_days', t.calls,
                                             'last_call_at', private.iso_utc(t.last_call_at))
                           order by t.last_call_at desc, t.what), '[]'::json)
    from (select c.what, sum(c.calls)::bigint as calls, max(c.last_call_at) as last_call_at
            from admin.deprecated_calls c
           where c.subscriber_id = p_subscriber_id
             and c.day > (p_now at time zone 'UTC')::date - 14
             and c.day <= (p_now at time zone 'UTC')::date
           group by c.what) t);
end $$;

revoke all on function api.record_deprecated_calls(jsonb), api.deprecated_calls(uuid, timestamptz) from public;
grant execute on function api.record_deprecated_calls(jsonb), api.deprecated_calls(uuid, timestamptz)
  to bar_partner;
