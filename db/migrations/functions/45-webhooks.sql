-- Webhook events (decisions.md "Webhooks"): written by triggers in the same
-- transaction as their cause and queued for graphile-worker (task
-- webhook_deliver, server/webhooks/task.ts). Tables: committed migration 000007.
--
-- max_attempts 14: graphile-worker waits exp(min(attempts, 10)) seconds after
-- each failure, so 13 waits span e^1 + ... + e^10 + 3 * e^10 s = 100,920 s
-- (28 h): retries cover the decided 24 hours.

create or replace function private.enqueue_webhook(subscriber uuid, event_type text, data jsonb)
  returns uuid
  language plpgsql volatile security definer
  set search_path = pg_catalog, pg_temp
as $$
declare
  endpoint_url text;
  event_id uuid;
begin
  select e.url into endpoint_url from admin.webhook_endpoints e where e.subscriber_id = subscriber;
  if endpoint_url is null then
    return null;  -- no endpoint: nothing is written (the request path pays one index probe)
  end if;
  insert into admin.webhook_deliveries (subscriber_id, type, payload, url)
  values (subscriber, event_type, data, endpoint_url)
  returning id into event_id;
  perform graphile_worker.add_job('webhook_deliver', json_build_object('event_id', event_id),
                                  max_attempts => 14);
  return event_id;
end $$;
revoke all on function private.enqueue_webhook(uuid, text, jsonb) from public;

create or replace function private.webhook_on_usage_alert() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform private.enqueue_webhook(new.subscriber_id, 'usage.' || new.level,
    jsonb_build_object('subscriber_id', new.subscriber_id, 'key_id', new.api_key_id, 'bucket', new.bucket,
                       'window_start', new.window_start, 'level', new.level, 'used', new.used,
                       'limit', new."limit"));
  return null;
end $$;

create or replace trigger webhook_usage_alert
  after insert on admin.usage_alerts
  for each row execute function private.webhook_on_usage_alert();

create or replace function private.webhook_on_key_revoked() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform private.enqueue_webhook(new.subscriber_id, 'key.revoked',
    jsonb_build_object('subscriber_id', new.subscriber_id, 'key_id', new.id, 'key_prefix', new.key_prefix,
                       'revoked_at', new.revoked_at));
  return null;
end $$;

create or replace trigger webhook_key_revoked
  after update of status on admin.api_keys
  for each row when (new.status = 'revoked' and old.status is distinct from 'revoked')
  execute function private.webhook_on_key_revoked();

create or replace function private.webhook_on_subscriber_status() returns trigger
  language plpgsql security definer
  set search_path = pg_catalog, pg_temp
as $$
begin
  perform private.enqueue_webhook(new.id,
    case new.status when 'suspended' then 'subscriber.suspended' else 'subscriber.activated' end,
    jsonb_build_object('subscriber_id', new.id, 'status', new.status));
  return null;
end $$;

create or replace trigger webhook_subscriber_status
  after update of status on admin.subscribers
  for each row when (new.status is distinct from old.status)
  execute function private.webhook_on_subscriber_status();

-- Operators' CLI (server/webhooks/cli.ts): the secret is generated and
-- encrypted in Node; these are not granted to bar_operator.
drop function if exists admin.set_webhook_endpoint(uuid, text, text); -- was: returns admin.webhook_endpoints
create or replace function admin.set_webhook_endpoint(subscriber uuid, endpoint_url text, secret_encrypted text)
  returns table (subscriber_id uuid, url text)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
  if not exists (select 1 from admin.subscribers s where s.id = subscriber) then
    raise exception 'unknown subscriber %', subscriber using errcode = 'P0002';
  end if;
  insert into admin.webhook_endpoints as e (subscriber_id, url, secret_encrypted)
  values (subscriber, endpoint_url, set_webhook_endpoint.secret_encrypted)
  on conflict (subscriber_id) do update
     set url = excluded.url, secret_encrypted = excluded.secret_encrypted, updated_at = now(),
         previous_secret_encrypted = null, previous_secret_expires_at = null;
  return query select subscriber, endpoint_url;
end $$;
revoke all on function admin.set_webhook_endpoint(uuid, text, text) from public;

-- `webhook rotate-secret`: the new secret signs from now on; the one it replaces keeps signing
-- beside it (two signatures in webhook-signature) for p_overlap (24 h), then is forgotten.
create or replace function admin.rotate_webhook_secret(subscriber uuid, secret_encrypted text,
                                                       p_overlap interval default interval '24 hours')
  returns table (subscriber_id uuid, url text, previous_secret_valid_until timestamptz)
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
begin
  return query
  update admin.webhook_endpoints e
     set previous_secret_encrypted = e.secret_encrypted,
         previous_secret_expires_at = now() + p_overlap,
         secret_encrypted = rotate_webhook_secret.secret_encrypted,
         updated_at = now()
   where e.subscriber_id = subscriber
  returning e.subscriber_id, e.url, e.previous_secret_expires_at;
  if not found then
    raise exception 'subscriber % has no webhook endpoint', subscriber using errcode = 'P0002';
  end if;
end $$;
revoke all on function admin.rotate_webhook_secret(uuid, text, interval) from public;

-- The secrets a delivery is signed with now: the current one, and the replaced one while it is valid.
create or replace function admin.webhook_signing_secrets(subscriber uuid) returns text[]
  language plpgsql stable
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (select array_remove(array[e.secret_encrypted,
                                    case when e.previous_secret_expires_at > now() then e.previous_secret_encrypted end],
                              null)
            from admin.webhook_endpoints e where e.subscriber_id = subscriber);
end $$;
revoke all on function admin.webhook_signing_secrets(uuid) from public;

create or replace function admin.remove_webhook_endpoint(subscriber uuid) returns boolean
  language plpgsql volatile
  set search_path = pg_catalog, pg_temp
as $$
begin
  delete from admin.webhook_endpoints e where e.subscriber_id = subscriber;
  return found;
end $$;
revoke all on function admin.remove_webhook_endpoint(uuid) from public;

-- Operator GraphQL: endpoints without the secret, and the delivery log.
do $do$
begin
  grant select (subscriber_id, url, created_at, updated_at) on admin.webhook_endpoints to bar_operator;
  grant select on admin.webhook_deliveries to bar_operator;
  comment on table admin.webhook_endpoints is 'Webhook endpoint per subscriber (the secret is never readable).';
  comment on table admin.webhook_deliveries is 'Webhook events and their delivery: pending, delivered or failed (after 24 h of retries).';
end
$do$;
