#!/usr/bin/env bash
# The test suite as a CI run DAYS days from now would see it: PostgreSQL and Node (the tests, jest's
# workers and every server they spawn) run with the real clock moved ahead by libfaketime, while
# TEST_CLOCK stays fixed as .ci/run fixes it. A test that mixes a fixed date with PostgreSQL's now() or
# Node's Date.now() (a subscription that ends on a fixed day, a partition of a fixed month that
# maintenance drops as too old) fails here before the calendar makes it fail in CI. Not covered: a
# fixed date written to Redis, which keeps real time here (see below; test/support/clock.ts).
#
#   scripts/suite-ahead.sh [DAYS] [jest arguments...]     (DAYS default 200; needs Debian's `faketime`)
#
# - PostgreSQL: a throwaway cluster of this machine's PostgreSQL 15, started under libfaketime on a free
#   port and removed at the end. Redis: TEST_REDIS_URL (default 127.0.0.1:6379) on real time, since
#   redis-server does not start under libfaketime; the redis-server and redis-cli that tests spawn are
#   started without it too.
# - Left out: the two tests of PostgreSQL's statement_timeout, which does not fire under libfaketime
#   (`set statement_timeout = 500; select pg_sleep(2)` completes).
set -euo pipefail
cd "$(dirname "$0")/.."

days=${1:-200}
[[ $days =~ ^[0-9]+$ ]] || { echo "usage: $0 [DAYS] [jest arguments...]" >&2; exit 2; }
shift $(($# > 0 ? 1 : 0))

lib=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
pgbin=${PGBIN:-/usr/lib/postgresql/15/bin}
[[ -f $lib ]] || { echo "libfaketime is missing: apt-get install -y faketime" >&2; exit 2; }
[[ -x $pgbin/initdb ]] || { echo "PostgreSQL's binaries are not in $pgbin (set PGBIN)" >&2; exit 2; }

work=$(mktemp -d)
bin=$work/bin
mkdir -p "$bin"
for tool in redis-server redis-cli; do
  real=$(command -v "$tool") || { echo "$tool is not on PATH" >&2; exit 2; }
  printf '#!/bin/sh\nunset LD_PRELOAD FAKETIME\nexec %s "$@"\n' "$real" >"$bin/$tool"
  chmod +x "$bin/$tool"
done

port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
as_owner=()
if [[ $(id -u) -eq 0 ]]; then
  chown postgres "$work"
  as_owner=(runuser -u postgres --)
fi
ahead=(env FAKETIME="+${days}d" LD_PRELOAD="$lib")
stop() {
  "${as_owner[@]}" "$pgbin/pg_ctl" -D "$work/pg" stop -m immediate >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap stop EXIT

"${as_owner[@]}" "${ahead[@]}" "$pgbin/initdb" -D "$work/pg" -A trust -U postgres >/dev/null
"${as_owner[@]}" "${ahead[@]}" "$pgbin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
  -o "-p $port -k $work -c listen_addresses=127.0.0.1" start >/dev/null
echo "suite-ahead: PostgreSQL and Node at $("${ahead[@]}" date -u +%FT%TZ) (+$days days); TEST_CLOCK ${TEST_CLOCK:-default}"

PATH="$bin:$PATH" TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres" \
  TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}" \
  "${ahead[@]}" npx jest -t '^(?!.*(over the statement timeout|statement over the timeout)).*$' "$@"
