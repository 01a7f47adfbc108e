-- E-mail notifications of usage alerts (decisions.md v1.2; tables: current/30-email.sql).
--
-- Contacts: admin.set_alert_contacts / admin.clear_contact_bounce (CLI and
-- operator GraphQL); api.unsubscribe_alert_contact (the one-click link; the
-- token is checked in Node, server/email/token.ts).
--
-- Deliveries: the trigger email_usage_alert writes one admin.email_deliveries
-- row per alert and active contact IN THE TRANSACTION THAT RECORDS THE ALERT
-- and queues graphile-worker job email_send (job_key 'email:<id>'). The unique
-- index (first_alert_id, email) makes it once per alert and address whatever
-- inserts it. Minute-bucket alerts fold: while a minute e-mail for the same
-- key, level and address is not sealed (its first send attempt has not
-- started), a new alert is counted in it; otherwise a new e-mail is opened,
-- due an hour after the previous one (at most one an hour). An advisory lock
-- per key, level and address serialises concurrent alerts; the partial unique
-- index email_deliveries_open_fold backs it.
--
-- max_attempts 14: graphile-worker waits exp(min(attempts, 10)) s between
-- attempts (about 28 h in all); the task stops retrying 24 h after the e-mail
-- was due (private.email_record_attempt's p_final).

create or replace function private.email_normalise(p_email text) returns text
  language sql immutable parallel safe
as $$ select lower(btrim(p_email)) $$;

-- A practical address check (what sign-up forms accept): one @, a dot-atom
-- local part of at most 64 characters, a domain of letter/digit/hyphen labels
-- with a top-level label of 2+ letters, 254 characters at most.
create or replace function private.email_is_valid(p_email text) returns boolean
  language sql immutable parallel safe
as $$
  select p_email is not null and length(p_email) <= 254
     and p_email ~ '^[a-z0-9!#$%&''*+/=?^_`{|}~-]+(\.[a-z0-9!#$%&''*+/=?^_`{|}~-]+)*@([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,63}$'
     and length(split_part(p_email, '@', 1)) <= 64
$$;

-- Replaces a subscriber's contacts with the given list (nothing changes when one
-- address is invalid). Addresses kept keep their state: an unsubscribed or
-- bouncing address stays so.
create or replace function admin.set_alert_contacts(subscriber uuid, emails text[])
  returns setof admin.alert_contacts
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_emails text[];
  v_bad text;
begin
  if not exists (select 1 from admin.subscribers s where s.id = subscriber) then
    raise exception 'unknown subscriber %', subscriber using errcode = 'P0002';
  end if;
  select e into v_bad from unnest(coalesce(emails, '{}')) e
   where not private.email_is_valid(private.email_normalise(e)) limit 1;
  if found then
    raise exception 'invalid e-mail address "%"', v_bad using errcode = '22023';
  end if;
  select coalesce(array_agg(distinct private.email_normalise(e)), '{}') into v_emails
    from unnest(coalesce(emails, '{}')) e;
  if cardinality(v_emails) > 5 then
    raise exception 'at most 5 alert contacts per subscriber, got %', cardinality(v_emails) using errcode = '22023';
  end if;
  delete from admin.alert_contacts c where c.subscriber_id = subscriber and c.email <> all (v_emails);
  insert into admin.alert_contacts (subscriber_id, email)
  select subscriber, e from unnest(v_emails) e
  on conflict do nothing;
  return query select c.* from admin.alert_contacts c where c.subscriber_id = subscriber order by c.email;
end $$;
revoke all on function admin.set_alert_contacts(uuid, text[]) from public;

-- A bouncing contact becomes active again (an operator checked the address).
create or replace function admin.clear_contact_bounce(subscriber uuid, email text)
  returns admin.alert_contacts
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v admin.alert_contacts;
begin
  select c.* into v from admin.alert_contacts c
   where c.subscriber_id = subscriber and c.email = private.email_normalise(clear_contact_bounce.email);
  if not found then
    raise exception 'no alert contact % for subscriber %', email, subscriber using errcode = 'P0002';
  end if;
  if v.state = 'unsubscribed' then
    raise exception 'contact % unsubscribed itself; only set it again if the recipient asked', v.email
      using errcode = '22023';
  end if;
  update admin.alert_contacts c set state = 'active', state_reason = null, state_changed_at = now()
   where c.subscriber_id = v.subscriber_id and c.email = v.email and c.state = 'bouncing'
  returning c.* into v;
  if not found then  -- already active
    select c.* into v from admin.alert_contacts c
     where c.subscriber_id = subscriber and c.email = private.email_normalise(clear_contact_bounce.email);
  end if;
  return v;
end $$;
revoke all on function admin.clear_contact_bounce(uuid, text) from public;

-- Operator GraphQL: both are mutations.
do $do$
begin
  grant execute on function admin.set_alert_contacts(uuid, text[]), admin.clear_contact_bounce(uuid, text) to bar_operator;
  comment on function admin.set_alert_contacts(uuid, text[]) is
    'Sets the subscriber''s alert contacts (at most 5 e-mail addresses; an invalid one changes nothing). Addresses kept keep their state.';
  comment on function admin.clear_contact_bounce(uuid, text) is
    'Makes a bouncing alert contact active again.';
end
$do$;

-- The one-click unsubscribe (the token was verified by the server): the address
-- gets no more alerts of that subscriber. Returns the contact's state, or null
-- when the address is no longer a contact (nothing to stop).
create or replace function api.unsubscribe_alert_contact(p_subscriber_id uuid, p_email text) returns text
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_state text;
begin
  update admin.alert_contacts c
     set state = 'unsubscribed', state_reason = 'one-click unsubscribe', state_changed_at = now()
   where c.subscriber_id = p_subscriber_id and c.email = p_email and c.state <> 'unsubscribed';
  select c.state into v_state from admin.alert_contacts c
   where c.subscriber_id = p_subscriber_id and c.email = p_email;
  return v_state;
end $$;
revoke all on function api.unsubscribe_alert_contact(uuid, text) from public;
grant execute on function api.unsubscribe_alert_contact(uuid, text) to bar_partner;

-------------------------------------------------------------------------------
-- Queueing, in the alert's transaction
-------------------------------------------------------------------------------

create or replace function private.email_on_usage_alert() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  v_email text;
  v_id uuid;
  v_send_after timestamptz;
  v_previous timestamptz;
begin
  for v_email in
    select c.email from admin.alert_contacts c
     where c.subscriber_id = new.subscriber_id and c.state = 'active' order by c.email
  loop
    v_id := null;
    v_send_after := new.created_at;
    if new.bucket = 'minute' then
      perform pg_advisory_xact_lock(hashtextextended('email:' || new.api_key_id || ':' || new.level || ':' || v_email, 0));
      update admin.email_deliveries d
         set alert_count = d.alert_count + 1, last_alert_id = new.id,
             last_alert_at = greatest(d.last_alert_at, new.created_at)
       where d.api_key_id = new.api_key_id and d.level = new.level and d.email = v_email
         and d.bucket = 'minute' and d.sealed_at is null
      returning d.id into v_id;
      if v_id is not null then
        continue;  -- folded into the e-mail not sent yet
      end if;
      select max(d.send_after) into v_previous from admin.email_deliveries d
       where d.api_key_id = new.api_key_id and d.level = new.level and d.email = v_email and d.bucket = 'minute';
      v_send_after := greatest(new.created_at, v_previous + interval '1 hour');
    end if;
    insert into admin.email_deliveries as d (subscriber_id, api_key_id, email, bucket, level, first_alert_id,
                                             last_alert_id, first_alert_at, last_alert_at, send_after)
    values (new.subscriber_id, new.api_key_id, v_email, new.bucket, new.level, new.id, new.id,
            new.created_at, new.created_at, v_send_after)
    on conflict (first_alert_id, email) do nothing
    returning d.id into v_id;
    if v_id is not null then
      -- queue 'email': one e-mail attempt at a time across the instances, so a mail server that
      -- stalls holds one of the runner's slots, never the webhook deliveries' or maintenance's.
      perform graphile_worker.add_job('email_send', json_build_object('delivery_id', v_id), queue_name => 'email',
                                      run_at => v_send_after, job_key => 'email:' || v_id, max_attempts => 14);
    end if;
  end loop;
  return null;
end $$;
revoke all on function private.email_on_usage_alert() from public;

create or replace trigger email_usage_alert
  after insert on admin.usage_alerts
  for each row execute function private.email_on_usage_alert();

-------------------------------------------------------------------------------
-- The sending task (server/email/task.ts, as the owner)
-------------------------------------------------------------------------------

-- Seals a pending e-mail (its content is fixed from now on: later minute alerts
-- open a new one) and returns what the e-mail says, or nothing when it is no
-- longer pending.
create or replace function private.email_claim(p_id uuid)
  returns table (id uuid, email text, contact_state text, subscriber_id uuid, subscriber_name text,
                 key_prefix text, bucket text, level text, window_start timestamptz, used integer,
                 "limit" integer, alert_count integer, first_alert_at timestamptz, last_alert_at timestamptz,
                 send_after timestamptz, attempts integer)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
  update admin.email_deliveries d set sealed_at = coalesce(d.sealed_at, now())
   where d.id = p_id and d.status = 'pending';
  return query
  select d.id, d.email, c.state, d.subscriber_id, s.name, k.key_prefix, d.bucket, d.level, a.window_start,
         a.used, a."limit", d.alert_count, d.first_alert_at, d.last_alert_at, d.send_after, d.attempts
    from admin.email_deliveries d
    join admin.subscribers s on s.id = d.subscriber_id
    join admin.api_keys k on k.id = d.api_key_id
    join admin.usage_alerts a on a.id = d.last_alert_id
    left join admin.alert_contacts c on c.subscriber_id = d.subscriber_id and c.email = d.email
   where d.id = p_id and d.status = 'pending';
end $$;
revoke all on function private.email_claim(uuid) from public;

-- Records one attempt. p_outcome: 'sent'; 'retry' (temporary failure);
-- 'bounce' (permanent 5xx: the contact is marked bouncing, the e-mail failed);
-- 'skip' (the contact is no longer active: failed, nothing sent);
-- 'failed' (out of retries). Returns the delivery's status.
create or replace function private.email_record_attempt(p_id uuid, p_outcome text, p_response_code integer,
                                                        p_error text)
  returns text
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
declare
  v admin.email_deliveries;
begin
  update admin.email_deliveries d
     set attempts = d.attempts + case when p_outcome = 'skip' then 0 else 1 end,
         last_attempt_at = case when p_outcome = 'skip' then d.last_attempt_at else now() end,
         last_response_code = p_response_code, last_result = p_error,
         status = case p_outcome when 'sent' then 'sent' when 'retry' then 'pending' else 'failed' end,
         sent_at = case when p_outcome = 'sent' then now() end
   where d.id = p_id and d.status = 'pending'
  returning d.* into v;
  if not found then
    return null;
  end if;
  if p_outcome = 'bounce' then
    update admin.alert_contacts c set state = 'bouncing', state_reason = p_error, state_changed_at = now()
     where c.subscriber_id = v.subscriber_id and c.email = v.email and c.state = 'active';
  end if;
  return v.status;
end $$;
revoke all on function private.email_record_attempt(uuid, text, integer, text) from public;
