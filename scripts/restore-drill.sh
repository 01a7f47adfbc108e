#!/usr/bin/env bash
# Restore drill (docs/OPERATIONS.md "Backup and restore"): dumps a live database and restores it
# into a new one, ready for a server started with DATABASE_URL=TARGET_URL.
#
#   scripts/restore-drill.sh SOURCE_URL TARGET_URL [DUMP_FILE]
#
#   SOURCE_URL  the live database (the instances' DATABASE_URL); they keep serving meanwhile
#   TARGET_URL  a database that does not exist yet (created here, on the server the URL names,
#               by the user it names, who then owns everything restored: use the user the new
#               instances will connect as)
#   DUMP_FILE   the dump (pg_dump custom format); default ./partner-bar-api-<UTC time>.dump
#
# PG_BIN: directory of pg_dump, pg_restore and psql (default /usr/lib/postgresql/15/bin when it
# exists, else PATH). Client and servers: PostgreSQL 15 or later.
set -euo pipefail

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 SOURCE_URL TARGET_URL [DUMP_FILE]" >&2
  exit 2
fi
source_url=$1
target_url=$2
dump=${3:-./partner-bar-api-$(date -u +%Y%m%dT%H%M%SZ).dump}

bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
[[ -x "$bin/pg_dump" ]] || bin=$(dirname "$(command -v pg_dump)")
export PGAPPNAME=restore-drill

# The target database's name, and the same server's maintenance database.
target_db=$(sed -E 's#^[a-z]+://[^/]*/([^?]+).*#\1#' <<<"$target_url")
maintenance_url=$(sed -E 's#^([a-z]+://[^/]*/)[^?]+#\1postgres#' <<<"$target_url")
if [[ ! "$target_db" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
  echo "error: TARGET_URL must end in a plain database name (letters, digits, _), got \"$target_db\"" >&2
  exit 2
fi

started=$(date +%s.%N)
# 1. One consistent snapshot (REPEATABLE READ); writers are not blocked (ACCESS SHARE locks only).
"$bin/pg_dump" --format=custom --no-sync --file="$dump" "$source_url"
dumped=$(date +%s.%N)

# 2. The new database, and the cluster-wide roles the grants name (created by the migrations on
#    the source's server; a new server has none of them).
"$bin/psql" -X -q -v ON_ERROR_STOP=1 "$maintenance_url" <<SQL
create database "$target_db";
do \$\$
declare r text;
begin
  foreach r in array array['bar_partner', 'bar_operator', 'bar_partner_graphql'] loop
    if not exists (select 1 from pg_roles where rolname = r) then
      execute format('create role %I nologin', r);
    end if;
  end loop;
end \$\$;
SQL

# 3. Everything, in one transaction, owned by the restoring user.
"$bin/pg_restore" --exit-on-error --single-transaction --no-owner --dbname="$target_url" "$dump"

# 4. Jobs the source's runners had locked at the dump would stay locked for 4 hours: release them
#    (their attempts are retried; e-mails and webhooks carry the same id on every attempt).
"$bin/psql" -X -q -v ON_ERROR_STOP=1 "$target_url" <<'SQL'
select graphile_worker.force_unlock_workers(array(
  select distinct locked_by from graphile_worker._private_jobs where locked_by is not null
  union select distinct locked_by from graphile_worker._private_job_queues where locked_by is not null));
SQL
restored=$(date +%s.%N)

# 5. What the restored database holds.
"$bin/psql" -X -A -t -v ON_ERROR_STOP=1 "$target_url" <<'SQL'
select 'subscribers=' || count(*) from admin.subscribers;
select 'api_keys=' || count(*) from admin.api_keys;
select 'plans=' || count(*) from admin.plans;
select 'alert_contacts=' || count(*) from admin.alert_contacts;
select 'webhook_endpoints=' || count(*) from admin.webhook_endpoints;
select 'usage_requests=' || coalesce(sum(requests), 0) from admin.daily_usage;
select 'bars=' || count(*) from private.bars;
SQL
awk -v a="$started" -v b="$dumped" -v c="$restored" -v f="$dump" \
  'BEGIN { printf "dump=%s\ndump_seconds=%.2f\nrestore_seconds=%.2f\n", f, b - a, c - b }'
echo "next: start the server with DATABASE_URL=<TARGET_URL> and the same WEBHOOK_SECRET_KEY and EMAIL_LINK_KEY" >&2
