#!/bin/bash
# Runs once, when the official image initialises an empty primary
# (/docker-entrypoint-initdb.d): a replication role and its pg_hba entry.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<SQL
create role ${REPLICATION_USER} with replication login password '${REPLICATION_PASSWORD}';
select pg_create_physical_replication_slot('replica1');
SQL
echo "host replication ${REPLICATION_USER} all scram-sha-256" >> "$PGDATA/pg_hba.conf"
