#!/usr/bin/env bash
# The README's start command with no environment: embedded PostgreSQL, demo
# data, in-process rate limits. It must come up, answer, and stop cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
PORT=$(free_port)
PG_PORT=$(free_port)
ADMIN_PORT=$(free_port)
DATA_DIR=".data/smoke-$$"
LOG=$(mktemp)
OUTBOX="$DATA_DIR-outbox"
trap 'rm -rf "$DATA_DIR" "$DATA_DIR.json" "$OUTBOX" "$LOG"' EXIT

echo "smoke: npm start on port $PORT (embedded PostgreSQL on $PG_PORT)"
export EMBEDDED_PG_PORT="$PG_PORT" EMBEDDED_PG_DIR="$DATA_DIR" EMAIL_OUTBOX_DIR="$OUTBOX"
env -u DATABASE_URL -u REDIS_URL PORT="$PORT" ADMIN_PORT="$ADMIN_PORT" setsid npm start >"$LOG" 2>&1 &
PID=$!

status=""
for _ in $(seq 1 300); do
  status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/api/v1/partner/test_endpoint" || true)
  [ "$status" != "000" ] && break
  kill -0 "$PID" 2>/dev/null || { cat "$LOG"; echo "smoke: npm start exited early" >&2; exit 1; }
  sleep 1
done
echo "smoke: GET test_endpoint -> $status"
[ "$status" = 401 ] || { cat "$LOG"; echo "smoke: expected 401 without a key" >&2; kill -TERM -"$PID" || true; exit 1; }

# The README's way to a key: the admin CLI shares the running embedded server.
KEY=$(env -u DATABASE_URL npm run --silent admin -- key issue --new-subscriber "Smoke test" | node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).api_key')
for path in test_endpoint "search?q=tavern" "bars?limit=5"; do
  status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/api/v1/partner/$path")
  echo "smoke: GET $path with a key -> $status"
  [ "$status" = 200 ] || { cat "$LOG"; echo "smoke: expected 200" >&2; kill -TERM -"$PID" || true; exit 1; }
done

# The README's open_now call: the demo has open bars at whatever hour this runs (daytime, early and
# around-the-clock venues), and so does the biggest city's busiest_bars.
open=$(curl -s -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/api/v1/partner/bars?open_now=true&limit=5" |
  node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).bars.length')
busiest=$(curl -s -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/api/v1/partner/bars_by_city/NY/New%20York%20City?per_page=1" |
  node -pe 'JSON.parse(require("fs").readFileSync(0, "utf8")).busiest_bars.length')
echo "smoke: GET bars?open_now=true at $(date -u +%H:%M) UTC -> $open bars; New York's busiest_bars -> $busiest"
[ "$open" -gt 0 ] && [ "$busiest" -gt 0 ] || { cat "$LOG"; echo "smoke: expected open bars at any hour" >&2; kill -TERM -"$PID" || true; exit 1; }

# The operator console and the partner usage page, with the libraries they load from the packages' files.
for url in "http://127.0.0.1:$ADMIN_PORT/console" "http://127.0.0.1:$ADMIN_PORT/console/vendor/preact-htm.js" \
  "http://127.0.0.1:$PORT/api/v1/partner/dashboard" "http://127.0.0.1:$PORT/api/v1/partner/dashboard/vendor/uplot.js"; do
  status=$(curl -s -o /dev/null -w '%{http_code}' "$url")
  echo "smoke: GET $url -> $status"
  [ "$status" = 200 ] || { cat "$LOG"; echo "smoke: expected 200" >&2; kill -TERM -"$PID" || true; exit 1; }
done

# The README's first GraphQL query (its role, bar_partner_graphql, comes with migration 000010).
body=$(curl -s -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d '{"query":"{ city(state: \"NY\", name: \"New York City\") { bars(first: 3) { totalCount nodes { name occupancy { status } events(first: 2) { nodes { title startAt } } } } } rateLimit { cost remaining resetAt } }"}' \
  "http://127.0.0.1:$PORT/api/v1/partner/graphql")
echo "smoke: POST graphql with a key -> ${body:0:60}"
case "$body" in
  '{"data":{"city":{"bars":{"totalCount":'*) ;;
  *) cat "$LOG"; echo "smoke: expected the README's GraphQL answer" >&2; kill -TERM -"$PID" || true; exit 1 ;;
esac

# The README's e-mail walk-through: a small plan exhausted, the alert e-mails in the outbox (no mail server).
admin() { env -u DATABASE_URL npm run --silent admin -- "$@"; }
admin plan create "tiny$$" --per-minute 5 --per-day unlimited --per-month unlimited >/dev/null
ISSUED=$(admin key issue --new-subscriber "Smoke e-mail" --plan "tiny$$")
TINY_KEY=$(node -pe 'JSON.parse(process.argv[1]).api_key' "$ISSUED")
SUBSCRIBER=$(node -pe 'JSON.parse(process.argv[1]).subscriber.id' "$ISSUED")
admin subscriber contacts set "$SUBSCRIBER" smoke@example.com >/dev/null
codes=""
for _ in 1 2 3 4 5 6; do
  codes="$codes $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TINY_KEY" "http://127.0.0.1:$PORT/api/v1/partner/test_endpoint")"
done
echo "smoke: a 5/minute plan, six requests ->$codes"
case "$codes" in *429*) ;; *) cat "$LOG"; echo "smoke: expected a 429" >&2; kill -TERM -"$PID" || true; exit 1 ;; esac
mails=0
for _ in $(seq 1 30); do
  # No outbox yet is 0 mails, not an error (grep exits 2 on a missing file; pipefail would stop here).
  mails=$( (grep -l '^Subject: \[Bar Data API\]' "$OUTBOX"/*.eml 2>/dev/null || true) | wc -l)
  [ "$mails" -gt 0 ] && break
  sleep 1
done
echo "smoke: alert e-mails in the outbox -> $mails"
[ "$mails" -gt 0 ] || { cat "$LOG"; echo "smoke: expected an alert e-mail in $OUTBOX" >&2; kill -TERM -"$PID" || true; exit 1; }
if grep -q -- "$TINY_KEY" "$OUTBOX"/*.eml; then echo "smoke: an e-mail contains the API key" >&2; kill -TERM -"$PID" || true; exit 1; fi

# Signal the server process alone (as an orchestrator would): it must stop its own PostgreSQL.
NODE_PID=$(pgrep -g "$PID" -f '^node .*dist/server/main.js' | head -1)
kill -TERM "$NODE_PID"
for _ in $(seq 1 30); do kill -0 "$PID" 2>/dev/null || break; sleep 1; done
if kill -0 "$PID" 2>/dev/null; then cat "$LOG"; echo "smoke: npm start did not stop on SIGTERM" >&2; kill -KILL -"$PID"; exit 1; fi
if pgrep -f -- "-D $PWD/$DATA_DIR" >/dev/null; then echo "smoke: orphan postgres left behind" >&2; pkill -f -- "-D $PWD/$DATA_DIR"; exit 1; fi
echo "smoke: started, answered and stopped cleanly"
