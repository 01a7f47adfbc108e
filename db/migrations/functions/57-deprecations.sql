-- Deprecated calls (decisions.md v1.3 "Deprecations and the changelog"; repeatable file, see
-- db/CONVENTIONS.md; table in current/31-deprecations.sql). plpgsql, so this file still applies
-- where the table is not there yet (function files are applied whether or not current/ is).

-- A batch counted in memory by a partner server:
-- [{"day": "2026-11-25", "key_id": "...", "what": "GET /bars parameter radius", "calls": 3,
--   "last_call_at": "2026-11-25T10:00:00.000Z", "sunset": "2027-06-01", "replacement": "...",
--   "changelog": "https://..."}, ...]. Adds to the day's counts (instances add up). The first time a
-- subscriber's calls of a deprecation are recorded, each of its active alert contacts gets one
-- e-mail (admin.deprecation_notices, job deprecation_email), whatever the number of instances.
create or replace function api.record_deprecated_calls(batch jsonb) returns void
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v record;
begin
  insert into admin.deprecated_calls as c (day, subscriber_id, api_key_id, what, calls, last_call_at)
  select (r->>'day')::date, k.subscriber_id, k.id, r->>'what', sum((r->>'calls')::bigint),
         max((r->>'last_call_at')::timestamptz)
    from jsonb_array_elements(batch) r
    join admin.api_keys k on k.id = (r->>'key_id')::uuid
   group by 1, 2, 3, 4
  on conflict (day, api_key_id, what)
    do update set calls = c.calls + excluded.calls, last_call_at = greatest(c.last_call_at, excluded.last_call_at);

  for v in
    insert into admin.deprecation_notices as n (subscriber_id, what, email, sunset, replacement, changelog, first_call_at)
    select b.subscriber_id, b.what, ac.email, b.sunset, b.replacement, b.changelog, b.first_call_at
      from (select k.subscriber_id, r->>'what' as what, max(r->>'sunset')::date as sunset,
                   max(r->>'replacement') as replacement, max(r->>'changelog') as changelog,
                   min((r->>'last_call_at')::timestamptz) as first_call_at
              from jsonb_array_elements(batch) r
              join admin.api_keys k on k.id = (r->>'key_id')::uuid
             where r ? 'sunset' and r ? 'replacement' and r ? 'changelog'
             group by 1, 2) b
      join admin.alert_contacts ac on ac.subscriber_id = b.subscriber_id and ac.state = 'active'
     order by b.subscriber_id, b.what, ac.email
    on conflict (subscriber_id, what, email) do nothing
    returning n.id
  loop
    perform graphile_worker.add_job('deprecation_email', json_build_object('notice_id', v.id),
                                    job_key => 'deprecation:' || v.id, max_attempts => 14);
  end loop;
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

-- The sending task (server/email/deprecation-task.ts, as the owner): what the e-mail says, while pending.
create or replace function private.deprecation_notice_claim(p_id uuid)
  returns table (id uuid, email text, contact_state text, subscriber_id uuid, subscriber_name text, what text,
                 sunset date, replacement text, changelog text, first_call_at timestamptz, created_at timestamptz)
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
  return query
  select n.id, n.email, c.state, n.subscriber_id, s.name, n.what, n.sunset, n.replacement, n.changelog,
         n.first_call_at, n.created_at
    from admin.deprecation_notices n
    join admin.subscribers s on s.id = n.subscriber_id
    left join admin.alert_contacts c on c.subscriber_id = n.subscriber_id and c.email = n.email
   where n.id = p_id and n.status = 'pending';
end $$;

-- One attempt: 'sent'; 'retry' (temporary failure); 'bounce' (permanent: the contact is marked
-- bouncing, the notice failed); 'skip' (the contact is no longer active); 'failed' (out of retries).
create or replace function private.deprecation_notice_record(p_id uuid, p_outcome text, p_result text)
  returns text
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v admin.deprecation_notices;
begin
  update admin.deprecation_notices n
     set attempts = n.attempts + case when p_outcome = 'skip' then 0 else 1 end, last_result = p_result,
         status = case p_outcome when 'sent' then 'sent' when 'retry' then 'pending' else 'failed' end,
         sent_at = case when p_outcome = 'sent' then now() end
   where n.id = p_id and n.status = 'pending'
  returning n.* into v;
  if not found then
    return null;
  end if;
  if p_outcome = 'bounce' then
    update admin.alert_contacts c set state = 'bouncing', state_reason = p_result, state_changed_at = now()
     where c.subscriber_id = v.subscriber_id and c.email = v.email and c.state = 'active';
  end if;
  return v.status;
end $$;
revoke all on function private.deprecation_notice_claim(uuid), private.deprecation_notice_record(uuid, text, text)
  from public;

revoke all on function api.record_deprecated_calls(jsonb), api.deprecated_calls(uuid, timestamptz) from public;
grant execute on function api.record_deprecated_calls(jsonb), api.deprecated_calls(uuid, timestamptz)
  to bar_partner;
