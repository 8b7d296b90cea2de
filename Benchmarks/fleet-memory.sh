#!/usr/bin/env bash
# What a node keeps for each device of the fleet it does not run (docs/store.md, "Memory"): every node
# keeps every device and token, to answer a POST for any token, so at 100,000 devices on 7 nodes this is
# paid seven times for each device a node runs. One node starts on a database holding DEVICES devices of
# another node (alive: its lease is far in the future), each with one app token, and its resident memory
# once ready is compared with the same node on an empty database.
#
# Usage: POSTGRES_URL=postgres://user:pass@127.0.0.1:5432/db Benchmarks/fleet-memory.sh [devices, default 100000]
# (the role must be allowed to create databases: one is made for the run and dropped after it).
# Needs: psql (postgresql-client), curl.
set -euo pipefail
cd "$(dirname "$0")/.."
DEVICES=${1:-100000}
[ -n "${POSTGRES_URL:-}" ] || { echo "fleet-memory.sh: set POSTGRES_URL (sudo bash .ci/postgres.sh makes one)" >&2; exit 1; }
for tool in psql curl; do
  command -v $tool >/dev/null || { echo "missing $tool (apt-get install postgresql-client curl)"; exit 1; }
done
# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh

DB="pushgate_fleet_memory_$$"
create_database "$DB"
URL="${POSTGRES_URL%/*}/$DB"
trap 'kill $(jobs -p) 2>/dev/null || true; drop_database "$DB"; rm -rf "$WORK"' EXIT
ADMIN=26301
SETTINGS=(--set "data_dir=$WORK/data" --set store.backend=postgres --set "store.postgres.url=$URL"
  --set store.postgres.node_id=measured --set provider.tls.enabled=false --set provider.h2c.port=26298
  --set channels.tls.enabled=false --set channels.h2c.enabled=false --set devices.port=26299
  --set devices.tls.enabled=false --set "admin.port=$ADMIN" --set log.level=warning --set devices.reload_seconds=0)

# resident_kb DEVICES: a node started, ready, settled for two seconds, knowing DEVICES devices (its
# registry's gauge on /metrics); its VmRSS in kB; stopped.
resident_kb() {
  "$PG" serve "${SETTINGS[@]}" 2> "$WORK/serve.log" &
  local pid=$! known
  wait_ready $pid $ADMIN "$WORK/serve.log"
  sleep 2
  known=$(curl -sf "http://127.0.0.1:$ADMIN/metrics" | awk '/^pushgate_registered_devices/ { print $2 }')
  [ "${known%.*}" = "$1" ] || { show_log "$WORK/serve.log"; fail "the node knows ${known:-no} devices, not $1"; }
  awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"
  kill -TERM $pid
  wait $pid || fail "the node did not stop cleanly"
}

EMPTY=$(resident_kb 0)   # also makes the schema
psql -q -v ON_ERROR_STOP=1 "$URL" <<SQL
INSERT INTO nodes (node_id, renewed_at) VALUES ('other', 9000000000000)
  ON CONFLICT (node_id) DO UPDATE SET renewed_at = 9000000000000;
INSERT INTO devices (id, secret_hash, created_at, owner, last_seen_at)
  SELECT gen_random_uuid()::text, sha256(i::text::bytea), 1795000000000, 'other', 1795000000000
  FROM generate_series(1, $DEVICES) i;
INSERT INTO tokens (token, device_id, bundle_id)
  SELECT encode(sha256(id::bytea), 'hex'), id, 'com.example.scores' FROM devices;
SQL
FULL=$(resident_kb "$DEVICES")
need "resident memory, empty" "$EMPTY"; need "resident memory, $DEVICES devices" "$FULL"
PER=$(( (FULL - EMPTY) * 1024 / DEVICES ))
need "bytes a device" "$PER"
echo "Fleet memory — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'): one node, $DEVICES devices of another node in its database"
echo
echo "| devices (another node's) | resident, empty database | resident, with them | bytes a device |"
echo "|---|---|---|---|"
echo "| $DEVICES | $((EMPTY / 1024)) MB | $((FULL / 1024)) MB | $PER |"
