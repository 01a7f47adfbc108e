-- The partner GraphQL endpoint's own role (decisions.md v1.2 "GraphQL endpoint (beta)").
--   bar_partner_graphql  may only EXECUTE the api functions the GraphQL schema serves
--                        (granted in functions/60-graphql.sql, after those functions exist):
--                        no credentials, usage, alerts, webhooks or admin functions.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'bar_partner_graphql') then
    create role bar_partner_graphql nologin;
  end if;
exception when duplicate_object or unique_violation then null; -- a concurrent migration created it
end $$;

-- The migrating user must be able to SET ROLE to it (a superuser needs nothing).
do $$
begin
  execute format('grant bar_partner_graphql to %I', current_user);
exception when others then null;
end $$;

grant usage on schema api to bar_partner_graphql;
