#!/bin/bash
# Streaming replica for the official postgres image: on first start (empty
# data directory) clone the primary with pg_basebackup -R (writes
# standby.signal and primary_conninfo), then hand over to the image's own
# entrypoint, which starts the server as a hot standby.
set -euo pipefail
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  until pg_isready -h "$PRIMARY_HOST" -p 5432 -U "$REPLICATION_USER"; do sleep 1; done
  export PGPASSWORD="$REPLICATION_PASSWORD"
  gosu postgres pg_basebackup -h "$PRIMARY_HOST" -p 5432 -U "$REPLICATION_USER" -D "$PGDATA" \
    -R -X stream -S replica1 -c fast
fi
exec docker-entrypoint.sh postgres -c hot_standby=on -c hot_standby_feedback=on
