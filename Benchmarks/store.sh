#!/usr/bin/env bash
# The store's cost: accepted pushes/s through the provider API with each store backend, side by side in
# one run (as in provider-api.sh: gateway on core 0 with one event loop, h2load on core 1), and the
# time a restart takes with 1,000,000 held notifications in SQLite.
#
# Usage: Benchmarks/store.sh [seconds per run, default 8] [held notifications, default 1000000]
# PostgreSQL is measured too when POSTGRES_URL names a database whose user may create databases
# (`sudo bash .ci/postgres.sh` makes postgres://pushgate:pushgate@127.0.0.1:5432/pushgate_test); the
# server shares the machine's two cores with the gateway and h2load.
# Needs: nghttp2-client (h2load), taskset, python3, curl; psql for PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-8}
HELD=${2:-1000000}
WARMUP=${WARMUP:-2}
TOKENS=1000
PORT=22198
ADMIN=22201
SHAPE="-c 16 -m 32"
# More settings for the durable runs, e.g. EXTRA="--set event_loops=2".
read -r -a EXTRA <<< "${EXTRA:-}"

for tool in h2load taskset python3 curl; do
  command -v $tool >/dev/null || { echo "missing $tool (apt-get install nghttp2-client util-linux python3 curl)"; exit 1; }
done

# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh

COMMON=(--set event_loops=1 --set provider.tls.enabled=false --set provider.h2c.port=$PORT
  --set provider.rate.device_token.per_second=0 --set provider.rate.team.per_second=0 --set log.level=warning
  --set devices.reload_seconds=0 --set devices.tls.enabled=false --set admin.port=$ADMIN)
printf '{"aps":{"content-available":1},"job":{"id":"4f6a2b1c","kind":"refresh","since":1800000000}}' > "$WORK/body.json"

# shellcheck source=Benchmarks/h2load-run.sh
source Benchmarks/h2load-run.sh


measure() { # name, then settings -> table row
  local name=$1; shift
  local data="$WORK/$name"
  mkdir -p "$data"
  local settings=(--set "data_dir=$data" "${COMMON[@]}" "$@")
  (cd "$data" && "$PG" keys generate --team-id TEAM123456 --key-id KEY1234567 --topic com.example.app "${settings[@]}" >/dev/null)
  "$PG" tokens register --topic com.example.app --count $TOKENS "${settings[@]}" > "$data/tokens.txt"
  JWT=$("$PG" keys token --key "$data/AuthKey_KEY1234567.p8" --team-id TEAM123456 --key-id KEY1234567)
  HEADERS=(-H "authorization: bearer $JWT" -H "apns-topic: com.example.app" -H "apns-push-type: background" -H "apns-priority: 5")
  sed "s#^#http://127.0.0.1:$PORT/3/device/#" "$data/tokens.txt" > "$data/uris.txt"
  taskset -c 0 "$PG" serve "${settings[@]}" 2> "$data/pushgate.log" &
  local pid=$!
  wait_ready $pid $ADMIN "$data/pushgate.log"
  local result
  result=$(run "$name" "$data/uris.txt" "$SHAPE") || { show_log "$data/pushgate.log"; fail "$name: no figure"; }
  read -r rps p50 p99 ok n <<< "$result"
  local counters
  counters=$(curl -sf "http://127.0.0.1:$ADMIN/v1/counters" | python3 -c '
import json, sys
c = json.load(sys.stdin).get("store", {})
print(c.get("commits", "?"), c.get("changes", "?"), c.get("largestBatch", "?"))' 2>/dev/null || echo "? ? ?")
  kill -TERM $pid; wait $pid || true
  read -r commits changes largest <<< "$counters"
  echo "| $name | $rps | $p50 | $p99 | $ok / $n | $commits | $largest |"
  echo "$rps" > "$WORK/$name.rps"
}

echo
echo "Store backends — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, $(uname -m)"
echo "POST /3/device/<one of $TOKENS scripted tokens>, h2load $SHAPE, ${DURATION}s after ${WARMUP}s warm-up; gateway on core 0, h2load on core 1"
echo "Every 200 is answered after the notification is committed (except memory)."
echo
echo "| store | requests/s | p50 ms | p99 ms | 200s / answered (latency pass) | commits | largest batch |"
echo "|---|---|---|---|---|---|---|"
measure memory --set store.backend=memory
measure sqlite-full --set store.backend=sqlite --set store.sqlite.synchronous=full "${EXTRA[@]}"
measure sqlite-normal --set store.backend=sqlite --set store.sqlite.synchronous=normal "${EXTRA[@]}"
if [ -n "${POSTGRES_URL:-}" ]; then
  bench_db="pushgate_bench_$$"
  create_database "$bench_db"
  trap 'kill $(jobs -p) 2>/dev/null || true; drop_database "$bench_db"; rm -rf "$WORK"' EXIT
  measure postgres --set store.backend=postgres --set "store.postgres.url=${POSTGRES_URL%/*}/$bench_db" "${EXTRA[@]}"
fi
python3 - "$WORK" <<'PY'
import os, sys
rps = {n: float(open(os.path.join(sys.argv[1], n + ".rps")).read())
       for n in ("memory", "sqlite-full", "sqlite-normal", "postgres") if os.path.exists(os.path.join(sys.argv[1], n + ".rps"))}
print()
print("; ".join(f"{n} / memory: {v / rps['memory']:.2f}" for n, v in rps.items() if n != "memory"))
PY

# Recovery: $HELD pending notifications for 10,000 devices (100 each, the per-app limit) written into
# the database of a gateway that ran once, then the time from starting it to /ready.
data="$WORK/recovery"
mkdir -p "$data"
settings=(--set "data_dir=$data" "${COMMON[@]}")
"$PG" serve "${settings[@]}" 2> "$data/first.log" &
pid=$!
wait_ready $pid $ADMIN "$data/first.log"
kill -TERM $pid; wait $pid || true
python3 - "$data/pushgate.sqlite" "$HELD" <<'PY'
import sqlite3, sys, uuid, time
db = sqlite3.connect(sys.argv[1]); held = int(sys.argv[2]); devices = 10000
now = int(time.time() * 1000)
db.executemany("INSERT INTO devices (id, secret_hash, created_at) VALUES (?, ?, ?)",
               ((f"dev-{d:05d}", b"\0" * 32, now) for d in range(devices)))
db.executemany("INSERT INTO tokens (token, device_id, bundle_id, unregistered_at) VALUES (?, ?, ?, NULL)",
               ((f"{d:064x}", f"dev-{d:05d}", "com.example.app") for d in range(devices)))
payload = b'{"aps":{"content-available":1},"job":{"id":"4f6a2b1c","kind":"refresh","since":1800000000}}'
def rows():
    for n in range(held):
        d = n % devices
        # apns-id and token as their bytes, as the gateway writes them (schema version 9)
        yield ("TEAM123456", uuid.UUID(int=n + 1).bytes, bytes.fromhex(f"{d:064x}"), "com.example.app", "com.example.app",
               "background", 5, None, None, "silent", payload, now, now + 86400000, f"dev-{d:05d}", 0,
               "held_offline")
db.executemany("""INSERT INTO notifications (team_id, apns_id, device_token, topic, bundle_id, push_type,
  priority, expiration, collapse_id, class, payload, received_at, expires_at, device_id, state, rule)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", rows())
db.commit()
PY
start=$(date +%s.%N)
"$PG" serve "${settings[@]}" 2> "$data/second.log" &
pid=$!
wait_ready $pid $ADMIN "$data/second.log"
end=$(date +%s.%N)
# Resident memory, and how much of it is heap (anonymous) rather than the database file mapped in.
RSS=$(awk '/VmRSS/ {r=$2} /RssAnon/ {a=$2} /RssFile/ {f=$2} END {print r " kB: " a " kB heap, " f " kB file"}' /proc/$pid/status 2>/dev/null || echo '?')
restored=$(curl -sf "http://127.0.0.1:$ADMIN/v1/counters" | python3 -c 'import json, sys; print(json.load(sys.stdin)["policy"]["heldNow"])') \
  || fail "cannot read the restarted gateway's counters"
[ "$restored" -eq "$HELD" ] || fail "$restored of $HELD held notifications restored"
kill -TERM $pid; wait $pid || true
python3 -c "print(f'\nRecovery: {$HELD:,} held notifications in SQLite, start to /ready: {$end - $start:.2f} s ({$restored:,} held after restart; RSS ${RSS})')"
