#!/usr/bin/env bash
# Two gateway nodes on one PostgreSQL database: alerts POSTed to the node that owns the devices, and to
# the other node (stored there, routed to the owner by NOTIFY, delivered by the owner), side by side.
#
# Usage: POSTGRES_URL=postgres://pushgate:pushgate@127.0.0.1:5432/pushgate_test Benchmarks/nodes.sh [seconds per run, default 8] [devices, default 1000]
# (`sudo bash .ci/postgres.sh` makes that database; its user must be allowed to create databases.)
# Everything shares this machine's cores: PostgreSQL, both nodes, the simulated devices and h2load; the
# figures compare the two paths, they are not either path's ceiling.
# Needs: nghttp2-client (h2load), python3, curl, psql.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-8}
DEVICES=${2:-1000}
WARMUP=2
SHAPE="-c 16 -m 32"
: "${POSTGRES_URL:?set POSTGRES_URL (see the usage line)}"
for tool in h2load python3 curl psql; do
  command -v $tool >/dev/null || { echo "missing $tool (apt-get install nghttp2-client python3 curl postgresql-client)"; exit 1; }
done

# shellcheck source=Benchmarks/release.sh
source Benchmarks/release.sh
DB="pushgate_nodes_bench_$$"
create_database "$DB"
trap 'kill $(jobs -p) 2>/dev/null || true; drop_database "$DB"; rm -rf "$WORK"' EXIT
URL="${POSTGRES_URL%/*}/$DB"
# One fleet, one enrolment secret on every node.
SECRET="nodes-bench-$$"

node() { # name provider-port devices-port admin-port -> settings
  echo --set "data_dir=$WORK/$1" --set store.backend=postgres --set "store.postgres.url=$URL" \
    --set "store.postgres.node_id=$1" --set provider.tls.enabled=false --set "provider.h2c.port=$2" \
    --set channels.tls.enabled=false --set channels.h2c.enabled=false \
    --set "devices.port=$3" --set devices.tls.enabled=false --set "admin.port=$4" --set log.level=warning \
    --set provider.rate.device_token.per_second=0 --set provider.rate.team.per_second=0 \
    --set devices.reload_seconds=0 --set "devices.enrolment_secret=$SECRET"
}
read -r -a A <<< "$(node node-a 23198 23199 23201)"
read -r -a B <<< "$(node node-b 24198 24199 24201)"
mkdir -p "$WORK/node-a" "$WORK/node-b"
(cd "$WORK/node-a" && "$PG" keys generate --team-id TEAM123456 --key-id KEY1234567 --topic com.example.app "${A[@]}" >/dev/null)
cp "$WORK/node-a/provider-keys.yaml" "$WORK/node-b/"
JWT=$("$PG" keys token --key "$WORK/node-a/AuthKey_KEY1234567.p8" --team-id TEAM123456 --key-id KEY1234567)

"$PG" serve "${A[@]}" 2> "$WORK/node-a.log" &
wait_ready $! 23201 "$WORK/node-a.log"
"$PG" serve "${B[@]}" 2> "$WORK/node-b.log" &
wait_ready $! 24201 "$WORK/node-b.log"

# The devices register on node B, which owns them.
"$PG" simulate --port 24199 --devices "$DEVICES" --profile default --apps com.example.app --tokens-file "$WORK/tokens.txt" \
  --enrolment-secret "$SECRET" --duration $((4 * (DURATION + WARMUP) + 120)) > "$WORK/simulate.log" 2>&1 &
wait_tokens $! "$WORK/tokens.txt" "$WORK/simulate.log"
sleep 1  # node A hears of the last tokens

printf '{"aps":{"alert":{"title":"Bench","body":"an alert for a device on the other node"}}}' > "$WORK/body.json"
HEADERS=(-H "authorization: bearer $JWT" -H "apns-topic: com.example.app" -H "apns-push-type: alert" -H "apns-priority: 10")
# shellcheck source=Benchmarks/h2load-run.sh
source Benchmarks/h2load-run.sh
taskset() { shift 2; "$@"; }  # h2load-run.sh pins h2load to core 1; here nothing is pinned

counters() { curl -sf "http://127.0.0.1:$1/v1/counters" | python3 -c '
import json, sys
c = json.load(sys.stdin)
h = c["hub"]
print(h["routedOut"], h["routedIn"], h["delivered"], c["acceptToDeviceAckMicroseconds"]["p99"] / 1000)'; }

echo
echo "Two nodes on one PostgreSQL — $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores"
echo "$DEVICES simulated devices connected to node B (their owner); alerts, h2load $SHAPE, ${DURATION}s after ${WARMUP}s warm-up"
echo
echo "| POSTed to | requests/s | p50 ms | p99 ms | 200s / answered | routed (A out / B in) | delivered by B |"
echo "|---|---|---|---|---|---|---|"
for target in node-b node-a; do
  port=$([ $target = node-a ] && echo 23198 || echo 24198)
  sed "s#^\([0-9a-f]*\) .*#http://127.0.0.1:$port/3/device/\1#" "$WORK/tokens.txt" > "$WORK/uris-$target.txt"
  a=$(counters 23201) && b=$(counters 24201) || fail "cannot read the nodes' counters"
  read -r out_a _ _ _ <<< "$a"
  read -r _ in_b delivered_b _ <<< "$b"
  result=$(run "$target" "$WORK/uris-$target.txt" "$SHAPE")
  read -r rps p50 p99 ok n <<< "$result"
  a=$(counters 23201) && b=$(counters 24201) || fail "cannot read the nodes' counters"
  read -r out_a2 _ _ _ <<< "$a"
  read -r _ in_b2 delivered_b2 _ <<< "$b"
  [ "$ok" -gt 0 ] && [ $((delivered_b2 - delivered_b)) -gt 0 ] || fail "$target: $ok pushes answered 200, $((delivered_b2 - delivered_b)) delivered"
  label=$([ $target = node-a ] && echo "node A (routed to B)" || echo "node B (the owner)")
  echo "| $label | $rps | $p50 | $p99 | $ok / $n | $((out_a2 - out_a)) / $((in_b2 - in_b)) | $((delivered_b2 - delivered_b)) |"
done
