-- Deprecated calls per UTC day, key and deprecation (decisions.md v1.3 "Deprecations and the
-- changelog"): written in batches by the partner servers (server/usage/deprecated-calls.ts through
-- api.record_deprecated_calls), read by GET usage (api.deprecated_calls) and by operators (GraphQL).
-- Idempotent: re-run on every migrate of current/.
create table if not exists admin.deprecated_calls (
  day           date not null,                          -- UTC day
  subscriber_id uuid not null references admin.subscribers,
  api_key_id    uuid not null references admin.api_keys,
  what          text not null,                          -- e.g. 'GET /bars parameter radius'
  calls         bigint not null check (calls >= 0),
  last_call_at  timestamptz not null,
  primary key (day, api_key_id, what)
);
create index if not exists deprecated_calls_subscriber on admin.deprecated_calls (subscriber_id, day);
create index if not exists deprecated_calls_key on admin.deprecated_calls (api_key_id);

revoke all on admin.deprecated_calls from public, bar_operator;
grant select on admin.deprecated_calls to bar_operator;
comment on table admin.deprecated_calls is
  'Calls of deprecated endpoints, parameters and fields per UTC day, key and deprecation (docs/COMPATIBILITY.md).';
