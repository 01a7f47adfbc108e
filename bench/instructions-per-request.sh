#!/usr/bin/env bash
# CPU instructions the full server executes per request (valgrind's callgrind; `GET bars/:id` unless
# REQUEST_PATH names another partner path, e.g. 'bars?latitude=40.7&longitude=-74&radius=5&limit=50'), for comparing
# two checkouts old against new where timing on a shared 2-core machine is too noisy to resolve a few
# per cent. Counts are the same whatever else the machine is doing (docs/performance/2026-11-25-v1.3.md).
#
#   bench/instructions-per-request.sh <checkout> <database url> [requests] [label]
#
# The checkout must be built (`npm run build`) and its database seeded by its own generator. The server
# runs under callgrind with instrumentation off; after start-up and a warm-up of `requests` answers,
# instrumentation is switched on for `requests` more, sent by autocannon on 4 connections. Printed: the
# instructions per request of the server process, and Redis's own microseconds per request (every
# command, INFO commandstats; wall time: noisier). Needs valgrind, a Redis at REDIS_URL (default
# redis://127.0.0.1:6379), psql and curl.
#
# ANSWER=429: the key's plan allows one request a minute, so every measured answer is a 429 the
# process gives from its memory of the refusal (the 429 flood of issue 34: no Redis, no PostgreSQL).
set -euo pipefail
# valgrind and callgrind_control find each other through files named after LOGNAME and HOST as the
# server process sees them (HOST is also the server's listen address)
export USER=${USER:-$(id -un)} LOGNAME=${LOGNAME:-$(id -un)}
control() { HOST=127.0.0.1 callgrind_control "$@" >/dev/null; }
checkout=$(cd "$1" && pwd)
database_url=$2
requests=${3:-2000}
label=${4:-$(git -C "$checkout" rev-parse --short HEAD)}
redis_url=${REDIS_URL:-redis://127.0.0.1:6379}
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d /tmp/instructions.XXXXXX)
port=$((20000 + RANDOM % 10000))
admin_port=$((port + 1))

answer=${ANSWER:-200}
case $answer in
  200) plan=bench per_minute=2147483647 ;;
  429) plan=bench-refused per_minute=1 ;;
  *) echo "ANSWER must be 200 or 429" >&2; exit 2 ;;
esac
key=$(psql -X -At -v plan="$plan" -v per_minute="$per_minute" "$database_url" <<'SQL' | tail -1
select admin.create_plan(:'plan', :per_minute, 2147483647, 2147483647)
 where not exists (select from admin.plans where name = :'plan') \g /dev/null
select (admin.issue_key((select id from admin.create_subscriber('instructions ' || now()::text, :'plan')))).api_key;
SQL
)

# the checkout's own V8 flags (server/node-flags.ts), as its `npm start` runs it; none before it had that file
node_flags=$(node -e 'try { process.stdout.write(require(process.argv[1]).SERVER_NODE_FLAGS.join(" ")) } catch {}' \
  "$checkout/dist/server/node-flags.js")

env NODE_ENV=production LOG_LEVEL=info DATABASE_URL="$database_url" REDIS_URL="$redis_url" \
  PORT=$port HOST=127.0.0.1 ADMIN_PORT=$admin_port SEED_DEMO_DATA=false PG_POOL_MAX=10 \
  REQUEST_LOG=${REQUEST_LOG:-errors} REDIS_BUDGET_MS=60000 REDIS_PROBE_MS=1000 \
  WEBHOOK_SECRET_KEY="$(head -c 32 /dev/urandom | base64)" EMAIL_LINK_KEY="$(head -c 32 /dev/urandom | base64)" \
  SMTP_URL=smtp://127.0.0.1:2525 MAIL_FROM='Bench <bench@example.com>' PUBLIC_BASE_URL=https://bench.example.com \
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/callgrind.out" \
  node $node_flags "$checkout/dist/server/main.js" >"$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT

url="http://127.0.0.1:$port/api/v1/partner/${REQUEST_PATH:-bars/${BAR_ID:-12345}}"
for _ in $(seq 1 900); do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" "$url" || true)
  [ "$code" = 200 ] && break
  [ "$answer" = 429 ] && [ "$code" = 404 ] && break # (a 429 is the same for any bar)
  kill -0 $server 2>/dev/null || { tail -20 "$out/server.log"; exit 1; }
  sleep 1
done

load() { "$here/node_modules/.bin/autocannon" -c 4 -a "$requests" -H "Authorization=Bearer $key" "$url" >"$out/$1.txt" 2>&1; }
load warmup
redis-cli -u "$redis_url" config resetstat >/dev/null
control -i on $server
load measured
control -i off $server
control -d $server
for _ in $(seq 1 600); do grep -qs '^totals:' "$out/callgrind.out.1" && break; sleep 0.5; done
non2xx=$(grep -o '[0-9]* non 2xx responses' "$out/measured.txt" | cut -d' ' -f1 || true)
if [ "$answer" = 200 ]; then
  [ -z "$non2xx" ] || { echo "$non2xx answers were not 200"; exit 1; }
else # a minute's one admitted request may fall among them
  [ "${non2xx:-0}" -ge $((requests - 2)) ] || { echo "only ${non2xx:-0} of $requests answers were 429s"; exit 1; }
fi
total=$(awk '/^totals:/ {print $2; exit}' "$out/callgrind.out.1") # what was collected (the dump)
# Redis's own time over every command it ran meanwhile (the rate-limit script, the usage pushes and
# flushes): INFO commandstats, wall time, so noisier than the instruction count
redis_us=$(redis-cli -u "$redis_url" info commandstats | tr -d '\r' |
  sed -nE 's/^cmdstat_[^:]+:calls=[0-9]+,usec=([0-9]+),.*/\1/p' | awk '{s += $1} END {print s + 0}')
printf '%s\t%s requests (%s)\t%d instructions per request\tRedis %.1f us per request\n' \
  "$label" "$requests" "$answer" $((total / requests)) "$(awk "BEGIN {print $redis_us / $requests}")"
