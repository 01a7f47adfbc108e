-- GET test_endpoint (repeatable file; see db/CONVENTIONS.md).
-- plpgsql, not SQL: a SECURITY DEFINER SQL function is planned on every call.

create or replace function api.test_endpoint(p_subscriber_id text, p_plan text, p_now timestamptz default now())
  returns json
  language plpgsql stable security definer
  set search_path = private, public, pg_temp
  set jit = off
as $$
begin
  return json_build_object(
    'message', 'API key is valid',
    'timestamp', private.iso_utc(p_now),
    'subscriber_id', p_subscriber_id,
    'plan', p_plan);
end
$$;

revoke all on function api.test_endpoint(text, text, timestamptz) from public;
grant execute on function api.test_endpoint(text, text, timestamptz) to bar_partner;
